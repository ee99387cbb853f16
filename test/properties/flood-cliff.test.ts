// One-shot floods past the compact tier's capacity (issue 34, cause 3): once a flood summarised
// some hundreds of thousands of keys, every cell was live and every never-seen key was read
// back over-counted (1,500,000 keys past `maxKeys: 10_000` refused 4% of new keys' first
// requests, 3,000,000 keys 44%). Scaled down to run in seconds: `maxKeys: 300` (a compact tier
// of 20,000 slots at the default budget), a flood of 60,000 one-request keys (3× what the tier
// holds) in one window, with a snapshot and restore in the middle; every algorithm.
// Against an uncapped store fed the returning and brand-new keys' requests (keys are
// independent): ≤ 1% of their requests and of the flood's first requests refused, no key past
// its limit, the tiers within `maxBytes`. Seeded (SLUICE_SEED), printed. SLUICE_FLOOD_SCALE
// multiplies the flood (bench/memory.mjs --shapes runs the full sizes).
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SCALE = Number(process.env.SLUICE_FLOOD_SCALE ?? 1);
const HOUR = 3_600_000;
const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: 10, windowMs: HOUR },
  { algorithm: "sliding-window", limit: 10, windowMs: HOUR },
  { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
  { algorithm: "gcra", limit: 10, periodMs: HOUR },
  { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 3600 },
  { algorithm: "sliding-log", limit: 10, windowMs: HOUR },
  { algorithm: "concurrency", limit: 10, leaseMs: HOUR },
];
const MAX_KEYS = 300;
const FLOOD = Math.round(60_000 * SCALE);
const RETURNING = 100;
const NEW = 2_000;

describe(`a one-shot flood of ${FLOOD} keys past maxKeys ${MAX_KEYS}, with a restart in the middle (seed ${SEED})`, () => {
  for (const spec of SPECS) {
    it(`${spec.algorithm}: ≤ 1% honest refusals, no key past its limit, the tiers within maxBytes`, () => {
      const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
      let store = new MemoryStore({ maxKeys: MAX_KEYS, seed: SEED });
      let capped = new RateLimiterService({ clock, store }).addRule("r", spec);
      const free = new RateLimiterService({ clock }).addRule("r", spec);
      const admitted = new Uint8Array(FLOOD);
      const tally = { honest: 0, refused: 0, escapes: 0, first: 0 };
      const ask = (key: string) => {
        const want = (free.check("r", key) as Decision).allowed;
        const got = (capped.check("r", key) as Decision).allowed;
        if (want) tally.honest++;
        if (want && !got) tally.refused++;
        if (got && !want) tally.escapes++;
      };
      const step = FLOOD / 5;
      for (let k = 0; k < FLOOD; k++) {
        if (k % step === 0) for (let g = 0; g < RETURNING; g++) ask(`user:${g}`);
        if (k === FLOOD / 2) {
          const text = store.snapshot(clock.now());
          store = new MemoryStore({ maxKeys: MAX_KEYS });
          store.restore(text);
          capped = new RateLimiterService({ clock, store }).addRule("r", spec);
        }
        const d = capped.check("r", `bot:${k}`) as Decision;
        if (d.allowed) admitted[k] = 1;
        else tally.first++;
        if (k % 4096 === 0) clock.advance(1);
      }
      // Flood keys come back for their whole limit and one more: none passes it.
      let over = 0;
      for (let k = 0; k < FLOOD; k += 97) {
        let n = admitted[k] as number;
        for (let r = 0; r < 10; r++) if ((capped.check("r", `bot:${k}`) as Decision).allowed) n++;
        if (n > 10) over++;
      }
      for (let i = 0; i < NEW; i++) ask(`new:${i}`);
      const s = store.stats();
      console.log(
        `cliff ${spec.algorithm}: honest refused ${tally.refused} of ${tally.honest}, flood first requests refused ${tally.first} of ${FLOOD}, ${tally.escapes} escapes, ${over} keys past the limit; compact ${s.compactKeys}/${s.compactCapacity}, filter ${s.filterKeys} keys in ${s.filterBytes} B, summary error bound ${s.summaryErrorBound.toExponential(1)} (seed ${SEED})`,
      );
      expect(tally.escapes).toBe(0);
      expect(over).toBe(0);
      expect(tally.refused).toBeLessThanOrEqual(tally.honest / 100);
      expect(tally.first).toBeLessThanOrEqual(FLOOD / 100);
      expect(s.compactBytes + s.sketchBytes + s.filterBytes).toBeLessThanOrEqual(s.maxBytes);
    }, 60_000);
  }
});

