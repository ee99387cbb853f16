/**
 * What `compare` measures per algorithm, in one pass over the trace, in work linear in it.
 *
 * - admitted / denied: requests (not units).
 * - peak: the most units admitted for one key in any rolling window of the nominal length,
 *   i.e. any half-open span (t − W, t]; the limit is N, so peak / N shows how far past the
 *   limit a boundary burst gets.
 * - retry hints: for each denied request with a finite `retryAfterMs` r, the same request is
 *   probed at now + r − 1 and now + r against the key's record as it stands, as if nothing
 *   else happened meanwhile. "exact" = denied at r − 1 and allowed at r; "early" = still denied
 *   at r (a client that obeyed the hint is refused again); "late" = already allowed at r − 1
 *   (the client waited longer than needed). `Infinity` hints (cost above the limit) are
 *   counted as "never". A probe is a peek on the record (`decideRule`, the one decision path),
 *   which changes nothing, so it costs two steps, not a replay of the key's history.
 * - delay: leaky-bucket's `delayMs` for admitted requests (mean and max).
 * - series: admitted / denied per time bucket, for the charts.
 * - steps: decisions taken (checks and probes): at most 3 per event.
 *
 * Records are kept per key in a Map and dropped once fresh (swept every {@link SWEEP_EVERY}
 * events), so memory follows the keys active within a window, not the trace's length.
 */

import { decideRule } from "../../core/decide-rule.ts";
import { type CompiledRule, compileRule, createRecord, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
import type { AlgorithmSpec } from "../../index.ts";

/** Final figures for one algorithm. */
export interface RunResult {
  spec: AlgorithmSpec;
  admitted: number;
  denied: number;
  peak: number;
  retry: { exact: number; early: number; late: number; never: number };
  delay: { mean: number; max: number };
  /** Decisions taken, probes included (the work done: at most 3 per event). */
  steps: number;
  /** Per bucket: [admitted, denied]. */
  series: Array<[number, number]>;
}

/** Where an algorithm's peak was first reached: the instant and the key (for the zoomed chart). */
export interface PeakAt {
  at: number;
  key: string;
}

interface Window {
  times: number[];
  costs: number[];
  head: number;
  sum: number;
}

/** Events between sweeps of fresh records and empty windows. */
export const SWEEP_EVERY = 65_536;

/** Runs one algorithm over events fed one by one. */
export class AlgorithmRun {
  readonly spec: AlgorithmSpec;
  readonly #rule: CompiledRule;
  readonly #records = new Map<string, RuleRecord>();
  readonly #windowMs: number;
  readonly #windows = new Map<string, Window>();
  #fed = 0;
  #admitted = 0;
  #denied = 0;
  #peak = 0;
  #peakAt: PeakAt | undefined = undefined;
  #steps = 0;
  #retry = { exact: 0, early: 0, late: 0, never: 0 };
  #delaySum = 0;
  #delayMax = 0;
  #series: Array<[number, number]> = [];

  constructor(spec: AlgorithmSpec, windowMs: number) {
    this.spec = spec;
    this.#rule = compileRule([spec]);
    this.#windowMs = windowMs;
  }

  /** Units admitted in the busiest rolling window so far. */
  get peak(): number {
    return this.#peak;
  }

  /** When and for which key {@link peak} was first reached (undefined before any admission). */
  get peakAt(): PeakAt | undefined {
    return this.#peakAt;
  }

  /** Decides one event, counted in chart column `bucket`; returns whether it was admitted. */
  feed(at: number, key: string, cost: number, bucket: number): boolean {
    let record = this.#records.get(key);
    if (record === undefined) {
      record = createRecord(this.#rule);
      this.#records.set(key, record);
    }
    this.#steps++;
    const d = decideRule(this.#rule, record, at, cost, "check");
    while (this.#series.length <= bucket) this.#series.push([0, 0]);
    const cell = this.#series[bucket] as [number, number];
    if (d.allowed) {
      this.#admitted++;
      cell[0]++;
      this.#delaySum += d.delayMs;
      if (d.delayMs > this.#delayMax) this.#delayMax = d.delayMs;
      this.#track(at, key, cost);
    } else {
      this.#denied++;
      cell[1]++;
      const r = d.retryAfterMs;
      if (Number.isFinite(r)) this.#probe(record, at, cost, r);
      else this.#retry.never++;
    }
    if (++this.#fed % SWEEP_EVERY === 0) this.#sweep(at);
    return d.allowed;
  }

  /** Merges chart columns pairwise (the command doubled the column width). */
  halveSeries(): void {
    const merged: Array<[number, number]> = [];
    for (let i = 0; i < this.#series.length; i += 2) {
      const a = this.#series[i] as [number, number];
      const b = this.#series[i + 1] ?? [0, 0];
      merged.push([a[0] + b[0], a[1] + b[1]]);
    }
    this.#series = merged;
  }

  /** Classifies a retry hint with two peeks on the key's record (peeks change nothing). */
  #probe(record: RuleRecord, at: number, cost: number, r: number): void {
    const passes = (t: number) => {
      this.#steps++;
      return decideRule(this.#rule, record, t, cost, "peek").allowed;
    };
    if (r >= 1 && passes(at + r - 1)) this.#retry.late++;
    else if (!passes(at + r)) this.#retry.early++;
    else this.#retry.exact++;
  }

  #track(at: number, key: string, cost: number): void {
    let w = this.#windows.get(key);
    if (w === undefined) {
      w = { times: [], costs: [], head: 0, sum: 0 };
      this.#windows.set(key, w);
    }
    // Out-of-order traces are measured as if each event came no earlier than the one before.
    const t = Math.max(at, w.times[w.times.length - 1] ?? at);
    w.times.push(t);
    w.costs.push(cost);
    w.sum += cost;
    while (w.head < w.times.length && (w.times[w.head] as number) <= t - this.#windowMs) {
      w.sum -= w.costs[w.head] as number;
      w.head++;
    }
    if (w.sum > this.#peak) {
      this.#peak = w.sum;
      this.#peakAt = { at: t, key };
    }
    if (w.head > 1024 && w.head * 2 > w.times.length) {
      w.times = w.times.slice(w.head);
      w.costs = w.costs.slice(w.head);
      w.head = 0;
    }
  }

  /** Drops records fresh at `now` and windows that no longer hold an admission within W. */
  #sweep(now: number): void {
    for (const [key, record] of this.#records) {
      if (recordFreshAt(this.#rule, record) <= now) this.#records.delete(key);
    }
    for (const [key, w] of this.#windows) {
      if ((w.times[w.times.length - 1] as number) <= now - this.#windowMs) this.#windows.delete(key);
    }
  }

  /** The figures so far. */
  result(): RunResult {
    return {
      spec: this.spec,
      admitted: this.#admitted,
      denied: this.#denied,
      peak: this.#peak,
      retry: { ...this.#retry },
      delay: { mean: this.#admitted === 0 ? 0 : this.#delaySum / this.#admitted, max: this.#delayMax },
      steps: this.#steps,
      series: this.#series.map(([a, d]) => [a, d]),
    };
  }
}
