// Processes that are done exit (issue 35): a script that made a RedisStore on its own client,
// got a denial (so the deny cache subscribed on a duplicate connection) and quit its client
// without store.close() used to hang forever. Each case spawns a real `node` script on the
// built package (test/redis/exit-child.mjs) and asserts that it exits by itself: the bound is
// generous (EXIT_BOUND_MS) and only says "it exited", it is not a timing.
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { type ChildExit, runExitChild } from "../support/exit-child.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { clusterRedis, startSentinel, type TestSentinel } from "../support/redis-topologies.ts";

const CHILD = fileURLToPath(new URL("./exit-child.mjs", import.meta.url));
const runChild = (args: string[]) => runExitChild(CHILD, args);

/** The child exited with 0, its deny cache holding a denial (`subscribed`) or none. */
function expectExited(outcome: ChildExit, subscribed: boolean): void {
  expect(outcome.code, outcome.stderr).toBe(0);
  // The case is about the duplicate connection: it must have been made (a cached denial).
  const { cached } = outcome.report as { cached: number };
  if (subscribed) expect(cached).toBeGreaterThan(0);
  else expect(cached).toBe(0);
}

const redis = await standaloneRedis("process exit");

describe.skipIf(redis === undefined)("a script on its own client exits when done (standalone)", () => {
  beforeAll(() => {
    ensureBuilt();
  });
  for (const client of ["ioredis", "node-redis"]) {
    it(`${client}: a denial, then client.quit() without store.close()`, async () => {
      expectExited(await runChild([client, "deny", "standalone", redis?.url ?? "", uniquePrefix("exit")]), true);
    });
    it(`${client}: one allowed check, then client.quit() without store.close()`, async () => {
      expectExited(await runChild([client, "once", "standalone", redis?.url ?? "", uniquePrefix("exit")]), false);
    });
    it(`${client}: a denial, then store.close() and client.quit()`, async () => {
      expectExited(await runChild([client, "close", "standalone", redis?.url ?? "", uniquePrefix("exit")]), true);
    });
  }
});

const cluster = await clusterRedis("process exit (Cluster)");

describe.skipIf(cluster === undefined)("a script on its own client exits when done (Cluster)", () => {
  beforeAll(() => {
    ensureBuilt();
  });
  for (const client of ["ioredis", "node-redis"]) {
    it(`${client} Cluster: a denial, then client.quit() without store.close()`, async () => {
      const ports = (cluster?.ports ?? []).join(",");
      expectExited(await runChild([client, "deny", "cluster", ports, uniquePrefix("exit")]), true);
    });
  }
});

describe("a script on its own client exits when done (Sentinel)", () => {
  let sentinel: TestSentinel | undefined;
  beforeAll(async () => {
    ensureBuilt();
    sentinel = await startSentinel();
    return async () => {
      await sentinel?.dispose();
    };
  });
  it("ioredis via Sentinel: a denial, then client.quit() without store.close()", async (context) => {
    if (sentinel === undefined) return context.skip();
    const ports = sentinel.sentinelPorts.join(",");
    expectExited(await runChild(["ioredis", "deny", "sentinel", ports, uniquePrefix("exit")]), true);
  });
});
