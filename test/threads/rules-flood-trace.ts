// The trace both rules-flood tests replay (issue 34, "any number of rules"): 12 rules on one
// SharedMemoryStore made for `recordWords: 24`, each flooded by keys spending their whole limit
// within one window over ten passes, while 50 honest keys come back through every rule; an
// uncapped MemoryStore fed the honest keys' requests says which were honest.
import { type AlgorithmSpec, createLimiter, ManualClock, MemoryStore } from "sluice";
import { SharedMemoryStore, type SharedMemoryStoreOptions } from "sluice/threads";

/** One hour, the rules' window. */
export const H = 3_600_000;
/** Flooded rules. */
export const RULES = 12;
/** Each rule's limit. */
export const LIMIT = 10;
/** The two algorithms flooded. */
export const SPECS: AlgorithmSpec[] = [
  { algorithm: "fixed-window", limit: LIMIT, windowMs: H },
  { algorithm: "sliding-log", limit: LIMIT, windowMs: H },
];

/** What one run counted, and the store's figures at its end. */
export interface RulesFloodResult {
  asked: number;
  refused: number;
  escapes: number;
  stats: ReturnType<SharedMemoryStore["stats"]>;
}

/** Runs the trace with `scale` × 12,000 flood keys on a store of `options` (recordWords 24). */
export function runRulesFlood(spec: AlgorithmSpec, scale: number, options: SharedMemoryStoreOptions): RulesFloodResult {
  const clock = new ManualClock(1_800_000_000_000 - (1_800_000_000_000 % H) + 1000);
  const shared = new SharedMemoryStore({ recordWords: 24, ...options });
  const exact = new MemoryStore();
  const capped = Array.from({ length: RULES }, (_, r) => createLimiter(spec, { store: shared, clock, name: `r${r}` }));
  const oracle = Array.from({ length: RULES }, (_, r) => createLimiter(spec, { store: exact, clock, name: `r${r}` }));
  let asked = 0;
  let refused = 0;
  let escapes = 0;
  const keys = 12_000 * scale;
  const admitted = new Int32Array(keys);
  const visit = (i: number) => {
    for (let r = 0; r < RULES; r++) {
      const c = capped[r]?.tryAcquire(`user:${i}`);
      const u = oracle[r]?.tryAcquire(`user:${i}`);
      if (c?.allowed && !u?.allowed) escapes++;
      if (u?.allowed) {
        asked++;
        if (!c?.allowed) refused++;
      }
    }
  };
  for (let i = 0; i < 50; i++) visit(i);
  let step = 0;
  let cursor = 0;
  for (let pass = 0; pass < 10; pass++) {
    for (let k = 0; k < keys; k++) {
      // Each flood key spends its limit over the ten passes, all within one window: one
      // admitted past its limit escaped. The 50 honest keys come back over all ten passes.
      if (capped[k % RULES]?.tryAcquire(`flood:${k}`).allowed && ++admitted[k]! > LIMIT) escapes++;
      if (++step % (343 * scale) === 0 && cursor < 50 * 7) visit(cursor++ % 50);
      if (step % 2000 === 0) clock.advance(1);
    }
  }
  const stats = shared.stats();
  shared.close();
  return { asked, refused, escapes, stats };
}
