// Processes using sluice exit when their own work is done (issue 35, point 12), beyond the
// ioredis / node-redis deny-cache cases of test/redis/process-exit.test.ts: each client a
// RedisStore accepts (ioredis, iovalkey, node-redis, valkey-glide) under a limiter that is
// denied, a concurrency lease (held, refused, renewed, released) and createThrottle (its fleet
// queue on Redis), each quitting its own client without store.close() or throttle.close().
// Each case runs test/server/script-exit-child.mjs, a script written from the docs, in a real
// `node`; the bound only says "it exited" (a hung script never does), it is not a timing.
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { runExitChild } from "../support/exit-child.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const CHILD = fileURLToPath(new URL("./script-exit-child.mjs", import.meta.url));
const runChild = (args: string[]) => runExitChild(CHILD, args);

const redis = await standaloneRedis("script exit");
const CLIENTS = ["ioredis", "iovalkey", "node-redis", "glide"] as const;

describe.skipIf(redis === undefined)("a script that quits its own client exits, whatever it used", () => {
  beforeAll(() => ensureBuilt());

  for (const client of CLIENTS) {
    it.concurrent(`${client}: a limiter denied, then the client quit`, { timeout: 30_000 }, async () => {
      const out = await runChild([client, "deny", redis?.url ?? "", uniquePrefix("exit-deny")]);
      expect(out.code, out.stderr).toBe(0);
      // Clients sluice can duplicate hold the deny cache's subscription (the case that hung);
      // on valkey-glide the store makes none.
      expect(out.report).toMatchObject({ cached: client === "glide" ? 0 : 1 });
    });

    it.concurrent(`${client}: a lease held, refused, renewed and released, then the client quit`, {
      timeout: 30_000,
    }, async () => {
      const out = await runChild([client, "lease", redis?.url ?? "", uniquePrefix("exit-lease")]);
      expect(out.code, out.stderr).toBe(0);
      expect(out.report).toEqual({ held: true, refused: true, renewed: true, after: true });
    });

    it.concurrent(`${client}: createThrottle ran its jobs (one dropped by maxWaitMs), then the client quit`, {
      timeout: 30_000,
    }, async () => {
      const out = await runChild([client, "throttle", redis?.url ?? "", uniquePrefix("exit-throttle")]);
      // It exits with 0: a job's promise settles once its store calls (the lease's release, the
      // expired job's cancel) are answered, so none is written after the client's QUIT (which
      // made iovalkey's own quit() reject with "Connection is closed": exit 1 in 3 of 6 loaded
      // runs; test/throttle/settle-after-release.test.ts).
      expect(out.code, out.stderr).toBe(0);
      const { stats } = out.report as { stats: { queued: number; running: number; expired: number } };
      expect(stats).toMatchObject({ queued: 0, running: 0 });
      expect(stats.expired, JSON.stringify(out.report)).toBeGreaterThanOrEqual(1);
    });
  }

  // Seen once at load ~30: the fleet queue (its subscription) opened only after every job had
  // expired and settled, so the tickets' enqueue and cancels were written after the script's
  // QUIT, and ioredis's quit() rejected ("Connection is closed", exit 1). The child holds the
  // opening until quit() was called, deterministically, and exits with 3 if any command was
  // written after QUIT. Tickets cancelled before they left are now never sent. Since the queue on
  // a standalone server opens without waiting for its subscription (a process's first tickets go
  // at once: docs/throttle.md), the jobs may also be granted before QUIT and run: either way every
  // job settles, and nothing is written after QUIT (exit 3 if anything is).
  for (const client of ["ioredis", "iovalkey"] as const) {
    it.concurrent(`${client}: jobs that expired before the fleet queue opened write nothing after QUIT`, {
      timeout: 30_000,
    }, async () => {
      const out = await runChild([client, "throttle", redis?.url ?? "", uniquePrefix("exit-late-open"), "late-open"]);
      expect(out.code, out.stderr).toBe(0);
      const report = out.report as { outcomes: string[]; stats: { queued: number; running: number; expired: number } };
      expect(report.stats).toMatchObject({ queued: 0, running: 0 });
      expect(report.outcomes).toHaveLength(3);
      // Each job either ran or expired (rejected): none is left pending.
      expect(report.outcomes.filter((o) => o === "rejected")).toHaveLength(report.stats.expired);
    });
  }
});
