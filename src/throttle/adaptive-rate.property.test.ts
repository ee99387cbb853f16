// The adaptive rate under random parameters and upstreams (seeded: fast-check runs from
// SLUICE_SEED and prints the seed and path of a failure). Two "processes" (two AdaptiveRate
// instances on one MemoryStore, taking turns) spend a fixed window of L units a second as fast
// as it lets them; an upstream admits `capacity` requests a second and answers the rest 429,
// and its first 429 of a second cuts the shared factor and pauses the fleet for the rest of
// that second (as the store's block does). Every second:
// - the factor each process uses stays within [floor, 1], and no window starts more than L;
// - it converges: once settled, the requests a window sends stay between the cut level of the
//   upstream's capacity and just above it (the AIMD sawtooth), not L;
// - it recovers: once the upstream takes everything, the full rate is back within
//   (1 - floor) / recoverPerSecond seconds, and stays.
import fc from "fast-check";
import { createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { runs } from "../../test/support/seed.ts";
import type { AdaptiveParams } from "./adaptive-rate.ts";
import { AdaptiveRate } from "./adaptive-rate-store.ts";

const T0 = Date.UTC(2026, 11, 7);
const L = 40;

const scenario = fc
  .record({
    cut: fc.double({ min: 0.3, max: 0.8, noNaN: true }),
    recoverPerSecond: fc.double({ min: 0.02, max: 0.2, noNaN: true }),
    floor: fc.double({ min: 0.05, max: 0.4, noNaN: true }),
    refreshMs: fc.constantFrom(1, 500, 1000),
    capacityShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map((s) => ({ ...s, capacity: Math.floor(L * (s.floor + 0.1 + (0.85 - s.floor) * s.capacityShare)) }));

describe("adaptive rate: bounds, convergence, recovery", () => {
  it("two processes sharing the factor settle under the upstream's limit and recover after it", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const params: AdaptiveParams = {
          cut: s.cut,
          recoverPerSecond: s.recoverPerSecond,
          floor: s.floor,
          refreshMs: s.refreshMs,
        };
        const clock = new ManualClock(T0);
        const store = new MemoryStore();
        const processes = [0, 1].map(() => {
          const adaptive = new AdaptiveRate(store, "p", clock, params, L);
          const limiter = adaptive.wrap(
            createLimiter({ algorithm: "fixed-window", limit: L, windowMs: 1000 }, { store, clock, name: "rate" }),
          );
          return { adaptive, limiter };
        });
        /** One second: both processes send until the window refuses; the upstream takes `capacity`. */
        const second = (capacity: number) => {
          let sent = 0;
          for (let turn = 0; ; turn++) {
            const p = processes[turn % 2] as (typeof processes)[number];
            const f = p.adaptive.factor("k");
            expect(f).toBeGreaterThanOrEqual(s.floor - 1e-9);
            expect(f).toBeLessThanOrEqual(1);
            if (!(p.limiter.tryAcquire("k") as { allowed: boolean }).allowed) break;
            sent++;
            // The 429 pauses the key for the fleet (the rest of this window): one cut per pause.
            if (sent > capacity) {
              void p.adaptive.cut("k", 1000);
              break;
            }
          }
          expect(sent).toBeLessThanOrEqual(L);
          clock.advance(1000);
          return sent;
        };
        const settleFor = Math.ceil(2 / s.recoverPerSecond) + 10;
        for (let i = 0; i < settleFor; i++) second(s.capacity);
        const settled = Array.from({ length: 60 }, () => second(s.capacity));
        const least = Math.min(...settled);
        const most = Math.max(...settled);
        // At the floor the throttle still sends floor × L, even to an upstream that takes less.
        const low = Math.max(Math.floor(s.floor * L), Math.floor(s.cut * s.capacity) - 2);
        const high = s.capacity + 1;
        expect(least).toBeGreaterThanOrEqual(Math.min(low, s.capacity));
        expect(most).toBeLessThanOrEqual(Math.max(high, Math.ceil(s.floor * L) + 1));
        expect(most).toBeLessThan(L); // it did adapt: the configured rate would send L
        // The upstream now takes everything: the full rate returns in time and stays.
        const back = Math.ceil((1 - s.floor) / s.recoverPerSecond) + 2;
        const after = Array.from({ length: back + 5 }, () => second(L));
        expect(after.slice(back)).toEqual([L, L, L, L, L]);
      }),
      { numRuns: runs(60) },
    );
  });

  it("a rate of burst 1 (bottleneck's minTime) adapts too: its interval stretches, and comes back", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const params: AdaptiveParams = {
          cut: s.cut,
          recoverPerSecond: s.recoverPerSecond,
          floor: s.floor,
          refreshMs: s.refreshMs,
        };
        const clock = new ManualClock(T0);
        const store = new MemoryStore();
        // One unit at most at once (maxCost 1): what a job takes past it is a penalty.
        const processes = [0, 1].map(() => {
          const adaptive = new AdaptiveRate(store, "p", clock, params, 1);
          const limiter = adaptive.wrap(
            createLimiter({ algorithm: "gcra", limit: L, periodMs: 1000, burst: 1 }, { store, clock, name: "rate" }),
          );
          return { adaptive, limiter };
        });
        /** One second: the processes take turns sending as soon as the rate lets them. */
        const second = (capacity: number) => {
          const end = clock.now() + 1000;
          let sent = 0;
          for (let turn = 0; clock.now() < end; turn++) {
            const p = processes[turn % 2] as (typeof processes)[number];
            const f = p.adaptive.factor("k");
            expect(f).toBeGreaterThanOrEqual(s.floor - 1e-9);
            expect(f).toBeLessThanOrEqual(1);
            const d = p.limiter.tryAcquire("k") as { allowed: boolean; retryAfterMs: number };
            if (!d.allowed) {
              clock.advance(Math.max(1, Math.min(Math.ceil(d.retryAfterMs), end - clock.now())));
              continue;
            }
            sent++;
            if (sent > capacity) {
              // The 429 pauses the fleet for the rest of the second: one cut per pause.
              void p.adaptive.cut("k", 1000);
              break;
            }
          }
          expect(sent).toBeLessThanOrEqual(L);
          if (clock.now() < end) clock.advance(end - clock.now());
          return sent;
        };
        const settleFor = Math.ceil(2 / s.recoverPerSecond) + 10;
        for (let i = 0; i < settleFor; i++) second(s.capacity);
        const settled = Array.from({ length: 60 }, () => second(s.capacity));
        const most = Math.max(...settled);
        const least = Math.min(...settled);
        // Before: every second sent capacity + 1 and got its 429 (the configured interval, whatever
        // the factor). Adapted, the sawtooth has seconds under the upstream's limit, unless a 429
        // every second is where it settles (cut each second, recovering recoverPerSecond: the
        // factor's fixed point recoverPerSecond / (1 - cut), or the floor, sends more than that).
        const settlesAt = Math.max(s.floor, s.recoverPerSecond / (1 - s.cut));
        if (L * settlesAt < 0.8 * s.capacity) expect(settled.some((n) => n <= s.capacity)).toBe(true);
        expect(most).toBeLessThan(L);
        expect(least).toBeGreaterThanOrEqual(Math.min(Math.floor(s.floor * L) - 1, s.capacity));
        expect(most).toBeLessThanOrEqual(Math.max(s.capacity + 1, Math.ceil(s.floor * L) + 1));
        const back = Math.ceil((1 - s.floor) / s.recoverPerSecond) + 2;
        const after = Array.from({ length: back + 5 }, () => second(L));
        expect(after.slice(back).every((n) => n >= L - 1)).toBe(true);
      }),
      { numRuns: runs(30) },
    );
  });
});
