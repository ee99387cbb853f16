/**
 * `SharedMemoryStore`: one exact limit per key across `worker_threads`, decided synchronously in
 * the calling thread, straight on a SharedArrayBuffer (no messages, no event-loop turn).
 *
 * Why it is safe under every interleaving and every death (`worker.terminate()` can stop a
 * thread between any two instructions, so nothing here may ever be left "held"):
 *
 * - The table is buckets of up to 8 entries (a key's 64-bit fingerprint, its rule, the instant
 *   its record is fresh again, the record). A bucket is ONE 64-bit word: a tag and the index of
 *   an immutable block holding the bucket's entries. No thread ever writes a published block.
 * - A decision copies the bucket's block into a block the thread owns privately, checks that the
 *   bucket word did not change during the copy (else the copy may be torn: retry), decodes the
 *   key's record, runs `decideRule` (the one decision path of every store) on it, writes the
 *   result into the private block and publishes it with one compare-and-swap of the bucket word.
 *   If another thread published first, the CAS fails and the decision is made again from the
 *   new state: no update is ever lost, and no thread waits for another (lock-free).
 * - The block the CAS replaced is unreachable from the table from then on; the winner keeps it
 *   as its next private block. The tag grows with every publish, so a thread holding an old copy
 *   of the word can never succeed with it, even if the same block index comes back (ABA).
 * - A decision that changes nothing (a peek, a plain denial) is the state of the validated copy:
 *   it is linearised at the load that validated it.
 * - A thread that dies anywhere leaves every bucket pointing at a complete block; it leaks the
 *   one or two blocks it held privately (the pools keep spare blocks for that) and nothing else.
 *
 * Memory is fixed at construction. A key that does not fit its bucket pushes out the entry that
 * became fresh first (records that are already fresh are simply dropped); the pushed-out record
 * is max-joined into its rule's shared summary (`summary.ts`) before the bucket is published
 * without it, so no key ever passes its limit; decisions read back from the summary carry
 * `approximate: true`, as in MemoryStore past `maxKeys`.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { Clock } from "../../core/clock.ts";
import { systemClock } from "../../core/clock.ts";
import { decideRule, type Operation, storesNewRecord } from "../../core/decide-rule.ts";
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import { checkOptions } from "../../core/options.ts";
import { type CompiledRule, compileRule, createRecord, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { type Codec, codecFor } from "./codec.ts";
import { fingerprint } from "./fingerprint.ts";
import { FreeList } from "./free-list.ts";
import {
  BUCKET_ENTRIES,
  createBuffer,
  DEPTH,
  ENTRY_HEADER,
  H,
  indexOf,
  type Layout,
  readLayout,
  type Views,
  viewsOf,
} from "./layout.ts";
import { Registry } from "./registry.ts";
import { Summary } from "./summary.ts";

/** Options of {@link SharedMemoryStore}. */
export interface SharedMemoryStoreOptions {
  /** Keys held exactly (the table is sized for it; memory is fixed at construction). */
  maxKeys: number;
  /**
   * 8-byte words of each key's record (default 6). A rule needs: fixed-window 2, sliding-window
   * 3, token-bucket 2, gcra and leaky-bucket 3, sliding-log 1 + limit, a ban 3 (composites: the
   * sum); a rule that needs more is refused when it is bound.
   */
  recordWords?: number;
  /** Distinct rules (id and shape) the store can hold (default 64). */
  maxRules?: number;
  /** Hash seed (default: random). Fixed in tests so that which keys share a bucket replays exactly. */
  seed?: number;
  /** Cells per row of each rule's summary, a power of two (default: maxKeys / 16, within 64..1024). */
  summaryWidth?: number;
  /** Bytes for rule identities and specs, shared by all threads (default 65536). */
  ruleBytes?: number;
}

/** The value to pass to other threads (`workerData`, `postMessage`): structured-cloneable. */
export interface SharedMemoryStoreHandle {
  /** What this is (checked by `attach`). */
  readonly kind: "sluice/threads";
  /** The whole store. */
  readonly buffer: SharedArrayBuffer;
}

