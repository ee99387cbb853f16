// Seeded differential fuzz of bans past maxKeys (docs/semantics.md §10, promise 1), replayed
// strictly: the uncapped MemoryStore takes exactly the capped store's admissions, and each check
// the capped store refuses is struck on it as a refusal (a check of a cost no member can ever
// admit: a denial, counted as a strike, consuming nothing). So the uncapped store holds the
// key's true state under the capped store's decisions and never diverges, and every check, peek
// or get the capped store admits is compared, of every key, all trace long (differential.test.ts
// stops comparing a key once the capped store refuses what the uncapped one admits). Striking
// every capped refusal is sound: a key the capped store keeps exact has the same record on both,
// and a key read back from the summary counts its strikes as a chain over the capped store's own
// refusals (core/ban.ts), banned whenever span counting over them bans it.
// Traces mix checks (cost 1-3), peeks, gets, refunds (with and without receipts), resets,
// penalties, blocks, `updateRule` of limits and of the ban's `after`/`forMs` (same shape) and
// `withinMs` (a new shape), restarts through a snapshot (MemoryStore), and floods of new keys
// that take strikes and bans of their own into the summary cells, on both capped stores:
// MemoryStore({ maxKeys }) and SharedMemoryStore (1-3 instances attached to one memory). The clock
// only moves forward (a clock stepping back: test/properties/clock-back-cap.test.ts). A failure
// prints its seed and the trace's last steps; STRICT_FIRST and STRICT_SEEDS run other seeds.
// It found: a penalised token bucket restored from a snapshot (seed 507), a penalised token
// bucket read back and refunded in the thread store (seed 2187), and a penalty on a read-back
// key of MemoryStore (seed 4431); each has a regression test beside its fix.
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService, StoreError } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { describe, expect, it } from "vitest";
import { compileRule } from "../../src/core/rule.ts";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { widthFor } from "../../src/stores/threads/codec.ts";
import { withLimit } from "./arbitraries.ts";

const SEEDS = Number(process.env.STRICT_SEEDS ?? 300);
const FIRST = Number(process.env.STRICT_FIRST ?? 1);
const T0 = 1_800_000_000_000;
/** A cost no member admits (every limit here is at most 5): a refusal that consumes nothing. */
const STRIKE = 1_000_000;

function specOf(rnd: () => number, limit: number, windowMs: number, kind: number): AlgorithmSpec {
  switch (kind) {
    case 0:
      return { algorithm: "fixed-window", limit, windowMs };
    case 1:
      return { algorithm: "sliding-log", limit, windowMs };
    case 2:
      return { algorithm: "sliding-window", limit, windowMs };
    case 3:
      return { algorithm: "token-bucket", capacity: limit, refillPerSecond: 1 + Math.floor(rnd() * 20) };
    case 4:
      return { algorithm: "gcra", limit, periodMs: limit * [10, 20, 50, 100, 250][Math.floor(rnd() * 5)]! };
    default:
      return {
        algorithm: "leaky-bucket",
        capacity: limit,
        leakPerSecond: [1, 2, 4, 5, 10, 20][Math.floor(rnd() * 6)]!,
      };
  }
}

type Ban = { after: number; withinMs: number; forMs: number };

interface Outcome {
  failure?: string;
  compared: number;
  approximate: number;
  /** Refusals the capped store answered as banned. */
  bannedCapped: number;
  /** Strikes the uncapped store answered as banned. */
  bannedFree: number;
}

/**
 * One seeded run on a capped `store`: a MemoryStore, or 1-3 SharedMemoryStore instances attached
 * to one memory (each call goes to one of them at random, as threads would).
 */
