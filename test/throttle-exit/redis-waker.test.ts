// A Redis fleet member whose jobs are done exits even when the store had told it to wake another
// process's head, and it quit its client without `throttle.close()` (issue 32; the outside
// attack's finding 2: 1-3 of 5 processes per run stayed alive for good). Its wake-up was a ref'd
// timer whose pump failed on the quit client and re-armed itself every 250 ms forever. Now a
// wake-up made for others' sake is unref'd and a client that has ended stops the retries; the
// other process's job still runs (its rescue call pumps the head the exited waker left).
// Real processes on the built package, real Redis; the bounds only say "it exited" / "it ran".
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { beforeAll, describe, expect, it } from "vitest";
import { createThrottle, systemClock } from "../../src/index.ts";
import type { RedisClientLike } from "../../src/stores/redis/index.ts";
import { RedisStore } from "../../src/stores/redis/redis-store.ts";
import { ensureBuilt } from "../cli/helpers.ts";
import { EXIT_BOUND_MS } from "../support/exit-child.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("a waker that quit its client exits");
const CHILD = fileURLToPath(new URL("./waker-child.mjs", import.meta.url));

/** The child's JSON lines as they come, and its exit ("hung" past the bound, then killed). */
function watch(child: ChildProcess): {
  line(match: (o: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  exit: Promise<number | null | "hung">;
} {
  const lines: Record<string, unknown>[] = [];
  const waiters: Array<() => void> = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      lines.push(JSON.parse(buffer.slice(0, i)) as Record<string, unknown>);
      buffer = buffer.slice(i + 1);
      for (const w of waiters.splice(0)) w();
    }
  });
  const exit = new Promise<number | null | "hung">((resolve) => {
    child.on("exit", (code) => resolve(code));
  });
  return {
    exit,
    line: (match) =>
      new Promise((resolve, reject) => {
        const look = () => {
          const found = lines.find(match);
          if (found !== undefined) return resolve(found);
          waiters.push(look);
        };
        void exit.then(() => setTimeout(() => reject(new Error("the child exited before the line")), 100));
        look();
      }),
  };
}

/**
 * Runs the child in `mode`; the test's own throttle queues a job behind the child's second while
 * it waits. Resolves with the child's exit (at the bound after its quit), its lines, and whether
 * the test's job ran.
 */
async function run(mode: "exit" | "stay") {
  const prefix = uniquePrefix(`exit32-waker-${mode}`);
  const child = spawn(process.execPath, [CHILD, redis?.url ?? "", prefix, mode], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const seen = watch(child);
  const client = new Redis(redis?.url ?? "");
  const throttle = createThrottle({
    name: "exit32-waker",
    store: new RedisStore({ client: client as unknown as RedisClientLike, prefix }),
    clock: systemClock,
    rate: { algorithm: "gcra", limit: 1, periodMs: 5000, burst: 1 },
    concurrency: 4,
    leaseMs: 6000,
  });
  throttle.on("error", () => {});
  try {
    expect(await seen.line((o) => "waiting" in o)).toEqual({ waiting: 1 });
    // Queued behind the child's waiting job, well before its due instant (5 s after the first).
    await new Promise((resolve) => setTimeout(resolve, 800));
    const ours = throttle.schedule(() => "ran", { key: "api" });
    await seen.line((o) => o.quit === true);
    const exit = await Promise.race([
      seen.exit,
      new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), EXIT_BOUND_MS)),
    ]);
    if (exit === "hung") child.kill("SIGKILL");
    const errors = mode === "stay" && exit !== "hung" ? await seen.line((o) => "errorsAfterQuit" in o) : undefined;
    // The other process's job runs though the waker is gone (a rescue call every 9 s here, 10 s after its enqueue).
    const ran = await Promise.race([ours, new Promise((resolve) => setTimeout(() => resolve("not run"), 25_000))]);
    return { exit, errors, ran };
  } finally {
    child.kill("SIGKILL");
    await throttle.close();
    await client.quit();
  }
}

describe
  .skipIf(redis === undefined)
  .concurrent("a Redis fleet member told to wake another's head, quitting its client", () => {
    beforeAll(() => ensureBuilt());

    it("exits by itself once its jobs are done, and the other process's job still runs", {
      timeout: 60_000,
    }, async () => {
      const { exit, ran } = await run("exit");
      expect({ exit, ran }).toEqual({ exit: 0, ran: "ran" });
    });

    it("stops retrying its wake-up once its client has ended (one error, not one every 250 ms)", {
      timeout: 60_000,
    }, async () => {
      const { exit, errors, ran } = await run("stay");
      expect(exit).toBe(0);
      expect(errors?.errorsAfterQuit).toBeLessThanOrEqual(1);
      expect(ran).toBe("ran");
    });
  });
