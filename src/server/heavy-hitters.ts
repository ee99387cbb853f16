/**
 * The keys being limited most right now, in fixed memory however many keys there are: a
 * count-min sketch (with conservative update) estimates every key's count, and a min-heap of
 * the `k` largest estimates keeps the candidates. Estimates never under-count, so any key whose
 * count exceeds `total / k + error` is always in the top list (see `add`). Counts decay
 * continuously, halving every `halfLifeMs`, so the list follows what is happening now, not
 * since start, and a count converts to a rate (see `perMinute`).
 */
import type { Clock } from "../core/clock.ts";

/** Options of {@link HeavyHitters}. */
export interface HeavyHittersOptions {
  /** Keys reported (default 10). */
  k?: number;
  /** Counters per sketch row (default 1024: over-count at most e/1024 ≈ 0.27% of the total, w.h.p.). */
  width?: number;
  /** Sketch rows (default 5: that bound fails with probability e^-5 ≈ 0.7% per key). */
  depth?: number;
  /** Counts halve this often, in ms (default 30 s); 0 never decays. */
  halfLifeMs?: number;
  /** Time source for decay. */
  clock: Clock;
}

/** One reported key. */
export interface HeavyHitter {
  key: string;
  /**
   * Estimated decayed count (each event weighs 2^(−age / halfLife)): never below the true one.
   * Not a number of events: {@link HeavyHitters.perMinute} turns it into a rate.
   */
  count: number;
}

/** Shortest span a rate is taken over, in ms: one event in the first instants is not thousands a minute. */
const MIN_RATE_AGE_MS = 5000;

/** Longest key text kept for display (a key may be as long as a request body). */
const MAX_KEY_CHARS = 200;

/** `String.prototype.charCodeAt`, called through `.call` (why: the same constant in compact/fingerprint.ts). */
const charCodeAt = String.prototype.charCodeAt;