// Many rules at once (issue 34, "any number of rules"): R rules of every algorithm in turn on one
// store, each flooded with one-shot keys, while G returning keys per rule come back at each fifth
// of the flood and N brand-new keys per rule arrive after it, with a restart in the middle.
// The returning keys of all rules together are many times what the `Map` tier holds, so they
// live in the compact tier between visits: each must survive there while the flood churns
// through (before the compact tier protected keys that came back, every visit was a fresh
// chance to be pushed into a saturated summary, and 6–40% of their requests were refused).
// Against an uncapped store fed the same trace: no escapes, ≤ 1% honest refusals.
const RULES = Math.round(Number(process.env.SLUICE_FLOOD_RULES ?? 24));
const PER_RULE = Math.round(2_500 * SCALE);
const GOOD = 250;
const FRESH = 50;

describe(`${RULES} rules flooded at once with ${PER_RULE} keys each past maxKeys ${MAX_KEYS}, restart in the middle (seed ${SEED})`, () => {
  it("≤ 1% honest refusals, no escapes, the tiers within maxBytes", () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
    const specs = Array.from({ length: RULES }, (_, r) => SPECS[(r + SEED) % SPECS.length] as AlgorithmSpec);
    const bind = (service: RateLimiterService) => {
      for (const [r, spec] of specs.entries()) service.addRule(`r${r}`, spec);
      return service;
    };
    let store = new MemoryStore({ maxKeys: MAX_KEYS, seed: SEED });
    let capped = bind(new RateLimiterService({ clock, store }));
    const free = bind(new RateLimiterService({ clock }));
    const tally = { returning: 0, returningRefused: 0, fresh: 0, freshRefused: 0, escapes: 0 };
    const ask = (key: string, kind: "returning" | "fresh") => {
      for (let r = 0; r < RULES; r++) {
        const want = (free.check(`r${r}`, key) as Decision).allowed;
        const got = (capped.check(`r${r}`, key) as Decision).allowed;
        if (want) tally[kind]++;
        if (want && !got) tally[`${kind}Refused`]++;
        if (got && !want) tally.escapes++;
      }
    };
    const step = PER_RULE / 5;
    for (let k = 0; k < PER_RULE; k++) {
      if (k % step === 0) for (let g = 0; g < GOOD; g++) ask(`user:${g}`, "returning");
      if (k === PER_RULE / 2) {
        const text = store.snapshot(clock.now());
        store = new MemoryStore({ maxKeys: MAX_KEYS });
        store.restore(text);
        capped = bind(new RateLimiterService({ clock, store }));
      }
      // Flood keys are checked on both stores too: one the capped store admits, the uncapped refuses, is an escape.
      for (let r = 0; r < RULES; r++) {
        const key = `bot:${k}`;
        const got = (capped.check(`r${r}`, key) as Decision).allowed;
        if (got && !(free.check(`r${r}`, key) as Decision).allowed) tally.escapes++;
      }
      if (k % 512 === 0) clock.advance(1);
    }
    for (let i = 0; i < FRESH; i++) ask(`new:${i}`, "fresh");
    const s = store.stats();
    console.log(
      `many rules: returning refused ${tally.returningRefused} of ${tally.returning}, new ${tally.freshRefused} of ${tally.fresh}, ${tally.escapes} escapes; compact ${s.compactKeys}/${s.compactCapacity}, filter ${s.filterKeys} keys, summary error bound ${s.summaryErrorBound.toExponential(1)} (seed ${SEED})`,
    );
    expect(tally.escapes).toBe(0);
    expect(tally.returningRefused).toBeLessThanOrEqual(tally.returning / 100);
    expect(tally.freshRefused).toBeLessThanOrEqual(tally.fresh / 100);
    expect(s.compactBytes + s.sketchBytes + s.filterBytes).toBeLessThanOrEqual(s.maxBytes);
  }, 60_000);
});