function run(seed: number, store: "memory" | "shared", withBan: boolean): Outcome {
  const rnd = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const windowMs = int(50, 2000);
  const specs: AlgorithmSpec[] = [specOf(rnd, int(1, 5), windowMs, int(0, 5))];
  if (rnd() < 0.35) specs.push(specOf(rnd, int(1, 5), int(50, 3000), int(0, 5)));
  let ban: Ban = { after: int(1, 4), withinMs: int(20, 3000), forMs: int(20, 6000) };
  const clock = new ManualClock(T0);
  const instances = store === "shared" ? int(1, 3) : 1;
  const stores: Array<MemoryStore | SharedMemoryStore> = [];
  const memoryOptions = {
    maxKeys: int(1, 6),
    maxBytes: [250, 600, 2000, 20_000][int(0, 3)] as number,
    sketchWidth: [1, 2, 4][int(0, 2)] as number,
    seed: int(0, 1000),
  };
  if (store === "memory") {
    stores.push(new MemoryStore(memoryOptions));
  } else {
    // recordWords what the rule takes at the largest limits its updates reach (5): records are as
    // wide as their rule (compact/shared-bucket.ts), so with 24 the few buckets held most keys and
    // few decisions were read back from the summary.
    const widest = compileRule(withLimit(specs, 5), withBan ? ban : undefined);
    const recordWords = widthFor(widest, 24);
    const owner = new SharedMemoryStore({ maxKeys: int(1, 4), summaryWidth: 64, recordWords, seed: int(0, 1000) });
    stores.push(owner);
    for (let i = 1; i < instances; i++) stores.push(SharedMemoryStore.attach(owner.handle));
  }
  const capped = stores.map((s) => new RateLimiterService({ clock, store: s }));
  const free = new RateLimiterService({ clock, store: new MemoryStore() });
  let current = specs;
  const options = () => (withBan ? { ban } : {});
  for (const c of capped) c.addRule("r", current, options());
  free.addRule("r", current, options());
  const keys = int(2, 5);
  const log: string[] = [];
  const out: Outcome = { compared: 0, approximate: 0, bannedCapped: 0, bannedFree: 0 };
  const receipts = new Map<string, Array<{ at: number; cost: number }>>();
  let flood = 0;
  let now = T0;
  const pick = () => capped[int(0, capped.length - 1)] as RateLimiterService;
  const fail = (what: string) => {
    out.failure = `seed ${seed} (${store}${withBan ? "" : ", no ban"}): ${what}\nspecs ${JSON.stringify(specs)}\n${log.slice(-60).join("\n")}`;
  };
  try {
    for (let step = 0; step < 160 && out.failure === undefined; step++) {
      const g = rnd();
      now += g < 0.5 ? int(0, 30) : g < 0.85 ? int(0, 600) : g < 0.97 ? int(0, 4000) : int(0, 15_000);
      clock.set(now);
      const key = `k${int(0, keys - 1)}`;
      const x = rnd();
      const c = pick();
      if (x < 0.45) {
        const cost = rnd() < 0.8 ? 1 : int(2, 3);
        const a = c.check("r", key, { cost }) as Decision;
        if (a.approximate) out.approximate++;
        if (a.banned) out.bannedCapped++;
        if (a.allowed) {
          const b = free.check("r", key, { cost }) as Decision;
          log.push(
            `t+${now - T0} check ${key} ${cost}: capped admits${a.approximate ? " (approx)" : ""}, free ${b.allowed ? "admits" : b.banned ? "BANNED" : "REFUSES"}`,
          );
          out.compared++;
          if (!b.allowed) fail(`step ${step}: check ${key} cost ${cost} admitted by the capped store only`);
          const list = receipts.get(key) ?? [];
          list.push({ at: a.at as number, cost });
          receipts.set(key, list);
        } else {
          const b = free.check("r", key, { cost: STRIKE }) as Decision;
          log.push(
            `t+${now - T0} check ${key} ${cost}: capped refuses${a.banned ? " (banned)" : ""}${a.approximate ? " (approx)" : ""}, struck on free${b.banned ? " (banned)" : ""}`,
          );
          if (b.allowed) throw new Error("a strike was admitted");
          if (b.banned) out.bannedFree++;
        }
      } else if (x < 0.52) {
        const a = c.peek("r", key) as Decision;
        if (a.allowed) {
          out.compared++;
          const b = free.peek("r", key) as Decision;
          log.push(`t+${now - T0} peek ${key}: capped admits, free ${b.allowed}`);
          if (!b.allowed) fail(`step ${step}: peek ${key} admitted by the capped store only`);
        }
      } else if (x < 0.56) {
        const a = c.get("r", key) as Decision | null;
        if (a === null || a.allowed) {
          const b = free.get("r", key) as Decision | null;
          log.push(
            `t+${now - T0} get ${key}: capped ${a === null ? "null" : "allows"}, free ${b === null ? "null" : b.allowed}`,
          );
          out.compared++;
          if (b !== null && !b.allowed) fail(`step ${step}: get ${key}: capped says one unit passes, free refuses`);
        }
      } else if (x < 0.62) {
        const cost = int(1, 3);
        c.refund("r", key, { cost });
        free.refund("r", key, { cost });
        log.push(`t+${now - T0} refund ${key} ${cost}`);
      } else if (x < 0.66) {
        const list = receipts.get(key) ?? [];
        const r = list[list.length - 1 - int(0, 3)];
        if (r !== undefined) {
          c.refund("r", key, r);
          free.refund("r", key, r);
          log.push(`t+${now - T0} refund ${key} receipt ${JSON.stringify(r)}`);
        }
      } else if (x < 0.69) {
        const cost = int(1, 3);
        c.penalty("r", key, { cost });
        free.penalty("r", key, { cost });
        log.push(`t+${now - T0} penalty ${key} ${cost}`);
      } else if (x < 0.71) {
        const ms = int(1, 3000);
        try {
          c.block("r", key, ms);
        } catch (error) {
          // Without a ban a block is kept beside the record, within the store's bounds: past
          // them the capped store refuses to take it (StoreError), and nothing changed.
          if (withBan || !(error instanceof StoreError)) throw error;
          log.push(`t+${now - T0} block ${key} ${ms}: refused by the capped store`);
          continue;
        }
        free.block("r", key, ms);
        log.push(`t+${now - T0} block ${key} ${ms}`);
      } else if (x < 0.73) {
        c.reset("r", key);
        free.reset("r", key);
        receipts.delete(key);
        log.push(`t+${now - T0} reset ${key}`);
      } else if (x < 0.75 && store === "memory") {
        // A restart: the capped store's snapshot restored into a new store (before or after binding).
        const text = (stores[0] as MemoryStore).snapshot(now);
        const next = new MemoryStore(memoryOptions);
        const early = rnd() < 0.5;
        if (early) next.restore(text);
        const service = new RateLimiterService({ clock, store: next });
        service.addRule("r", current, options());
        if (!early) next.restore(text);
        stores[0] = next;
        capped[0] = service;
        log.push(`t+${now - T0} restart (restored ${early ? "before" : "after"} binding)`);
      } else if (x < 0.77) {
        const y = rnd();
        if (y < 0.4) current = withLimit(specs, int(1, 5));
        else if (y < 0.85) ban = { ...ban, after: int(1, 4), forMs: int(20, 6000) };
        else ban = { ...ban, withinMs: int(20, 3000) };
        for (const s of capped) s.updateRule("r", current, options());
        free.updateRule("r", current, options());
        log.push(
          `t+${now - T0} updateRule ${JSON.stringify(current.map((s) => (s as { limit?: number }).limit))} ${JSON.stringify(ban)}`,
        );
      } else {
        // A flood: new keys, each checked until refused a few times (strikes and bans in the cells).
        const n = store === "shared" ? int(20, 200) : int(1, 12);
        const per = int(1, 8);
        for (let f = 0; f < n; f++) {
          const k = `flood${flood++}`;
          const s = pick();
          for (let j = 0; j < per; j++) s.check("r", k);
        }
        log.push(`t+${now - T0} flood ${n}x${per}`);
      }
    }
  } finally {
    for (const s of stores) if (s instanceof SharedMemoryStore) s.close();
  }
  return out;
}

