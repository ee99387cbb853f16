// F2 (issue 32): a process's first jobs reach the Redis queue when they are scheduled, not once
// its subscriber connection has opened. Process A holds the one slot of `concurrency: 1`;
// process B, whose subscriber connection opens slowly (a proxy holds it 1 s; a loaded machine's took
// 100-130 ms), schedules b1; 150 ms later A schedules a2 and lets its slot go. b1 was
// scheduled first, so it starts first. Before the fix B's ticket waited for its subscription and
// reached Redis after a2 (a2 started first); now it is enqueued at once, and its grant, made
// while nobody could hear its channel, is kept in Redis until B's subscription opens
// (queue.lua 'p' and 'a', src/stores/redis/fleet-queue.ts). An order, not a duration, is asserted.
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { readyChild } from "./ready-child.ts";

const redis = await standaloneRedis("throttle first burst");
const CHILD = fileURLToPath(new URL("./first-burst-child.mjs", import.meta.url));

/** The start instants a child printed, by job name. */
function starts(out: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of out.split("\n")) {
    const [kind, name, at] = line.split(" ");
    if (kind === "S") m.set(name as string, Number(at));
  }
  return m;
}

describe.skipIf(redis === undefined)("a process's first jobs keep their place on Redis", () => {
  beforeAll(() => ensureBuilt());

  it("a job scheduled first starts first, though its process's subscriber opens late", async () => {
    const prefix = uniquePrefix("first-burst");
    const url = redis?.url ?? "";
    const a = await readyChild(CHILD, [url, prefix, "A", "0"]);
    const b = await readyChild(CHILD, [url, prefix, "B", "1000"]);
    b.proc.stdin?.write("b1\n");
    await new Promise<void>((resolve) => {
      const seen = () => (b.text().includes("scheduled\n") ? resolve() : b.proc.stdout?.once("data", seen));
      seen();
    });
    // a2 is scheduled 150 ms after b1 (b1's first call has its own set-up: a few ms), well
    // before b1's process would have subscribed.
    await new Promise((resolve) => setTimeout(resolve, 150));
    a.proc.stdin?.write("a2\n");
    const [outA, outB] = await Promise.all([a.output, b.output]);
    const b1 = starts(outB).get("b1");
    const a2 = starts(outA).get("a2");
    console.log(`first-burst: b1 started at ${b1}, a2 at ${a2}`);
    expect(b1).toBeDefined();
    expect(a2).toBeDefined();
    expect(b1 as number).toBeLessThan(a2 as number);
  });
});
