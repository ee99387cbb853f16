// Attack on the fleet queue (issue 32): a process killed with SIGKILL holding a slot, with tickets
// waiting at the head of the queue. Its slot must go to the others after leaseMs; its dead
// tickets must never be granted (a grant to a dead process holds a slot for another leaseMs).
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { attackChild, sleep } from "./attack-support.ts";

const redis = await standaloneRedis("throttle fleet queue: attack, dead owner");

describe.skipIf(redis === undefined)(
  "fleet queue attack: SIGKILL of a process with a lease and waiting tickets",
  () => {
    const client = new Redis(redis?.url ?? "redis://127.0.0.1:6379", { lazyConnect: true });
    beforeAll(() => ensureBuilt());
    afterAll(() => client.disconnect());

    /** The queue's hash of key "default" under `prefix` (fields t:, g:, o:). */
    async function queueHash(prefix: string): Promise<Record<string, string>> {
      const keys = (await client.keys(`${prefix}*`)).filter((k) => k.endsWith("Hdefault"));
      expect(keys).toHaveLength(1);
      return client.hgetall(keys[0] as string);
    }

    // Cause: the owner TTL equals leaseMs (create-throttle.ts: min(leaseMs, 10 s)) and lease
    // renewals do not touch the owner, so a dead owner whose last heartbeat came after its last
    // renewal outlives its leases: queue.lua's pump grants its dead tickets new leases.
    it("the dead process's tickets get no grant after its leases expire", { timeout: 60_000 }, async () => {
      const prefix = uniquePrefix("attack-dead");
      const options = { concurrency: 1, leaseMs: 3000 };
      const a = await attackChild(redis?.url ?? "", prefix, options);
      const b = await attackChild(redis?.url ?? "", prefix, options);
      try {
        a.send("schedule a1");
        await a.until(/^S a1 /m);
        // Half a renewal period later: A's heartbeats (every leaseMs / 3 while tickets wait) then
        // fall between its lease renewals (every leaseMs / 3 from a1's start).
        await sleep(1500);
        a.send("schedule a2;schedule a3;schedule a4");
        await sleep(200);
        b.send("schedule b1");
        const before = await queueHash(prefix);
        const grantA = Object.keys(before).find((f) => f.startsWith("g:")) as string;
        const ownerA = grantA.slice(2).split(".")[0] as string;
        // Kill A right after a heartbeat: it then counts as alive for a full leaseMs.
        const beat = before[`o:${ownerA}`];
        for (let i = 0; i < 400 && (await queueHash(prefix))[`o:${ownerA}`] === beat; i++) await sleep(5);
        a.proc.kill("SIGKILL");
        const [sec, micro] = await client.time();
        const killedAt = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
        await a.exited;
        // B keeps the queue busy (each enqueue grants what fits), as a live fleet does.
        for (let i = 0; i < 40; i++) {
          b.send(`schedule bb${i} 9`);
          await sleep(100);
        }
        const after = await queueHash(prefix);
        const deadGrants = Object.entries(after).filter(
          ([f, v]) => f.startsWith(`g:${ownerA}.`) && Number(v.split(" ")[1]) > killedAt,
        );
        expect(deadGrants).toEqual([]);
        await b.until(/^S b1 /m, 2000);
      } finally {
        a.proc.kill("SIGKILL");
        b.proc.stdin?.end();
        b.proc.kill("SIGKILL");
        await Promise.all([a.exited, b.exited]);
      }
    });
  },
);
