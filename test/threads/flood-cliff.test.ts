// Floods past `maxKeys` on real worker threads (issue 34, SPEC §10): before the store had a
// byte budget past `maxKeys` (params.ts) and gave up spent keys first (room.ts), a flood of
// keys spending their whole limit overflowed a table sized for `maxKeys` alone, and the honest
// keys pushed out with it were read back from saturated summary cells: with `maxKeys: 1000`
// and 7 rules, most honest requests were refused (SLUICE_THREADS_LEAST=1 sizes the store as
// before and shows it). Every algorithm at once (7 rules), 2 threads, and a restart in the
// middle: the first threads end and new ones attach to the same memory. Asserts no flood key
// past its limit, ≤ 1% of honest and of brand-new requests refused, the store within its
// budget. Seeded (SLUICE_SEED, printed). SLUICE_FLOOD_SCALE multiplies the flood
// (bench/threads-flood.mjs runs the full sizes).
import type { SharedMemoryStoreOptions } from "sluice/threads";
import { SharedMemoryStore } from "sluice/threads";
import { beforeAll, describe, expect, it } from "vitest";
import { LEAST_BYTES } from "../../src/stores/threads/params.ts";
import { ensureBuilt, type RuleDef, spawnWorker } from "./support.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const SCALE = Number(process.env.SLUICE_FLOOD_SCALE ?? 1);
const HOUR = 3_600_000;
const LIMIT = 5;
const RULES: RuleDef[] = [
  { name: "fw", spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: HOUR } },
  { name: "sw", spec: { algorithm: "sliding-window", limit: LIMIT, windowMs: HOUR } },
  { name: "tb", spec: { algorithm: "token-bucket", capacity: LIMIT, refillPerSecond: LIMIT / 3600 } },
  { name: "gc", spec: { algorithm: "gcra", limit: LIMIT, periodMs: HOUR } },
  { name: "lb", spec: { algorithm: "leaky-bucket", capacity: LIMIT, leakPerSecond: LIMIT / 3600 } },
  { name: "sl", spec: { algorithm: "sliding-log", limit: LIMIT, windowMs: HOUR } },
  { name: "cc", spec: { algorithm: "concurrency", limit: LIMIT, leaseMs: HOUR } },
];
const MAX_KEYS = 1000;
const ROUNDS = 5;
const THREADS = 2;
// 3× the table's entries at the default budget (about 2,900 buckets of 8 = 23,000 entries), over 7 rules.
const FLOOD = Math.round(2_000 * SCALE) * ROUNDS;
const HONEST = 200;
const FRESH = 100;
const SPEND = LIMIT + 1;

interface Answer {
  honest: number[];
  fresh: number[];
  admitted: number[];
}

/** Runs rounds [from, to) on new threads attached to `store`. */
async function phase(store: SharedMemoryStore, from: number, to: number): Promise<Answer[]> {
  const workers = Array.from({ length: THREADS }, (_, slot) =>
    spawnWorker<Answer>(store.handle, {
      kind: "cliff",
      rules: RULES,
      control: new SharedArrayBuffer(16),
      now: Date.UTC(2026, 11, 7, 10),
      slot,
      threads: THREADS,
      from,
      to,
      rounds: ROUNDS,
      flood: FLOOD,
      honest: HONEST,
      fresh: FRESH,
      spend: SPEND,
    }),
  );
  const answers = await Promise.all(workers.map((w) => w.result));
  await Promise.all(workers.map((w) => w.worker.terminate()));
  return answers;
}

describe(`SharedMemoryStore: ${FLOOD} keys × ${RULES.length} rules spending their limit past maxKeys ${MAX_KEYS}, ${THREADS} threads, a restart (seed ${SEED})`, () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it("no key past its limit, ≤ 1% of honest and brand-new requests refused, the store within its budget", async () => {
    const options: SharedMemoryStoreOptions = {
      maxKeys: MAX_KEYS,
      seed: SEED,
      ...(process.env.SLUICE_THREADS_LEAST === "1" ? { maxBytes: LEAST_BYTES } : {}),
    };
    const store = new SharedMemoryStore(options);
    // The default budget: MemoryStore's, 2,400 bytes a key of maxKeys.
    expect(store.stats().bytes).toBeLessThanOrEqual(MAX_KEYS * 2400);
    const answers = [...(await phase(store, 0, 2)), ...(await phase(store, 2, ROUNDS))];
    const honest = new Array(RULES.length).fill(0);
    const fresh = new Array(RULES.length).fill(0);
    const admitted = new Array(RULES.length * FLOOD).fill(0);
    for (const a of answers) {
      a.honest.forEach((n, r) => {
        honest[r] += n;
      });
      a.fresh.forEach((n, r) => {
        fresh[r] += n;
      });
      a.admitted.forEach((n, i) => {
        admitted[i] += n;
      });
    }
    const escapes = RULES.map((_, r) => admitted.slice(r * FLOOD, (r + 1) * FLOOD).filter((n) => n > LIMIT).length);
    const stats = store.stats();
    const report = RULES.map(
      (rule, r) => `${rule.name}: honest ${honest[r]}, new ${fresh[r]}, flood keys past limit ${escapes[r]}`,
    );
    console.log(
      `seed ${SEED}: evicted ${stats.evicted}, approximate ${stats.approximate}, bytes ${stats.bytes}; refused ${report.join("; ")}`,
    );
    // The flood did overflow the table, many times over.
    expect(stats.evicted).toBeGreaterThan(FLOOD);
    expect(escapes).toEqual(RULES.map(() => 0));
    // The flood's keys were admitted to their limit (none refused early by the summary, mostly).
    expect(admitted.filter((n) => n < LIMIT).length).toBeLessThanOrEqual(0.01 * admitted.length);
    for (let r = 0; r < RULES.length; r++) {
      expect(honest[r], RULES[r]?.name).toBeLessThanOrEqual(0.01 * HONEST * ROUNDS);
      expect(fresh[r], RULES[r]?.name).toBeLessThanOrEqual(0.01 * FRESH * ROUNDS);
    }
    store.close();
  }, 120_000);
});
