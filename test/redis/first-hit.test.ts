// First-hit windows (anchor "first") on Redis: the Lua twin against the TypeScript step (run by
// the core's decideRule on plain records, test/support/redis-pure-store.ts) at the
// instants where the two could disagree: exactly at a window's end, 1 ms either side, fractional
// instants, and clocks stepping back before a window's start. (The general parity traces in
// parity.test.ts also cover these rules, but their random gaps rarely land on a boundary.)
import { createLimiter, type Decision, ManualClock, type RuleSpec } from "sluice";
import { RedisStore } from "sluice/redis";
import { describe, expect, it } from "vitest";
import { prng } from "../support/redis-parity.ts";
import { pureStore } from "../support/redis-pure-store.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("first-hit windows");

const W = 900;
const SPECS: Record<string, RuleSpec> = {
  single: { algorithm: "fixed-window", limit: 3, windowMs: W, anchor: "first" },
  composite: [
    { algorithm: "fixed-window", limit: 3, windowMs: W, anchor: "first" },
    { algorithm: "fixed-window", limit: 5, windowMs: 2 * W, anchor: "first" },
  ],
};
/** Gaps that land on window ends (W and 2W, ±1), inside them, and a fraction. */
const GAPS = [0, 0, 1, W - 1, W, W + 1, W / 2, 2 * W - 1, 2 * W, 0.5, 17];

describe.skipIf(redis === undefined)("first-hit windows: Redis = the TypeScript step at window boundaries", () => {
  const clients = useStandaloneClients(redis);

  for (const [name, spec] of Object.entries(SPECS)) {
    it(`${name}: seeded traces of checks, peeks and refunds decide alike`, async () => {
      let compared = 0;
      let boundaries = 0;
      for (let seed = 1; seed <= 4; seed++) {
        const random = prng(seed * 977);
        const clock = new ManualClock(1_800_000_000_000 + seed);
        // The oracle keeps every record, as Redis does (a MemoryStore drops a record once the
        // latest instant it saw makes it fresh, so a clock stepping back past that finds none).
        const memory = createLimiter(spec, { clock, store: pureStore(), name: "first" });
        const remote = createLimiter(spec, {
          clock,
          name: "first",
          store: new RedisStore({
            client: clients.io,
            prefix: uniquePrefix("first-hit"),
            expiryGraceMs: 600_000,
            denyCache: false,
          }),
        });
        for (let i = 0; i < 150; i++) {
          const r = random();
          if (r < 0.05) clock.set(clock.now() - Math.floor(random() * W));
          else clock.advance(GAPS[Math.floor(random() * GAPS.length)] as number);
          const key = random() < 0.7 ? "a" : "b";
          const cost = 1 + Math.floor(random() * 3);
          const a = random();
          const op = a < 0.15 ? "peek" : a < 0.25 ? "refund" : "tryAcquire";
          const expected = memory[op](key, cost) as Decision;
          const actual = await remote[op](key, cost);
          expect(actual, `seed ${seed}, event ${i}, ${op} t=${clock.now()} key ${key} cost ${cost}`).toEqual(expected);
          compared++;
          // A window ending exactly now: the next request opens a new one (resetMs a full window).
          if (op === "tryAcquire" && expected.allowed && expected.resetMs === W && expected.remaining < 3 - cost + 1) {
            boundaries++;
          }
        }
        memory.close();
        remote.close();
      }
      expect(compared).toBe(600);
      expect(boundaries).toBeGreaterThan(10);
    });
  }
});