/** 32-bit FNV-1a with a seed; two of them give every row's index (Kirsch–Mitzenmacher). */
function fnv(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= charCodeAt.call(text, i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32): FNV's low bits alone are weak for short keys.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A bounded heavy-hitters summary (count-min sketch + top-k heap). */
export class HeavyHitters {
  readonly k: number;
  readonly #width: number;
  readonly #depth: number;
  readonly #counters: Float64Array;
  /** Min-heap by count: the current top-k candidates. */
  readonly #heap: HeavyHitter[] = [];
  /** key → index in #heap. */
  readonly #index = new Map<string, number>();
  readonly #halfLifeMs: number;
  readonly #clock: Clock;
  /**
   * Forward decay: what is stored is relative to this landmark, each event entering with weight
   * 2^((t − landmark) / halfLife), so a read divides by the same factor at its own instant and
   * decay is continuous without touching every counter on every event. Stored values are
   * rescaled (and the landmark moved) once per elapsed half-life, before the factor grows large.
   */
  #landmark: number;
  /** When this summary began (rates are over at most the time since). */
  readonly #started: number;
  #total = 0;

  constructor(options: HeavyHittersOptions) {
    this.k = options.k ?? 10;
    this.#width = options.width ?? 1024;
    this.#depth = options.depth ?? 5;
    this.#counters = new Float64Array(this.#width * this.#depth);
    this.#halfLifeMs = options.halfLifeMs ?? 30_000;
    this.#clock = options.clock;
    this.#landmark = options.clock.now();
    this.#started = this.#landmark;
  }

  /** Sum of all (decayed) counts added. */
  get total(): number {
    this.#rescale();
    return this.#total / this.#scale();
  }

  /**
   * The rate per minute behind a decayed count: a key taking `r` events per ms since this
   * summary began, `age` ms ago, has the count r · ∫₀^age 2^(−s / halfLife) ds, so this divides
   * by that integral (age at least {@link MIN_RATE_AGE_MS}, so one early event is not a huge
   * rate). A key that started later than the summary reads low for a half-life or so; a change
   * in rate shows within about one. NaN when counts never decay.
   */
  perMinute(count: number): number {
    if (this.#halfLifeMs <= 0) return Number.NaN;
    const age = Math.max(MIN_RATE_AGE_MS, this.#clock.now() - this.#started);
    const span = (this.#halfLifeMs / Math.LN2) * (1 - 2 ** (-age / this.#halfLifeMs));
    return (count * 60_000) / span;
  }

  /** What it holds: tracked keys (≤ k) and sketch counters (fixed). */
  stats(): { tracked: number; counters: number } {
    return { tracked: this.#index.size, counters: this.#counters.length };
  }

  /**
   * Counts `weight` for `key`. Why a heavy key is never lost: a key leaves the heap only as its
   * minimum, replaced by a larger estimate, so a key missing at the end means k others have
   * estimates at least its count; estimates over-count by at most the sketch error, so those k
   * keys plus it would add up to more than the total.
   */
  add(key: string, weight = 1): void {
    this.#rescale();
    const scaled = weight * this.#scale();
    this.#total += scaled;
    const estimate = this.#sketchAdd(key, scaled);
    const at = this.#index.get(key);
    if (at !== undefined) {
      (this.#heap[at] as HeavyHitter).count = estimate;
      this.#down(at);
      return;
    }
    if (this.#heap.length < this.k) {
      this.#heap.push({ key, count: estimate });
      this.#index.set(key, this.#heap.length - 1);
      this.#up(this.#heap.length - 1);
      return;
    }
    const min = this.#heap[0] as HeavyHitter;
    if (estimate <= min.count) return;
    this.#index.delete(min.key);
    this.#heap[0] = { key, count: estimate };
    this.#index.set(key, 0);
    this.#down(0);
  }

  /** The top keys, largest first, with their decayed counts (keys cut to 200 characters for display). */
  top(): HeavyHitter[] {
    this.#rescale();
    const scale = this.#scale();
    return [...this.#heap]
      .sort((a, b) => b.count - a.count)
      .map((h) => ({
        key: h.key.length > MAX_KEY_CHARS ? `${h.key.slice(0, MAX_KEY_CHARS)}…` : h.key,
        count: h.count / scale,
      }));
  }

  /** The weight an event entering now gets (1 at the landmark, 2 one half-life after it). */
  #scale(): number {
    if (this.#halfLifeMs <= 0) return 1;
    return 2 ** ((this.#clock.now() - this.#landmark) / this.#halfLifeMs);
  }

  /** Conservative update: raise only the rows at the minimum; returns the new estimate. */
  #sketchAdd(key: string, weight: number): number {
    const h1 = fnv(key, 0);
    const h2 = fnv(key, 0x9e3779b9) | 1;
    const cells = new Array<number>(this.#depth);
    let min = Number.POSITIVE_INFINITY;
    for (let row = 0; row < this.#depth; row++) {
      const cell = row * this.#width + (((h1 + Math.imul(row, h2)) >>> 0) % this.#width);
      cells[row] = cell;
      min = Math.min(min, this.#counters[cell] as number);
    }
    const estimate = min + weight;
    for (const cell of cells) if ((this.#counters[cell] as number) < estimate) this.#counters[cell] = estimate;
    return estimate;
  }

  /**
   * Moves the landmark forward by whole half-lives, halving every stored value as often (the
   * same factor for all: order is kept, and reads are unchanged).
   */
  #rescale(): void {
    if (this.#halfLifeMs <= 0) return;
    const now = this.#clock.now();
    const halvings = Math.floor((now - this.#landmark) / this.#halfLifeMs);
    if (halvings <= 0) return;
    this.#landmark += halvings * this.#halfLifeMs;
    const factor = 2 ** -Math.min(halvings, 1100);
    for (let i = 0; i < this.#counters.length; i++) this.#counters[i] = (this.#counters[i] as number) * factor;
    for (const h of this.#heap) h.count *= factor;
    this.#total *= factor;
    // Keys decayed to nothing are no longer "limited right now".
    if (this.#heap.every((h) => h.count < 0.01)) {
      this.#heap.length = 0;
      this.#index.clear();
    }
  }

  #swap(i: number, j: number): void {
    const a = this.#heap[i] as HeavyHitter;
    const b = this.#heap[j] as HeavyHitter;
    this.#heap[i] = b;
    this.#heap[j] = a;
    this.#index.set(b.key, i);
    this.#index.set(a.key, j);
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#heap[parent] as HeavyHitter).count <= (this.#heap[i] as HeavyHitter).count) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#heap.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && (this.#heap[l] as HeavyHitter).count < (this.#heap[m] as HeavyHitter).count) m = l;
      if (r < n && (this.#heap[r] as HeavyHitter).count < (this.#heap[m] as HeavyHitter).count) m = r;
      if (m === i) return;
      this.#swap(i, m);
      i = m;
    }
  }
}
