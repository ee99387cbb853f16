/**
 * Which keys a MemoryStore's summaries may hold: a Bloom filter of the keys pushed into a
 * summary (across all rules: the rule's compact index is hashed in), in two generations. A key
 * the filter does not hold was never summarised (since the filter last forgot anything, which it
 * does only for state that no longer matters), so its fresh record is exact: a summary is read
 * only for keys the filter holds (and those a false positive lets through, which read their
 * cells as before). The shared store's filter (threads/summary-filter.ts) is the same design on
 * shared memory; both take their probes from compact/filter-probes.ts.
 *
 * Why (issue 34, cause 3): a key's cells are shared with other keys, so once some 300,000 keys
 * were summarised every never-seen key found all of its cells live and was read back
 * over-counted: a one-shot flood of 1,500,000 keys refused 4% of new keys' first requests and
 * 45% of brand-new keys after it; 3,000,000 keys refused 44%. Bits are far cheaper than cells.
 *
 * A generation is emptied only when it is the older one and every rule's latest fresh-at joined
 * into it is past on that rule's clock (the caller's `past`), when the current one holds its
 * capacity (16 bits a key: a false positive in 1 of 400). While the older one still matters the
 * current one keeps filling past its capacity (more false positives, never a false negative).
 */
import { filterProbes, PROBES } from "../compact/filter-probes.ts";

/** A filter as a snapshot carries it (memory/snapshot.ts): its bits travel with their owners' fresh-at. */
export interface SavedFilter {
  /** Bits per generation. */
  bits: number;
  /** The store's hash seed (it placed the keys' probes). */
  seed: number;
  /** The generation keys join now (0 or 1). */
  current: number;
  /** Keys joined into each generation. */
  joins: [number, number];
  /** Each generation's bits, base64. */
  gens: [string, string];
  /** Each generation's owners (rule tables, by id) and their latest fresh-at joined. */
  fresh: [Array<[string, number]>, Array<[string, number]>];
}

