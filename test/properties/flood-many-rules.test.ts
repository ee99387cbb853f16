// Many rules flooded at once past the compact tier (issue 34, "any number of rules"): every rule
// gets a sliver of the one summary budget (a few cells a row), so summed cells read "full" after
// a few dozen one-request keys. 700 fixed-window rules flooded at once refused 12% of returning
// keys' requests at full size (maxKeys 10,000), 500 rules 2.5% of returning and 2.9% of new keys'
// (bench/memory.mjs --shapes fixed-window:5000:1:700). Scaled down: maxKeys 100 (a compact tier
// of 9,368 slots), R rules each flooded with one-request keys (3× what the compact tier holds,
// together), 25 returning keys per rule asking at each fifth of the flood (7,500 records for 300
// rules), N brand-new keys after it. Before max-joined cells and read-back keys kept as compact
// bounds: 300 fixed-window rules refused 41.7% of returning and 1.8% of new keys' requests; after,
// 0% and 0.006%. RULES_* override the sizes. Seeded differential (SLUICE_SEED, printed): every decision of the
// capped store beside an uncapped one fed the same trace, both directions: no escape (capped ⊆
// uncapped), ≤ 1% of the returning and of the new keys' admitted requests refused.
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
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
const MAX_KEYS = Number(process.env.RULES_MAX_KEYS ?? 100);
const GOOD = Number(process.env.RULES_GOOD ?? 25);
const NEW = 60;

interface Tally {
  returning: number;
  returningRefused: number;
  fresh: number;
  freshRefused: number;
  escapes: number;
}

/** `rules` rules of `specs` in turn, each flooded with `perRule` one-request keys. */
function run(specs: AlgorithmSpec[], rules: number, perRule: number): [Tally, ReturnType<MemoryStore["stats"]>] {
  const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
  const bind = (service: RateLimiterService) => {
    for (let r = 0; r < rules; r++) service.addRule(`r${r}`, specs[(r + SEED) % specs.length] as AlgorithmSpec);
    return service;
  };
  const store = new MemoryStore({ maxKeys: MAX_KEYS, seed: SEED });
  const capped = bind(new RateLimiterService({ clock, store }));
  const free = bind(new RateLimiterService({ clock }));
  const tally: Tally = { returning: 0, returningRefused: 0, fresh: 0, freshRefused: 0, escapes: 0 };
  const both = (rule: string, key: string): [boolean, boolean] => [
    (capped.check(rule, key) as Decision).allowed,
    (free.check(rule, key) as Decision).allowed,
  ];
  const ask = (key: string, kind: "returning" | "fresh") => {
    for (let r = 0; r < rules; r++) {
      const [got, want] = both(`r${r}`, key);
      if (want) tally[kind]++;
      if (want && !got) tally[`${kind}Refused`]++;
      if (got && !want) tally.escapes++;
    }
  };
  const step = perRule / 5;
  for (let k = 0; k < perRule; k++) {
    if (k % step === 0) for (let g = 0; g < GOOD; g++) ask(`user:${g}`, "returning");
    for (let r = 0; r < rules; r++) {
      const [got, want] = both(`r${r}`, `bot:${k}`);
      if (got && !want) tally.escapes++;
    }
    if (k % 64 === 0) clock.advance(1);
  }
  for (let i = 0; i < NEW; i++) ask(`new:${i}`, "fresh");
  return [tally, store.stats()];
}

const CASES: Array<[string, AlgorithmSpec[], number, number]> = [
  [
    "300 fixed-window rules",
    SPECS.slice(0, 1),
    Number(process.env.RULES_FW ?? 300),
    Number(process.env.RULES_FW_KEYS ?? 100),
  ],
  [
    "200 rules of every algorithm",
    SPECS,
    Number(process.env.RULES_ALL ?? 200),
    Number(process.env.RULES_ALL_KEYS ?? 100),
  ],
];

describe(`many rules flooded at once past maxKeys ${MAX_KEYS} (seed ${SEED})`, () => {
  for (const [name, specs, rules, perRule] of CASES) {
    it(`${name} × ${perRule} one-request keys: no escape, ≤ 1% of returning and of new keys' requests refused`, () => {
      const [t, s] = run(specs, rules, perRule);
      console.log(
        `${name}: returning refused ${t.returningRefused} of ${t.returning}, new ${t.freshRefused} of ${t.fresh}, ${t.escapes} escapes; compact ${s.compactKeys}/${s.compactCapacity}, summarised ${s.summarised}, filter ${s.filterKeys} keys, error bound ${s.summaryErrorBound.toExponential(1)} (seed ${SEED})`,
      );
      expect(t.escapes).toBe(0);
      expect(t.returningRefused).toBeLessThanOrEqual(t.returning / 100);
      expect(t.freshRefused).toBeLessThanOrEqual(t.fresh / 100);
      expect(s.compactBytes + s.sketchBytes + s.filterBytes).toBeLessThanOrEqual(s.maxBytes);
    }, 180_000);
  }
});
