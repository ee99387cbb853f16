// Issue 34, restore is exact: a snapshot of a capped MemoryStore restored into a store of
// ANOTHER size (what SLUICE_STORE_SATURATED tells an operator to do: raise `maxKeys`, then
// `sluice serve --state` restores) gives each key back its own state. Before the fix a compact
// record was put back only into a tier of the saved size, else summarised into the saved (narrow)
// summary with no filter: maxKeys 200 → 20,000 refused 99,000 of 100,000 honest requests after
// the restore (test/attack on branch `attack`, finding 2).
//
// Per algorithm (and two composites) and per target (100× larger, half, uncapped): keys are
// visited in passes on a capped store, snapshotted, restored into the target, then visited
// again, beside an uncapped store fed the same trace (the oracle) and a twin of the capped
// store (same options and seed, never restarted). Asserted: no escape (restored ⊆ oracle), and
// after the restore no more honest refusals than the twin's plus 1% (what a restart may add),
// for returning keys and brand-new keys alike.

import { createLimiter, ManualClock, MemoryStore, type RuleSpec } from "sluice";
import { describe, expect, it } from "vitest";

const SEED = Number(process.env.SLUICE_SEED ?? 34_034);
const H = 3_600_000;
const KEYS = 2500;
const SMALL = 30;
const BEFORE = 2;
const AFTER = 3;
const NEW = 1000;

const SPECS: Array<[string, RuleSpec | RuleSpec[]]> = [
  ["fixed-window", { algorithm: "fixed-window", limit: 10, windowMs: H }],
  ["sliding-window", { algorithm: "sliding-window", limit: 10, windowMs: H }],
  ["token-bucket", { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 }],
  ["gcra", { algorithm: "gcra", limit: 10, periodMs: H }],
  ["leaky-bucket", { algorithm: "leaky-bucket", capacity: 10, leakPerSecond: 10 / 3600 }],
  ["sliding-log", { algorithm: "sliding-log", limit: 10, windowMs: H }],
  ["concurrency", { algorithm: "concurrency", limit: 10, leaseMs: H }],
  [
    "[fixed-window, gcra]",
    [
      { algorithm: "fixed-window", limit: 10, windowMs: H },
      { algorithm: "gcra", limit: 20, periodMs: H },
    ],
  ],
  [
    "[sliding-log, fixed-window]",
    [
      { algorithm: "sliding-log", limit: 10, windowMs: H },
      { algorithm: "fixed-window", limit: 20, windowMs: 2 * H },
    ],
  ],
  [
    "[token-bucket, sliding-window]",
    [
      { algorithm: "token-bucket", capacity: 10, refillPerSecond: 10 / 3600 },
      { algorithm: "sliding-window", limit: 20, windowMs: 2 * H },
    ],
  ],
];

/** Name, the saved store's maxKeys, the target's (undefined: uncapped). */
const TARGETS: Array<[string, number, number | undefined]> = [
  // Past capacity: many keys only in the compact tier or the summary.
  ["100× larger", SMALL, SMALL * 100],
  ["uncapped", SMALL, undefined],
  // Every key in the Map tier of the saved store; the smaller one holds them in its compact tier.
  ["10× smaller", KEYS, KEYS / 10],
];

describe(`restore into a store of another size (seed ${SEED})`, () => {
  for (const [name, spec] of SPECS) {
    for (const [target, from, maxKeys] of TARGETS) {
      it(`${name} → ${target}`, { timeout: 60_000 }, () => {
        const clock = new ManualClock(1_800_000_000_000 - (1_800_000_000_000 % (2 * H)) + 1000);
        const make = (store: MemoryStore) => createLimiter(spec as RuleSpec, { store, clock, name: "api" });
        const saved = new MemoryStore({ maxKeys: from, seed: SEED });
        const twin = make(new MemoryStore({ maxKeys: from, seed: SEED }));
        const oracle = make(new MemoryStore());
        let capped = make(saved);
        const tally = { asked: 0, refused: 0, twinRefused: 0, escapes: 0 };
        const visit = (key: string) => {
          const c = capped.tryAcquire(key).allowed;
          const w = twin.tryAcquire(key).allowed;
          const u = oracle.tryAcquire(key).allowed;
          if (c && !u) tally.escapes++;
          if (u) {
            tally.asked++;
            if (!c) tally.refused++;
            if (!w) tally.twinRefused++;
          }
        };
        const pass = () => {
          for (let k = 0; k < KEYS; k++) {
            visit(`user:${k}`);
            if (k % 500 === 0) clock.advance(1);
          }
        };
        for (let p = 0; p < BEFORE; p++) pass();
        const restored = new MemoryStore({ ...(maxKeys === undefined ? {} : { maxKeys }), seed: SEED ^ 1 });
        restored.restore(saved.snapshot());
        capped = make(restored);
        tally.asked = 0;
        tally.refused = 0;
        tally.twinRefused = 0;
        for (let p = 0; p < AFTER; p++) pass();
        const returning = { ...tally };
        for (let k = 0; k < NEW; k++) visit(`new:${k}`);
        const fresh = {
          asked: tally.asked - returning.asked,
          refused: tally.refused - returning.refused,
          twin: tally.twinRefused - returning.twinRefused,
        };
        console.log(
          `${name} → ${target}: returning refused ${returning.refused}/${returning.asked} (twin ${returning.twinRefused}), new ${fresh.refused}/${fresh.asked} (twin ${fresh.twin}), escapes ${tally.escapes} (seed ${SEED})`,
        );
        expect(tally.escapes).toBe(0);
        expect(returning.refused).toBeLessThanOrEqual(returning.twinRefused + 0.01 * returning.asked);
        expect(fresh.refused).toBeLessThanOrEqual(fresh.twin + 0.01 * fresh.asked);
      });
    }
  }
});
