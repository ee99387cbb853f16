/**
 * Counter series by label, at most `max` of them with a series of their own, chosen by traffic;
 * the rest count into one folded series ({@link FOLDED}). Each hit is counted once, in the
 * series its label has when it arrives, so the sum over all series is every hit, and each
 * series only grows while it is exported: a label that leaves the top stops being exported
 * (its later hits fold), and one that comes back starts again at 0, which Prometheus reads as
 * a new series (or a counter reset), never as a drop. The choice is made when `/metrics` is
 * rendered (`reselect`): a label without a series takes the place of the quietest one only
 * when its recent traffic is more than twice that one's, so near-equal labels do not swap
 * series at every scrape. Recent traffic halves at each choice; labels seen too rarely are
 * forgotten, so what is tracked stays within 4 × `max` labels however many a client sends.
 */

/** The label of the folded series: every label without a series of its own counts here. */
export const FOLDED = "(other)";

/** Default most labels with a series of their own, per family (rules, Envoy descriptor paths). */
export const DEFAULT_MAX_SERIES = 500;

/** Counters by label, bounded (see the module comment). */
export class TopSeries<C> {
  readonly max: number;
  readonly #make: () => C;
  /** Labels with a series of their own, and its counters. */
  readonly #own = new Map<string, C>();
  /** The folded series, created on its first hit. */
  #folded: C | undefined;
  /** Recent traffic by label (own or not), halved at each reselect. */
  readonly #recent = new Map<string, number>();

  constructor(max: number, make: () => C) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`most series must be a positive integer, got ${max}`);
    this.max = max;
    this.#make = make;
  }

  /** The counters `label`'s hits go into now (its own while it has a series, else the folded one), weighing `hits`. */
  cell(label: string, hits = 1): C {
    // A label spelled like the folded series counts in it: two series may not share a label.
    if (label === FOLDED) return (this.#folded ??= this.#make());
    const recent = this.#recent.get(label);
    if (recent !== undefined || this.#recent.size < 4 * this.max) this.#recent.set(label, (recent ?? 0) + hits);
    const own = this.#own.get(label);
    if (own !== undefined) return own;
    if (this.#own.size < this.max) {
      // Free room: first come, kept until busier labels need it.
      const cell = this.#make();
      this.#own.set(label, cell);
      return cell;
    }
    this.#folded ??= this.#make();
    return this.#folded;
  }

  /** The counters of `label` if it has a series of its own. */
  get(label: string): C | undefined {
    return this.#own.get(label);
  }

  /** Labels with a series of their own (the folded series not included). */
  get size(): number {
    return this.#own.size;
  }

  /** Gives the busiest recent labels series of their own (see the module comment). */
  reselect(): void {
    const waiting: Array<[string, number]> = [];
    for (const [label, hits] of this.#recent) if (!this.#own.has(label)) waiting.push([label, hits]);
    if (waiting.length > 0) {
      waiting.sort((a, b) => b[1] - a[1]);
      const quiet = [...this.#own.keys()].map((l): [string, number] => [l, this.#recent.get(l) ?? 0]);
      quiet.sort((a, b) => a[1] - b[1]);
      let q = 0;
      for (const [label, hits] of waiting) {
        const out = quiet[q];
        if (out === undefined || hits <= 2 * out[1]) break;
        this.#own.delete(out[0]);
        this.#own.set(label, this.#make());
        q++;
      }
    }
    for (const [label, hits] of this.#recent) {
      const half = hits / 2;
      if (half < 0.5 && !this.#own.has(label)) this.#recent.delete(label);
      else this.#recent.set(label, half);
    }
  }

  /** The series: each own label with its counters, then the folded one if it was ever hit. */
  *entries(): Generator<[string, C]> {
    yield* this.#own;
    if (this.#folded !== undefined) yield [FOLDED, this.#folded];
  }
}