describe("bans past maxKeys, replayed strictly: the uncapped store takes the capped store's admissions and refusals", () => {
  // Shared stores run fewer seeds: each run floods hundreds of keys through a table of 128.
  for (const [store, seeds] of [
    ["memory", SEEDS],
    ["shared", Math.ceil(SEEDS / 5)],
  ] as const) {
    it(`${store} store: every admission is one the uncapped store makes (${seeds} seeds from ${FIRST})`, () => {
      const failures: string[] = [];
      let compared = 0;
      let approximate = 0;
      let banned = 0;
      for (let seed = FIRST; seed < FIRST + seeds; seed++) {
        const r = run(seed, store, true);
        compared += r.compared;
        approximate += r.approximate;
        banned += r.bannedFree;
        if (r.failure !== undefined) failures.push(r.failure);
      }
      console.log(
        `${store}: ${compared} admissions compared, ${approximate} approximate decisions, ${banned} strikes while banned on the uncapped store (seed ${FIRST}, ${seeds} seeds)`,
      );
      expect(failures.slice(0, 2)).toEqual([]);
      // The property compared admissions of summarised and banned keys, not only ran its loops.
      expect(compared).toBeGreaterThan(seeds * 15);
      expect(approximate).toBeGreaterThan(seeds * 2);
      expect(banned).toBeGreaterThan(seeds * 3);
    });
    // The same traces on a rule without a ban (MemoryStore's compact tier takes such records).
    it(`${store} store, no ban: every admission is one the uncapped store makes (${Math.ceil(seeds / 3)} seeds from ${FIRST})`, () => {
      const failures: string[] = [];
      let compared = 0;
      let approximate = 0;
      for (let seed = FIRST; seed < FIRST + Math.ceil(seeds / 3); seed++) {
        const r = run(seed, store, false);
        compared += r.compared;
        approximate += r.approximate;
        if (r.failure !== undefined) failures.push(r.failure);
      }
      expect(failures.slice(0, 2)).toEqual([]);
      expect(compared).toBeGreaterThan(seeds * 15);
      expect(approximate).toBeGreaterThan(seeds / 3);
    });
  }
});