/** What `stats()` reports (the counters are shared by every thread). */
export interface SharedMemoryStoreStats {
  /** Keys held exactly now, across all rules and threads. */
  keys: number;
  /** The number of keys the table was sized for. */
  maxKeys: number;
  /** Records pushed out of the table into a summary. */
  evicted: number;
  /** Decisions read back from a summary (they carry `approximate: true`). */
  approximate: number;
  /** Of those, denials. */
  refused: number;
  /** Checks denied because neither the table nor the summary had room for the key (see docs/threads.md). */
  unplaced: number;
  /** Rules registered. */
  rules: number;
  /** Bytes of the shared buffer (fixed). */
  bytes: number;
}

/** What a thread keeps about a registered rule: the spec version it compiled. */
interface RuleView {
  version: number;
  rule: CompiledRule;
  codec: Codec;
}

/** The low half of a bucket word (block index + 1) and one step of its tag. */
const LOW = 0xffffffffn;
const TAG_ONE = 1n << 32n;

const LIMITS = {
  maxKeys: [1, 2 ** 26],
  recordWords: [1, 4096],
  maxRules: [1, 65536],
  summaryWidth: [64, 65536],
  ruleBytes: [1024, 2 ** 30],
} as const;

/**
 * A Store in shared memory, exact across the worker threads that attach to it.
 *
 * @example
 * const store = new SharedMemoryStore({ maxKeys: 100_000 });
 * new Worker(url, { workerData: store.handle }); // there: SharedMemoryStore.attach(workerData)
 */
export class SharedMemoryStore implements Store {
  /** Checks return plain decisions, never promises. */
  readonly synchronous = true;
  /** Decides `penalty`, `block` and `get` (rate-limiter-flexible's calls). */
  readonly flexibleCalls = true;
  /** The number of keys the table was sized for. */
  readonly maxKeys: number;
  /** What other threads pass to `attach`. */
  readonly handle: SharedMemoryStoreHandle;
  readonly #views: Views;
  readonly #layout: Layout;
  readonly #free: FreeList;
  readonly #registry: Registry;
  readonly #summary: Summary;
  readonly #rules = new Map<number, RuleView>();
  readonly #fp = new Int32Array(2);
  /** A block this thread owns privately: where the next bucket is written before it is published. */
  #spare = -1;
  /** `#spare + 1` as the low half of a bucket word. */
  #spareWord = 0n;

