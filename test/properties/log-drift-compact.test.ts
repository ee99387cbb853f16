// Issue 34, sliding logs that do not drift in the compact tier: a steady key at one request per
// P ms, below its log's limit, behind a flood that pushes it out of the `Map` tier into the
// compact tier before each of its requests, against an uncapped store fed the same requests.
// The real log admits every request; the capped store must too (its record a bound of the
// key's own log, re-encoded at every request). Two shapes drifted on 2b03fce:
// (a) a log inside a packed composite (`[fixed-window 100/1 s, sliding-log 8/3 s]`, one 16-byte
//     slot, each member 26 bits): 384/200/200/111/111 of 1,000 refused at P = 500…2900 ms;
//     `[fixed-window 100/min, sliding-log 30/min]` every 6 s: 250 refused (237 with the grid
//     alone: ten or more live entries outgrew its unary code and piled up at the newest).
// (b) a bare one-word log with 13 or more live entries (limit 40 used at a third, 40/3 s every
//     250 ms): 180–240 of 1,000 refused.
// Seeded (SLUICE_SEED, printed): the seed jitters each period by up to 5% and the flood's size.
import { type AlgorithmSpec, type BanPolicy, createLimiter, ManualClock, MemoryStore } from "sluice";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 3434);
const T0 = Date.UTC(2026, 11, 7, 12);
const STEPS = 1_000;

/** Requests of the steady key refused by the capped store (the uncapped one admits them all). */
function refusals(specs: AlgorithmSpec | AlgorithmSpec[], P: number, seed: number, ban?: BanPolicy): number {
  const next = mulberry32(seed);
  const clock = new ManualClock(T0 + Math.floor(next() * 10_000));
  const options = ban === undefined ? {} : { ban };
  const capped = createLimiter(specs, { clock, store: new MemoryStore({ maxKeys: 10 }), ...options });
  const exact = createLimiter(specs, { clock, store: new MemoryStore(), ...options });
  let refused = 0;
  let f = 0;
  for (let i = 0; i < STEPS; i++) {
    clock.advance(Math.round(P * (0.95 + next() * 0.05)));
    // 30–40 one-shot keys, three requests each: the steady key is pushed out of the Map tier.
    const flood = 30 + Math.floor(next() * 10);
    for (let k = 0; k < flood; k++) {
      const key = `flood-${f++}`;
      for (let c = 0; c < 3; c++) capped.tryAcquire(key);
    }
    expect(exact.tryAcquire("steady").allowed).toBe(true);
    if (!capped.tryAcquire("steady").allowed) refused++;
  }
  return refused;
}

describe(`a steady key below its log's limit is not refused in the compact tier (seed ${SEED})`, () => {
  const pair: AlgorithmSpec[] = [
    { algorithm: "fixed-window", limit: 100, windowMs: 1000 },
    { algorithm: "sliding-log", limit: 8, windowMs: 3000 },
  ];
  for (const P of [500, 1000, 1500, 2000, 2900]) {
    it(`(a) [fixed-window 100/1 s, sliding-log 8/3 s] every ${P} ms: none of ${STEPS} refused`, () => {
      expect(refusals(pair, P, SEED + P)).toBe(0);
    });
  }
  it("(a) a sliding log 8/3 s with a ban (a one-member packed composite) every 500 ms: none refused", () => {
    const ban = { after: 3, withinMs: 60_000, forMs: 60_000 };
    expect(refusals({ algorithm: "sliding-log", limit: 8, windowMs: 3000 }, 500, SEED, ban)).toBe(0);
  });
  it("(a) three members, the log among them, every 1000 ms: none refused", () => {
    const three: AlgorithmSpec[] = [...pair, { algorithm: "gcra", limit: 100, periodMs: 1000 }];
    expect(refusals(three, 1000, SEED)).toBe(0);
  });
  it("(a) [fixed-window 100/min, sliding-log 30/min] every 6 s (a third of the log's limit): none refused", () => {
    const minute: AlgorithmSpec[] = [
      { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
      { algorithm: "sliding-log", limit: 30, windowMs: 60_000 },
    ];
    expect(refusals(minute, 6000, SEED)).toBe(0);
  });
  for (const P of [250, 300]) {
    it(`(b) a bare sliding log 40/3 s every ${P} ms (10–12 of 40 in any window): none refused`, () => {
      expect(refusals({ algorithm: "sliding-log", limit: 40, windowMs: 3000 }, P, SEED + P)).toBe(0);
    });
  }

  // Still drifting on fb57ad4 (452/258, 432/261, 371 and 360 of 1,000 refused with this file's
  // trace): the log's live entries did not fit its share of the packed word (or the bare word's
  // counts code), and fell back to the count at the newest. Known, not fixed yet (it.fails: each
  // flips to a failure once its shape holds): the bare log now stays on the coarsest grid (the
  // wide counts code, dense-codec.ts: 182 refused), but a grid of W/2 or more over-counts a key
  // using three quarters of its limit by up to a cell's entries; the packed shares hold too few
  // bits for the logs' live entries (a 1-hour member's frame leaves a log 5 bits of code).
  const four: AlgorithmSpec[] = [
    ...pair,
    { algorithm: "gcra", limit: 100, periodMs: 1000 },
    { algorithm: "token-bucket", capacity: 100, refillPerSecond: 100 },
  ];
  for (const P of [500, 1000]) {
    it.fails(`(c) a log among four members every ${P} ms: at most 1% of ${STEPS} refused`, () => {
      expect(refusals(four, P, SEED + P)).toBeLessThanOrEqual(STEPS / 100);
    });
  }
  const hourly: AlgorithmSpec[] = [
    { algorithm: "fixed-window", limit: 10_000, windowMs: 3_600_000 },
    pair[1] as AlgorithmSpec,
  ];
  for (const P of [500, 1000]) {
    it.fails(`(c) a log beside a 1-hour member every ${P} ms: at most 1% of ${STEPS} refused`, () => {
      expect(refusals(hourly, P, SEED + P)).toBeLessThanOrEqual(STEPS / 100);
    });
  }
  it.fails("(c) [gcra 100/min, sliding-log 30/min] every 3 s (two thirds of the log's limit): at most 1% refused", () => {
    const specs: AlgorithmSpec[] = [
      { algorithm: "gcra", limit: 100, periodMs: 60_000 },
      { algorithm: "sliding-log", limit: 30, windowMs: 60_000 },
    ];
    expect(refusals(specs, 3000, SEED)).toBeLessThanOrEqual(STEPS / 100);
  });
  it.fails("(c) a bare sliding log 40/3 s every 100 ms (three quarters of its limit): at most 1% refused", () => {
    expect(refusals({ algorithm: "sliding-log", limit: 40, windowMs: 3000 }, 100, SEED)).toBeLessThanOrEqual(
      STEPS / 100,
    );
  });
});
