// Attack on the fleet queue (issue 32): a process whose tickets were dropped as dead while its
// event loop was stalled longer than its owner TTL (min(leaseMs, 10 s)), and which schedules a
// new job as soon as it wakes, never gets its dropped jobs back: they wait forever, no error.
import { beforeAll, describe, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { attackChild, sleep } from "./attack-support.ts";

const redis = await standaloneRedis("throttle fleet queue: attack, owner revived");

describe.skipIf(redis === undefined)("fleet queue attack: a stalled owner revived by a new ticket", () => {
  beforeAll(() => ensureBuilt());

  // Cause: queue.lua's enqueue op calls touch() and ignores that the owner was unknown (its
  // tickets dropped at the head as dead), so the next heartbeat answers "known" and fleet-link.ts
  // never sends the dropped tickets again.
  it("a job queued before the stall still runs after it", { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix("attack-revive");
    const options = { concurrency: 1, leaseMs: 600 };
    const b = await attackChild(redis?.url ?? "", prefix, options);
    const a = await attackChild(redis?.url ?? "", prefix, options);
    try {
      b.send("schedule b1");
      await b.until(/^S b1 /m);
      a.send("schedule a2"); // waits behind b1's slot: its ticket heads the fleet's queue
      await sleep(300);
      // A's event loop stalls 2 s (> its 600 ms owner TTL), then it schedules one more job.
      a.send("block 2000;schedule a3");
      await sleep(1200);
      b.send("end b1"); // b1's release grants what fits: A's ticket, now dead, leaves the queue
      await a.until(/^S a3 /m);
      a.send("end a3");
      await a.until(/^S a2 /m, 6000); // the heartbeat (every 200 ms) would have sent it again
      a.send("end a2");
      await a.until(/^R a2 \d+ ok$/m);
    } finally {
      a.proc.stdin?.end();
      b.proc.stdin?.end();
      await Promise.all([a.exited, b.exited]);
    }
  });
});