  /** Creates a store (and its memory) in this thread. */
  constructor(options: SharedMemoryStoreOptions);
  /** @internal Used by `attach`. */
  constructor(options: SharedMemoryStoreOptions, attached: { buffer: SharedArrayBuffer; layout: Layout });
  constructor(options: SharedMemoryStoreOptions, attached?: { buffer: SharedArrayBuffer; layout: Layout }) {
    let buffer: SharedArrayBuffer;
    let layout: Layout;
    if (attached !== undefined) ({ buffer, layout } = attached);
    else ({ buffer, layout } = createBuffer(paramsOf(options)));
    this.#views = viewsOf(buffer);
    this.#layout = layout;
    this.maxKeys = layout.maxKeys;
    this.handle = Object.freeze({ kind: "sluice/threads", buffer });
    this.#free = new FreeList(this.#views.W, this.#views.I, layout.freeHead, layout.nextBase);
    const summaryFree = new FreeList(this.#views.W, this.#views.I, layout.summaryFreeHead, layout.summaryNextBase);
    this.#registry = new Registry(this.#views, layout);
    this.#summary = new Summary(this.#views, layout, summaryFree);
  }

  /** The store another thread created, from its `handle`; StoreError if the value is not one. */
  static attach(handle: SharedMemoryStoreHandle): SharedMemoryStore {
    if (typeof handle !== "object" || handle === null || (handle as { kind?: unknown }).kind !== "sluice/threads") {
      throw new StoreError(
        `SharedMemoryStore.attach expects a SharedMemoryStore's \`handle\` (got ${describeValue(handle)})`,
      );
    }
    const layout = readLayout(handle.buffer);
    return new SharedMemoryStore({ maxKeys: layout.maxKeys }, { buffer: handle.buffer, layout });
  }

  /** Binds a rule: registers it (or finds it) in the shared registry and publishes its spec. */
  bind(binding: RuleBinding): BoundRule {
    const { rule } = binding;
    // Refused before anything is shared: a rule that does not fit never reaches other threads.
    codecFor(rule, this.#layout.recordWords);
    const index = this.#registry.indexOf(`${binding.id}\u0000${rule.shape}`);
    this.#registry.publish(
      index,
      JSON.stringify({ specs: rule.members.map((m) => m.spec), ban: rule.ban === undefined ? null : rule.ban }),
    );
    const clock: Clock | undefined = binding.clock;
    let view = this.#view(index);
    const registry = this.#registry;
    const current = () => {
      if (registry.version(index) !== view.version) view = this.#view(index);
      return view;
    };
    return {
      check: (key, cost, now, op, at) =>
        this.#run(current(), index, key, cost, now === undefined ? systemClock.now() : now, op, at) as Decision,
      reset: (key) => {
        this.#run(current(), index, key, 1, (clock ?? systemClock).now(), "reset");
      },
      // Rules stay registered (other threads may use them); their records go once fresh.
      release: () => {},
    };
  }

  /** Counters for logs and metrics, shared by every thread (`keys` is a walk of the table). */
  stats(): SharedMemoryStoreStats {
    const { W, I, F } = this.#views;
    const L = this.#layout;
    let keys = 0;
    for (let b = 0; b < L.buckets; b++) {
      const block = indexOf(Atomics.load(W, L.bucketBase + b));
      if (block >= 0) keys += F[L.blockBase + block * L.blockWords] as number;
    }
    let rules = 0;
    for (let r = 0; r < L.maxRules; r++) if (Atomics.load(W, L.ruleIdBase + r) !== 0n) rules++;
    return {
      keys,
      maxKeys: L.maxKeys,
      evicted: Atomics.load(I, H.evicted),
      approximate: Atomics.load(I, H.approximate),
      refused: Atomics.load(I, H.refused),
      unplaced: Atomics.load(I, H.unsummarised),
      rules,
      bytes: L.bytes,
    };
  }

  /** Returns this thread's private blocks to the shared pools (call when a thread is done with the store). */
  close(): void {
    if (this.#spare >= 0) this.#free.push(this.#spare);
    this.#spare = -1;
    this.#spareWord = 0n;
    this.#summary.close();
  }

  /** Rule `index` as currently published (compiled again when another thread changed it). */
  #view(index: number): RuleView {
    const version = this.#registry.version(index);
    const cached = this.#rules.get(index);
    if (cached !== undefined && cached.version === version) return cached;
    const text = this.#registry.spec(index);
    if (text === undefined) throw new StoreError(`SharedMemoryStore: rule #${index} has no spec yet`);
    const { specs, ban } = JSON.parse(text);
    const rule = compileRule(specs, ban ?? undefined);
    const view = { version, rule, codec: codecFor(rule, this.#layout.recordWords) };
    this.#rules.set(index, view);
    return view;
  }

  /**
   * One operation on one key, lock-free (see the file's header). `reset` returns undefined;
   * `receipt` is a refund's receipt (the instant its check was decided).
   */
  #run(
    view: RuleView,
    index: number,
    key: string,
    cost: number,
    now: number,
    op: Operation | "reset",
    receipt?: number,
  ) {
    const { W, I, F } = this.#views;
    const L = this.#layout;
    const { rule, codec } = view;
    const fp = this.#fp;
    fingerprint(key, L.seed, fp);
    const lo = fp[0] as number;
    const hi = fp[1] as number;
    const at = L.bucketBase + ((lo ^ Math.imul(index + 1, 0x9e3779b1)) & (L.buckets - 1));
    const E = L.entryWords;
    const BW = L.blockWords;
    for (;;) {
      if (this.#spare < 0) {
        this.#spare = this.#free.pop();
        this.#spareWord = BigInt(this.#spare + 1);
      }
      if (this.#spare < 0) {
        throw new StoreError(
          "SharedMemoryStore: no free block left (threads that ended without close() keep one each)",
        );
      }
      const word = Atomics.load(W, at);
      const currentWord = word & LOW;
      const current = Number(currentWord) - 1;
      const dst = L.blockBase + this.#spare * BW;
      if (current < 0) F[dst] = 0;
      else {
        // Only the entries in use (a torn count is caught by the check below, and bounded here).
        const src = L.blockBase + current * BW;
        const used = Math.min(BUCKET_ENTRIES, Math.max(0, F[src] as number));
        // A loop, not copyWithin: on shared memory the builtin's per-call cost exceeds a few words' copy.
        for (let k = 0, n = 1 + used * E; k < n; k++) F[dst + k] = F[src + k] as number;
      }
      // A copy taken while the block was being recycled may be torn: only a copy of an unchanged word counts.
      if (Atomics.load(W, at) !== word) continue;
      let count = F[dst] as number;
      let found = -1;
      for (let e = 0; e < count; e++) {
        const o = dst + 1 + e * E;
        if (I[2 * o] === lo && I[2 * o + 1] === hi && I[2 * o + 2] === index) {
          found = o;
          break;
        }
      }
      let record: RuleRecord;
      let summarised = false;
      if (found >= 0) record = codec.decode(F, found + ENTRY_HEADER);
      else {
        const rows = this.#summary.read(index, lo, hi, now, codec);
        summarised = rows !== undefined;
        record = rows === undefined ? createRecord(rule) : mostPermissive(rule, rows, now, cost);
      }
      let result: Decision | undefined;
      let write: boolean;
      if (op === "reset") {
        // A summarised key gets an explicit fresh record, so "forget this key" is exact.
        if (summarised) record = createRecord(rule);
        else if (found < 0) return undefined;
        write = true;
      } else {
        result = decideRule(rule, record, now, cost, op, receipt);
        if (summarised) result.approximate = true;
        // A get reports, like a peek; a penalty and a block always change the record.
        if (summarised) write = op !== "peek" && op !== "get";
        else if (found >= 0)
          write =
            op === "refund" ||
            op === "penalty" ||
            op === "block" ||
            (op === "check" && (result.allowed || rule.ban !== undefined));
        else write = op !== "peek" && op !== "get" && storesNewRecord(rule, op, result);
        if (!write) return this.#counted(result);
      }
      let evicted = 0;
      if (op === "reset" && !summarised) {
        // Forget: the last entry takes the forgotten one's place.
        const last = dst + 1 + (count - 1) * E;
        if (last !== found) F.copyWithin(found, last, last + E);
        count--;
      } else {
        let o = found;
        if (o < 0) {
          if (count === BUCKET_ENTRIES) {
            const made = this.#makeRoom(dst, index, now);
            if (made < 0) return this.#unplaced(result);
            evicted = BUCKET_ENTRIES - made;
            count = made;
          }
          o = dst + 1 + count * E;
          count++;
          I[2 * o] = lo;
          I[2 * o + 1] = hi;
          I[2 * o + 2] = index;
        }
        codec.encode(record, F, o + ENTRY_HEADER);
        F[o + 2] = recordFreshAt(rule, record);
      }
      F[dst] = count;
      // The next tag (TAG_ONE: wraps modulo 2^64, as the array stores it) and this thread's block.
      if (Atomics.compareExchange(W, at, word, word - currentWord + TAG_ONE + this.#spareWord) === word) {
        // The replaced block is unreachable now: it is this thread's next private block.
        this.#spare = current;
        this.#spareWord = currentWord;
        if (evicted > 0) Atomics.add(I, H.evicted, evicted);
        return result === undefined ? undefined : this.#counted(result);
      }
    }
  }

  /**
   * Frees at least one entry of the full bucket copy at `dst`: entries of this rule already fresh
   * at `now` are dropped (instants of other rules may come from other clocks), else the entry
   * fresh soonest is joined into its rule's summary. Returns the new count, or -1 when the
   * summary had no room (then nothing may be dropped).
   */
  #makeRoom(dst: number, index: number, now: number): number {
    const { I, F } = this.#views;
    const E = this.#layout.entryWords;
    let count = BUCKET_ENTRIES;
    for (let e = 0; e < count; ) {
      const o = dst + 1 + e * E;
      if (I[2 * o + 2] === index && (F[o + 2] as number) <= now) {
        const last = dst + 1 + (count - 1) * E;
        if (last !== o) F.copyWithin(o, last, last + E);
        count--;
      } else e++;
    }
    if (count < BUCKET_ENTRIES) return count;
    let victim = dst + 1;
    for (let e = 1; e < count; e++) {
      const o = dst + 1 + e * E;
      if ((F[o + 2] as number) < (F[victim + 2] as number)) victim = o;
    }
    const ruleIndex = I[2 * victim + 2] as number;
    const { codec } = this.#view(ruleIndex);
    const record = codec.decode(F, victim + ENTRY_HEADER);
    const joined = this.#summary.join(
      ruleIndex,
      I[2 * victim] as number,
      I[2 * victim + 1] as number,
      record,
      F[victim + 2] as number,
      codec,
    );
    if (!joined) return -1;
    const last = dst + 1 + (count - 1) * E;
    if (last !== victim) F.copyWithin(victim, last, last + E);
    return count - 1;
  }

  /** Counts an approximate decision in the shared counters. */
  #counted(result: Decision): Decision {
    if (result.approximate === true) {
      Atomics.add(this.#views.I, H.approximate, 1);
      if (!result.allowed) Atomics.add(this.#views.I, H.refused, 1);
    }
    return result;
  }

  /**
   * A key that could be neither stored nor summarised (the summary pool is exhausted): nothing is
   * recorded, so an admission could not be counted and the check is denied (conservative).
   */
  #unplaced(result: Decision | undefined): Decision | undefined {
    Atomics.add(this.#views.I, H.unsummarised, 1);
    if (result === undefined || !result.allowed) return result === undefined ? undefined : this.#counted(result);
    const denied: Decision = { ...result, allowed: false, remaining: 0, retryAfterMs: Math.max(1, result.resetMs) };
    denied.approximate = true;
    return this.#counted(denied);
  }
}

/** Every row dominates the key's own record; the most permissive one is the closest. */
function mostPermissive(rule: CompiledRule, rows: RuleRecord[], now: number, cost: number): RuleRecord {
  let best = rows[0];
  let bestDecision = decideRule(rule, best, now, cost, "peek");
  for (let i = 1; i < rows.length; i++) {
    const d = decideRule(rule, rows[i], now, cost, "peek");
    if (permits(d, bestDecision)) {
      best = rows[i];
      bestDecision = d;
    }
  }
  return best;
}

/** Whether decision `a` admits more than `b` (allowed first, then more remaining, then sooner). */
function permits(a: Decision, b: Decision): boolean {
  if (a.allowed !== b.allowed) return a.allowed;
  if (a.remaining !== b.remaining) return a.remaining > b.remaining;
  return a.retryAfterMs < b.retryAfterMs;
}

/** Validates the options and sizes the buffer. */
function paramsOf(options: SharedMemoryStoreOptions) {
  checkOptions(options, "SharedMemoryStore", [
    "maxKeys",
    "recordWords",
    "maxRules",
    "summaryWidth",
    "ruleBytes",
    "seed",
  ]);
  const { seed } = options;
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)) {
    throw new ArgumentError(
      `SharedMemoryStore: \`seed\` must be an integer from 0 to 2^32 - 1 (got ${describeValue(seed)})`,
    );
  }
  for (const [name, [min, max]] of Object.entries(LIMITS)) {
    const value = (options as unknown as Record<string, unknown>)[name];
    if (value === undefined && name !== "maxKeys") continue;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new ArgumentError(
        `SharedMemoryStore: \`${name}\` must be an integer from ${min} to ${max} (got ${describeValue(value)})`,
      );
    }
  }
  const { maxKeys, recordWords = 6, maxRules = 64, ruleBytes = 65536 } = options;
  const summaryWidth = options.summaryWidth ?? Math.min(1024, Math.max(64, pow2(maxKeys / 16)));
  if (pow2(summaryWidth) !== summaryWidth) {
    throw new ArgumentError(`SharedMemoryStore: \`summaryWidth\` must be a power of two (got ${summaryWidth})`);
  }
  // At most 2 keys per bucket of 8 on average at maxKeys, so a bucket overflowing (and
  // summarising a key) before then is rare: about 1 bucket in 4,000 when the table holds exactly
  // maxKeys = 2·buckets (Poisson tail P(X ≥ 9) for a mean of 2), far fewer below.
  const buckets = Math.max(16, pow2(maxKeys / 2));
  // Spare blocks: one per thread in use, and what threads that died or ended without close() kept.
  // Blocks: one per non-empty bucket, one private block per thread, and what threads that died
  // or ended without close() kept (at most two each).
  const blocks = buckets + Math.max(256, buckets >> 4);
  const cells = maxRules * DEPTH * summaryWidth;
  const summaryBlocks = Math.min(cells, 4 * DEPTH * summaryWidth) + 256;
  return {
    buckets,
    recordWords,
    blocks,
    summaryBlocks,
    maxRules,
    summaryWidth,
    arenaBytes: ruleBytes,
    // Random by default, so no one can aim keys at one bucket; fixed in tests to replay exactly.
    seed: seed === undefined ? (Math.random() * 0x100000000) | 0 : seed | 0,
    maxKeys,
  };
}

/** The smallest power of two ≥ x (and ≥ 1). */
function pow2(x: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, x)));
}