const toBase64 = (a: Int32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");

/** Bits set in `gen`. */
function popcount(gen: Int32Array): number {
  let n = 0;
  for (let i = 0; i < gen.length; i++) {
    let v = (gen[i] as number) >>> 0;
    v -= (v >>> 1) & 0x55555555;
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
    n += (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) as number;
  }
  return n;
}

/** Bits per key a generation is sized for (4 probes: 0.24% false positives when full). */
const BITS_PER_KEY = 16;

/** The in-process summary filter of one store. */
export class SummaryFilter<Owner = string> {
  /** Bits of one generation (a multiple of 32). */
  readonly bits: number;
  readonly #gens: [Int32Array, Int32Array];
  readonly #joins = [0, 0];
  /** Joins of the current generation at which a rotation is tried next (once it is full). */
  #tryAt = 0;
  /** Bits set in each generation. */
  readonly #set = [0, 0];
  /** Per generation: each owner's (rule table's) latest fresh-at joined into it. */
  readonly #fresh: [Map<Owner, number>, Map<Owner, number>] = [new Map(), new Map()];
  #current = 0;
  readonly #capacity: number;
  readonly #probes = new Int32Array(PROBES);
  /** Generations emptied so far. */
  rotations = 0;

  /** Bits per generation that `bytes` hold for two generations (0: too few for a filter). */
  static bitsFor(bytes: number): number {
    return Math.floor((bytes * 8) / 2 / 32) * 32;
  }

  /** A filter of `bits` bits per generation (a positive multiple of 32). */
  constructor(bits: number) {
    this.bits = bits;
    this.#gens = [new Int32Array(bits / 32), new Int32Array(bits / 32)];
    this.#capacity = Math.max(1, Math.floor(bits / BITS_PER_KEY));
  }

  /** Bytes held (fixed). */
  get bytes(): number {
    return (this.bits / 8) * 2;
  }

  /** Keys joined into both generations (a key joined twice counts twice). */
  get joins(): number {
    return (this.#joins[0] as number) + (this.#joins[1] as number);
  }

  /**
   * The chance that a key never summarised is held (a false positive): each generation's share
   * of bits set (counted as they are set), to the power of the probes, summed.
   */
  get errorBound(): number {
    let p = 0;
    for (const set of this.#set) p += (set / this.bits) ** PROBES;
    return Math.min(1, p);
  }

  #holds(gen: Int32Array): boolean {
    for (let i = 0; i < PROBES; i++) {
      const bit = this.#probes[i] as number;
      if (((gen[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /** Whether a summary may hold state of the key (h1, h2) of the rule at compact index `index`. */
  mayHold(index: number, h1: number, h2: number): boolean {
    filterProbes(index, h1, h2, this.bits, this.#probes);
    return this.#holds(this.#gens[0]) || this.#holds(this.#gens[1]);
  }

  /**
   * Notes that the key (h1, h2) of `owner` (compact index `index`) was joined into its summary,
   * which then matters until `freshAt`; rotates when the current generation is full and the
   * older one no longer matters (`past(owner, freshAt)` for every owner joined into it).
   */
  add(
    owner: Owner,
    index: number,
    h1: number,
    h2: number,
    freshAt: number,
    past: (owner: Owner, at: number) => boolean,
  ): void {
    filterProbes(index, h1, h2, this.bits, this.#probes);
    let cur = this.#current;
    // A key either generation already holds (its probes' bits all set) for at least as long
    // sets no bit: counting it again would only rotate sooner and overstate the error (issue 34:
    // keys read back and pushed out again joined 3× over, 680,593 joins for ~200,000 keys).
    for (const g of [cur, cur ^ 1]) {
      const was = (this.#fresh[g] as Map<Owner, number>).get(owner);
      if (was !== undefined && was >= freshAt && this.#holds(this.#gens[g] as Int32Array)) return;
    }
    // Past its capacity, while the older generation still matters (a flood within one window),
    // the current one would take every further key alone: a key the older one already covers
    // (the owner's fresh-at there is no earlier) joins whichever holds fewer, which empties
    // neither any later and keeps both below the false-positive rate of one overfull one.
    const joinsNow = this.#joins[cur] as number;
    if (joinsNow >= this.#capacity && (this.#joins[cur ^ 1] as number) < joinsNow) {
      const older = (this.#fresh[cur ^ 1] as Map<Owner, number>).get(owner);
      if (older !== undefined && older >= freshAt) cur ^= 1;
    }
    const fresh = this.#fresh[cur] as Map<Owner, number>;
    const was = fresh.get(owner);
    // NaN (never fresh) is kept as "always matters": comparisons with it are false.
    if (was === undefined || !(was >= freshAt))
      fresh.set(owner, Number.isNaN(freshAt) ? Number.POSITIVE_INFINITY : freshAt);
    const gen = this.#gens[cur] as Int32Array;
    let set = 0;
    for (let i = 0; i < PROBES; i++) {
      const bit = this.#probes[i] as number;
      const word = gen[bit >>> 5] as number;
      if ((word & (1 << (bit & 31))) === 0) {
        gen[bit >>> 5] = word | (1 << (bit & 31));
        set++;
      }
    }
    this.#set[cur] = (this.#set[cur] as number) + set;
    const joins = (this.#joins[cur] as number) + 1;
    this.#joins[cur] = joins;
    if (cur !== this.#current) return;
    // Full: a rotation is tried then, and every 256 joins after while the older one still matters
    // (counted from the last try: joins that set no bit are not counted, so no join is skipped to).
    if (joins >= this.#capacity && joins >= this.#tryAt) {
      this.#tryAt = joins + 256;
      this.#rotate(past);
    }
  }

  /** Empties the older generation and makes it the current one, if nothing joined into it still matters. */
  #rotate(past: (owner: Owner, at: number) => boolean): void {
    const old = this.#current ^ 1;
    const fresh = this.#fresh[old] as Map<Owner, number>;
    for (const [owner, at] of fresh) if (!past(owner, at)) return;
    (this.#gens[old] as Int32Array).fill(0);
    fresh.clear();
    this.#joins[old] = 0;
    this.#set[old] = 0;
    this.#tryAt = 0;
    this.#current = old;
    this.rotations++;
  }

  /** The filter as a snapshot carries it (owners named by `name`). */
  save(seed: number, name: (owner: Owner) => string): SavedFilter {
    const fresh = this.#fresh.map((m) => [...m].map(([o, at]) => [name(o), at] as [string, number]));
    return {
      bits: this.bits,
      seed,
      current: this.#current,
      joins: [this.#joins[0] as number, this.#joins[1] as number],
      gens: [toBase64(this.#gens[0]), toBase64(this.#gens[1])],
      fresh: fresh as SavedFilter["fresh"],
    };
  }

  /** Takes a saved filter's bits and owners (`owner(name)`); false (nothing taken) when its size is not this one's. */
  load(saved: SavedFilter, owner: (name: string) => Owner): boolean {
    const gens = saved.gens.map((b) => Buffer.from(b, "base64"));
    if (saved.bits !== this.bits || !gens.every((g) => g.byteLength === this.bits / 8)) return false;
    for (let g = 0; g < 2; g++) {
      const bytes = gens[g] as Buffer;
      (this.#gens[g] as Int32Array).set(
        new Int32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
      );
      this.#joins[g] = saved.joins[g] as number;
      this.#set[g] = popcount(this.#gens[g] as Int32Array);
      const fresh = this.#fresh[g] as Map<Owner, number>;
      fresh.clear();
      for (const [name, at] of saved.fresh[g] as Array<[string, number]>) fresh.set(owner(name), at);
    }
    this.#current = saved.current;
    return true;
  }

  /** Forgets `owner` (a dropped table: its records are gone, so nothing it joined matters). */
  forget(owner: Owner): void {
    this.#fresh[0].delete(owner);
    this.#fresh[1].delete(owner);
  }
}
