/**
 * The conformance kit's scripted cases: each algorithm's checks and peeks, refunds (with and
 * without receipts), resets, bans, composites, tiers, spec changes, rate-limiter-flexible's
 * calls, and two seeded traces mixing them. Instants are ms after the case's epoch; expected
 * answers come from the reference model (oracle.ts), never from the code under test.
 */
import type { AlgorithmSpec } from "../algorithms/specs.ts";
import { mulberry32 } from "../core/seeded-random.ts";
import type { Script, Step } from "./script.ts";
import type { ConformanceRule } from "./subject.ts";

/** One rule per algorithm, with inexact quotients (gcra's 333.3… ms, a rate in tenths). */
export const ALGORITHM_RULES: Record<string, AlgorithmSpec> = {
  "fixed-window": { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
  "sliding-log": { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
  "sliding-window": { algorithm: "sliding-window", limit: 4, windowMs: 1000 },
  "token-bucket": { algorithm: "token-bucket", capacity: 3, refillPerSecond: 2.5 },
  gcra: { algorithm: "gcra", limit: 3, periodMs: 1000, burst: 2 },
  "leaky-bucket": { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 2 },
};

const limitOf = (spec: AlgorithmSpec): number =>
  "capacity" in spec ? spec.capacity : spec.algorithm === "gcra" ? (spec.burst ?? spec.limit) : spec.limit;

const rulesOf = (names: string[]): Record<string, ConformanceRule> =>
  Object.fromEntries(names.map((n) => [n, { spec: ALGORITHM_RULES[n] as AlgorithmSpec }]));

const times = (n: number, step: Step): Step[] => Array.from({ length: n }, () => ({ ...step }));

/** Checks and peeks of one algorithm: filling, denial, cost past the limit, windows and refill. */
function algorithmScript(name: string): Script {
  const limit = limitOf(ALGORITHM_RULES[name] as AlgorithmSpec);
  const r = { rule: name };
  return {
    name: `${name}: checks and peeks at fixed instants`,
    rules: rulesOf([name]),
    steps: [
      { t: 0, do: "peek", ...r },
      ...times(limit + 1, { t: 0, do: "check", ...r }),
      { t: 0, do: "check", ...r, cost: limit + 1 },
      { t: 0, do: "check", ...r, key: "other" },
      { t: 1, do: "peek", ...r, cost: 2 },
      { t: 250, do: "check", ...r },
      { t: 400, do: "check", ...r },
      { t: 400, do: "peek", ...r },
      { t: 999, do: "check", ...r },
      { t: 1000, do: "check", ...r },
      { t: 1001, do: "check", ...r, cost: 2 },
      { t: 1500, do: "peek", ...r, cost: limit },
      ...times(3, { t: 2100, do: "check", ...r }),
      { t: 2101, do: "check", ...r, key: "other", cost: limit },
      { t: 5000, do: "check", ...r, cost: limit },
      { t: 5000, do: "check", ...r },
      { t: 9000, do: "peek", ...r },
    ],
  };
}

const ALL = Object.keys(ALGORITHM_RULES);
const each = (fn: (rule: string) => Step[]): Step[] => ALL.flatMap(fn);

const REFUNDS: Script = {
  name: "refunds without receipts: newest units first, never above the limit, nothing for a fresh key",
  rules: rulesOf(ALL),
  steps: [
    ...each((rule) => [
      { t: 0, do: "refund", rule, key: "fresh" },
      { t: 0, do: "check", rule, key: "fresh" },
      ...times(3, { t: 10, do: "check", rule }),
      { t: 20, do: "refund", rule },
      { t: 20, do: "check", rule },
      { t: 300, do: "refund", rule, cost: 2 },
      { t: 300, do: "check", rule },
      { t: 1200, do: "refund", rule },
      { t: 1200, do: "check", rule, cost: 2 },
      { t: 1300, do: "refund", rule, cost: 9 },
      { t: 1300, do: "peek", rule },
    ]),
  ],
};

const RECEIPTS: Script = {
  name: "refunds with receipts: only what that check took and still counts",
  rules: rulesOf(ALL),
  steps: [
    ...each((rule) => [
      { t: 100, do: "check", rule },
      { t: 900, do: "check", rule },
      { t: 900, do: "refund", rule, receipt: 900 },
      { t: 900, do: "check", rule },
      { t: 1001, do: "check", rule },
      { t: 1002, do: "refund", rule, receipt: 100 },
      { t: 1002, do: "check", rule },
      { t: 1400, do: "refund", rule, receipt: 900 },
      { t: 1400, do: "refund", rule, receipt: 1001, cost: 2 },
      { t: 1400, do: "peek", rule },
      { t: 1500, do: "refund", rule, key: "fresh", receipt: 1400 },
      { t: 3500, do: "refund", rule, receipt: 1001 },
      { t: 3500, do: "peek", rule },
    ]),
  ],
};

const RESETS: Script = {
  name: "resets: the key's next decisions are a fresh key's, in every member and tier",
  rules: {
    ...rulesOf(ALL),
    pair: { spec: [ALGORITHM_RULES["sliding-log"] as AlgorithmSpec, ALGORITHM_RULES.gcra as AlgorithmSpec] },
    tiered: {
      spec: ALGORITHM_RULES["fixed-window"] as AlgorithmSpec,
      tiers: { pro: { algorithm: "token-bucket", capacity: 5, refillPerSecond: 1 } },
    },
  },
  steps: [
    ...[...ALL, "pair"].flatMap((rule): Step[] => [
      ...times(4, { t: 0, do: "check", rule }),
      { t: 0, do: "check", rule, key: "kept" },
      { t: 10, do: "reset", rule },
      { t: 10, do: "peek", rule },
      { t: 10, do: "check", rule },
      { t: 10, do: "peek", rule, key: "kept" },
      { t: 20, do: "reset", rule, key: "never-seen" },
      { t: 20, do: "check", rule, key: "never-seen" },
    ]),
    ...times(4, { t: 0, do: "check", rule: "tiered" }),
    ...times(6, { t: 0, do: "check", rule: "tiered", tier: "pro" }),
    { t: 30, do: "reset", rule: "tiered" },
    { t: 30, do: "check", rule: "tiered" },
    { t: 30, do: "check", rule: "tiered", tier: "pro" },
  ],
};

const BAN = { after: 2, withinMs: 1000, forMs: 5000 };
const BANS: Script = {
  name: "bans: repeated denials ban the key; banned answers; the ban ends",
  rules: {
    banned: { spec: { algorithm: "fixed-window", limit: 2, windowMs: 1000 }, ban: BAN },
    "banned-pair": {
      spec: [
        { algorithm: "sliding-window", limit: 2, windowMs: 1000 },
        { algorithm: "token-bucket", capacity: 3, refillPerSecond: 1 },
      ],
      ban: { after: 3, withinMs: 2000, forMs: 1500 },
    },
  },
  steps: ["banned", "banned-pair"].flatMap((rule): Step[] => [
    ...times(2, { t: 0, do: "check", rule }),
    { t: 0, do: "check", rule },
    { t: 0, do: "peek", rule },
    { t: 999, do: "check", rule },
    { t: 1000, do: "check", rule },
    { t: 1000, do: "check", rule, key: "slow" },
    { t: 1200, do: "check", rule, key: "slow", cost: 9 },
    { t: 1500, do: "peek", rule },
    { t: 2000, do: "check", rule },
    { t: 4999, do: "check", rule },
    { t: 5999, do: "check", rule },
    { t: 6000, do: "check", rule },
    { t: 6000, do: "check", rule },
    { t: 6001, do: "check", rule },
    { t: 8000, do: "peek", rule },
  ]),
};

const COMPOSITES: Script = {
  name: "composites: all or nothing, the strictest figures, parts in spec order",
  rules: {
    logs: {
      spec: [
        { algorithm: "sliding-log", limit: 3, windowMs: 1000 },
        { algorithm: "fixed-window", limit: 5, windowMs: 10_000 },
      ],
    },
    mixed: {
      spec: [
        { algorithm: "token-bucket", capacity: 4, refillPerSecond: 0.5 },
        { algorithm: "gcra", limit: 2, periodMs: 700 },
        { algorithm: "leaky-bucket", capacity: 3, leakPerSecond: 1.5 },
      ],
    },
  },
  steps: ["logs", "mixed"].flatMap((rule): Step[] => [
    ...times(4, { t: 0, do: "check", rule }),
    { t: 0, do: "check", rule, cost: 4 },
    { t: 0, do: "peek", rule, cost: 2 },
    { t: 400, do: "check", rule },
    { t: 1000, do: "check", rule, cost: 2 },
    { t: 1000, do: "check", rule },
    { t: 2000, do: "check", rule, cost: 3 },
    { t: 2001, do: "peek", rule },
    { t: 3000, do: "check", rule },
    { t: 11_000, do: "check", rule, cost: 3 },
  ]),
};

const SPEC_CHANGES: Script = {
  name: "spec changes (updateRule): a new limit keeps the state, a new shape starts fresh",
  rules: {
    ...rulesOf(ALL),
    pair: { spec: [ALGORITHM_RULES["sliding-log"] as AlgorithmSpec, ALGORITHM_RULES["fixed-window"] as AlgorithmSpec] },
  },
  steps: [
    ...["fixed-window", "sliding-log", "sliding-window"].flatMap((rule): Step[] => [
      ...times(3, { t: 0, do: "check", rule }),
      { t: 100, do: "update", rule, spec: { ...(ALGORITHM_RULES[rule] as AlgorithmSpec), limit: 5 } as AlgorithmSpec },
      { t: 100, do: "check", rule },
      { t: 100, do: "peek", rule },
      { t: 200, do: "update", rule, spec: { ...(ALGORITHM_RULES[rule] as AlgorithmSpec), limit: 2 } as AlgorithmSpec },
      { t: 200, do: "check", rule },
      {
        t: 300,
        do: "update",
        rule,
        spec: { ...(ALGORITHM_RULES[rule] as AlgorithmSpec), windowMs: 2000 } as AlgorithmSpec,
      },
      { t: 300, do: "check", rule },
      { t: 300, do: "peek", rule, cost: 3 },
    ]),
    ...times(2, { t: 0, do: "check", rule: "gcra" }),
    { t: 50, do: "update", rule: "gcra", spec: { algorithm: "gcra", limit: 6, periodMs: 1000, burst: 4 } },
    { t: 50, do: "check", rule: "gcra" },
    { t: 50, do: "peek", rule: "gcra" },
    ...times(3, { t: 0, do: "check", rule: "token-bucket" }),
    { t: 60, do: "update", rule: "token-bucket", spec: { algorithm: "gcra", limit: 3, periodMs: 1200 } },
    { t: 60, do: "check", rule: "token-bucket" },
    ...times(3, { t: 0, do: "check", rule: "pair" }),
    {
      t: 70,
      do: "update",
      rule: "pair",
      spec: [{ algorithm: "sliding-log", limit: 4, windowMs: 1000 }, ALGORITHM_RULES["fixed-window"] as AlgorithmSpec],
    },
    { t: 70, do: "check", rule: "pair" },
    { t: 80, do: "update", rule: "pair", spec: [ALGORITHM_RULES["sliding-log"] as AlgorithmSpec] },
    { t: 80, do: "check", rule: "pair" },
    { t: 90, do: "update", rule: "fixed-window", spec: ALGORITHM_RULES["fixed-window"] as AlgorithmSpec, ban: BAN },
    ...times(4, { t: 90, do: "check", rule: "fixed-window" }),
    {
      t: 91,
      do: "update",
      rule: "fixed-window",
      spec: ALGORITHM_RULES["fixed-window"] as AlgorithmSpec,
      ban: { ...BAN, forMs: 100 },
    },
    { t: 92, do: "check", rule: "fixed-window" },
    { t: 191, do: "check", rule: "fixed-window" },
  ],
};

const TIERS: Script = {
  name: "tiers: state per (rule, tier, key)",
  rules: {
    plan: {
      spec: { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
      tiers: {
        pro: { algorithm: "fixed-window", limit: 4, windowMs: 1000 },
        burst: [
          { algorithm: "gcra", limit: 10, periodMs: 1000, burst: 3 },
          { algorithm: "sliding-log", limit: 5, windowMs: 2000 },
        ],
      },
    },
  },
  steps: [
    ...times(3, { t: 0, do: "check", rule: "plan" }),
    ...times(5, { t: 0, do: "check", rule: "plan", tier: "pro" }),
    ...times(4, { t: 0, do: "check", rule: "plan", tier: "burst" }),
    { t: 500, do: "peek", rule: "plan", tier: "burst" },
    { t: 1000, do: "check", rule: "plan" },
    { t: 1000, do: "check", rule: "plan", tier: "pro", cost: 4 },
  ],
};

const FLEXIBLE: Script = {
  name: "rate-limiter-flexible's calls: penalty, get and block",
  rules: {
    ...rulesOf(ALL),
    pair: { spec: [ALGORITHM_RULES["sliding-window"] as AlgorithmSpec, ALGORITHM_RULES.gcra as AlgorithmSpec] },
    banned: { spec: { algorithm: "fixed-window", limit: 2, windowMs: 1000 }, ban: BAN },
  },
  steps: [
    ...[...ALL, "pair"].flatMap((rule): Step[] => [
      { t: 0, do: "get", rule },
      { t: 0, do: "check", rule },
      { t: 0, do: "get", rule },
      { t: 10, do: "penalty", rule, cost: 2 },
      { t: 10, do: "check", rule },
      { t: 20, do: "penalty", rule, key: "new", cost: 5 },
      { t: 20, do: "get", rule, key: "new" },
      { t: 700, do: "check", rule, key: "new" },
      { t: 3000, do: "check", rule, key: "new" },
      { t: 9000, do: "get", rule },
      { t: 9000, do: "get", rule, key: "new" },
    ]),
    { t: 0, do: "block", rule: "banned", ms: 3000 },
    { t: 0, do: "get", rule: "banned" },
    { t: 10, do: "check", rule: "banned" },
    { t: 2999, do: "peek", rule: "banned" },
    { t: 3000, do: "check", rule: "banned" },
    { t: 3000, do: "block", rule: "banned", ms: 10 },
    { t: 3010, do: "get", rule: "banned" },
    { t: 9000, do: "get", rule: "banned" },
  ],
};

const BLOCKS: Script = {
  name: "block(key, ms) without a ban: every algorithm and a composite",
  rules: {
    ...rulesOf(ALL),
    pair: { spec: [ALGORITHM_RULES["sliding-window"] as AlgorithmSpec, ALGORITHM_RULES.gcra as AlgorithmSpec] },
  },
  steps: [
    ...[...ALL, "pair"].flatMap((rule): Step[] => [
      { t: 0, do: "check", rule },
      { t: 0, do: "block", rule, ms: 3000 },
      { t: 10, do: "check", rule },
      { t: 10, do: "check", rule, key: "other" },
      { t: 20, do: "refund", rule },
      { t: 20, do: "penalty", rule, cost: 2 },
      { t: 2999, do: "get", rule },
      { t: 2999, do: "peek", rule, cost: 2 },
      { t: 3000, do: "get", rule },
      { t: 3000, do: "check", rule },
      { t: 3000, do: "block", rule, ms: 60_000 },
      { t: 3001, do: "block", rule, ms: 5 },
      { t: 3006, do: "check", rule },
      { t: 3006, do: "block", rule, ms: 100 },
      { t: 3010, do: "reset", rule },
      { t: 3010, do: "get", rule },
      { t: 3010, do: "check", rule },
    ]),
  ],
};

/**
 * A seeded trace over every algorithm, a composite and a banned rule: time moves forward by
 * 0–400 ms, three keys, costs up to past the limit. `everything` adds refunds (with receipts
 * of earlier checks), penalties and limit changes of the same shape.
 */
function trace(name: string, seed: number, length: number, everything: boolean): Script {
  const next = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const rules: Record<string, ConformanceRule> = {
    ...rulesOf(ALL),
    pair: { spec: [ALGORITHM_RULES["sliding-log"] as AlgorithmSpec, ALGORITHM_RULES["token-bucket"] as AlgorithmSpec] },
    banned: { spec: ALGORITHM_RULES["sliding-window"] as AlgorithmSpec, ban: { after: 2, withinMs: 600, forMs: 900 } },
  };
  const names = Object.keys(rules);
  const checks: number[] = [];
  const steps: Step[] = [];
  let t = 0;
  for (let i = 0; i < length; i++) {
    if (next() < 0.4) t += Math.floor(next() * 400);
    const target = { t, rule: pick(names), key: pick(["a", "b", "c"]) };
    const roll = next();
    const cost = next() < 0.8 ? 1 : 1 + Math.floor(next() * 5);
    if (!everything || roll < 0.6) {
      if (roll < 0.03) steps.push({ ...target, do: "reset" });
      else if (roll < 0.15) steps.push({ ...target, do: "peek", cost });
      else {
        steps.push({ ...target, do: "check", cost });
        checks.push(t);
      }
    } else if (roll < 0.75) {
      const receipt = next() < 0.5 && checks.length > 0 ? { receipt: pick(checks.slice(-20)) } : {};
      steps.push({ ...target, do: "refund", cost, ...receipt });
    } else if (roll < 0.85) {
      steps.push({ ...target, do: "penalty", cost });
    } else if (roll < 0.9 && ["fixed-window", "sliding-log", "sliding-window"].includes(target.rule)) {
      const spec = { ...(ALGORITHM_RULES[target.rule] as AlgorithmSpec), limit: 1 + Math.floor(next() * 6) };
      steps.push({ t, rule: target.rule, do: "update", spec: spec as AlgorithmSpec });
    } else if (roll > 0.96) {
      // A block on any rule, with a ban or not (src/core/block.ts).
      steps.push({ ...target, do: "block", ms: 200 * cost });
    } else {
      steps.push({ ...target, do: "check", cost });
      checks.push(t);
    }
  }
  return { name, rules, steps };
}

/** The concurrency rules (SPEC §16): leases alone, with a rate (all or nothing), with a ban. */
const LEASE_RULES: Record<string, ConformanceRule> = {
  lease: { spec: { algorithm: "concurrency", limit: 3, leaseMs: 1000 } },
  "lease-pair": {
    spec: [
      { algorithm: "concurrency", limit: 2, leaseMs: 1000 },
      { algorithm: "fixed-window", limit: 3, windowMs: 1000 },
    ],
  },
  "lease-banned": {
    spec: { algorithm: "concurrency", limit: 1, leaseMs: 1000 },
    ban: { after: 2, withinMs: 1000, forMs: 500 },
  },
};

const LEASES: Script = {
  name: "leases: in flight until released or leaseMs; release frees its receipt's leases once; renew moves them to now",
  rules: LEASE_RULES,
  steps: [
    ...times(4, { t: 0, do: "check", rule: "lease" }),
    { t: 0, do: "peek", rule: "lease" },
    { t: 100, do: "check", rule: "lease" },
    { t: 100, do: "release", rule: "lease", receipt: 0 },
    { t: 100, do: "check", rule: "lease" },
    { t: 100, do: "release", rule: "lease", receipt: 0, cost: 5 },
    { t: 200, do: "peek", rule: "lease", cost: 3 },
    { t: 200, do: "release", rule: "lease", receipt: 150 },
    { t: 300, do: "renew", rule: "lease", receipt: 100 },
    { t: 300, do: "renew", rule: "lease", receipt: 100 },
    { t: 1200, do: "peek", rule: "lease" },
    { t: 1200, do: "release", rule: "lease", receipt: 100 },
    { t: 1300, do: "renew", rule: "lease", receipt: 300 },
    { t: 1300, do: "release", rule: "lease", receipt: 300 },
    { t: 1300, do: "check", rule: "lease", cost: 2 },
    { t: 1400, do: "renew", rule: "lease", receipt: 1300, cost: 3 },
    { t: 1400, do: "renew", rule: "lease", receipt: 1300, cost: 2 },
    { t: 1350, do: "renew", rule: "lease", receipt: 1400 }, // a clock behind the newest lease: no time passed
    { t: 1400, do: "release", rule: "lease", receipt: 1400 },
    { t: 1400, do: "check", rule: "lease", cost: 4 },
    { t: 1500, do: "release", rule: "lease", key: "fresh", receipt: 0 },
    { t: 1500, do: "renew", rule: "lease", key: "fresh", receipt: 1500 },
    { t: 1500, do: "peek", rule: "lease", key: "fresh" },
    // With a rate: a refused composite holds no lease; lease calls leave the rate member alone.
    { t: 0, do: "check", rule: "lease-pair" },
    { t: 10, do: "check", rule: "lease-pair" },
    { t: 20, do: "check", rule: "lease-pair" },
    { t: 30, do: "release", rule: "lease-pair", receipt: 0 },
    { t: 40, do: "check", rule: "lease-pair" },
    { t: 50, do: "release", rule: "lease-pair", receipt: 10 },
    { t: 60, do: "check", rule: "lease-pair" },
    { t: 70, do: "renew", rule: "lease-pair", receipt: 40 },
    { t: 70, do: "peek", rule: "lease-pair" },
    { t: 1000, do: "check", rule: "lease-pair", cost: 2 },
    { t: 1069, do: "renew", rule: "lease-pair", receipt: 70 },
    { t: 1070, do: "peek", rule: "lease-pair" },
    // A banned key still releases (answered as banned); its leases are not renewed.
    { t: 0, do: "check", rule: "lease-banned" },
    { t: 10, do: "check", rule: "lease-banned" },
    { t: 20, do: "check", rule: "lease-banned" },
    { t: 30, do: "renew", rule: "lease-banned", receipt: 0 },
    { t: 40, do: "release", rule: "lease-banned", receipt: 0 },
    { t: 40, do: "peek", rule: "lease-banned" },
    { t: 520, do: "check", rule: "lease-banned" },
    { t: 600, do: "renew", rule: "lease-banned", receipt: 520 },
  ],
};

const LEASE_BLOCKS: Script = {
  name: "leases of a blocked key: released (answered as blocked), never renewed",
  rules: LEASE_RULES,
  steps: [
    ...times(2, { t: 0, do: "check", rule: "lease" }),
    { t: 10, do: "block", rule: "lease", ms: 300 },
    { t: 20, do: "renew", rule: "lease", receipt: 0 },
    { t: 30, do: "release", rule: "lease", receipt: 0 },
    { t: 30, do: "peek", rule: "lease" },
    { t: 310, do: "renew", rule: "lease", receipt: 0 },
    { t: 320, do: "release", rule: "lease", receipt: 310 },
    { t: 320, do: "get", rule: "lease" },
    { t: 0, do: "check", rule: "lease-banned" },
    { t: 10, do: "block", rule: "lease-banned", ms: 100 },
    { t: 20, do: "renew", rule: "lease-banned", receipt: 0 },
    { t: 110, do: "renew", rule: "lease-banned", receipt: 0 },
  ],
};

/**
 * A seeded trace of the lease rules: checks, peeks, releases and renewals naming receipts of
 * earlier steps (or none), resets, time moving 0–400 ms so that leases (1 s) expire.
 */
function leaseTrace(name: string, seed: number, length: number): Script {
  const next = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const names = Object.keys(LEASE_RULES);
  const instants: number[] = [];
  const steps: Step[] = [];
  let t = 0;
  for (let i = 0; i < length; i++) {
    if (next() < 0.4) t += Math.floor(next() * 400);
    const target = { t, rule: pick(names), key: pick(["a", "b"]) };
    const roll = next();
    const cost = next() < 0.85 ? 1 : 1 + Math.floor(next() * 3);
    const receipt = instants.length > 0 && next() < 0.9 ? pick(instants.slice(-12)) : t - Math.floor(next() * 50);
    if (roll < 0.02) steps.push({ ...target, do: "reset" });
    else if (roll < 0.12) steps.push({ ...target, do: "peek", cost });
    else if (roll < 0.5) {
      steps.push({ ...target, do: "check", cost });
      instants.push(t);
    } else if (roll < 0.8) steps.push({ ...target, do: "release", cost, receipt });
    else {
      steps.push({ ...target, do: "renew", cost, receipt });
      instants.push(t);
    }
  }
  return { name, rules: LEASE_RULES, steps };
}

/** Every scripted case, in the order the kit yields them. */
export function scripts(): Script[] {
  return [
    ...ALL.map(algorithmScript),
    REFUNDS,
    RECEIPTS,
    RESETS,
    BANS,
    COMPOSITES,
    TIERS,
    SPEC_CHANGES,
    FLEXIBLE,
    BLOCKS,
    trace("trace: checks, peeks and resets (seeded)", 20_261_201, 400, false),
    trace("trace: every call, refunds with receipts, penalties, limit changes (seeded)", 20_261_202, 400, true),
    LEASES,
    LEASE_BLOCKS,
    leaseTrace("trace: leases acquired, released, renewed and expiring (seeded)", 20_261_207, 500),
  ];
}
