/**
 * What `compare` measures per algorithm, in one pass over the trace.
 *
 * - admitted / denied: requests (not units).
 * - peak: the most units admitted for one key in any rolling window of the nominal length,
 *   i.e. any half-open span (t − W, t]; the limit is N, so peak / N shows how far past the
 *   limit a boundary burst gets.
 * - retry hints: for each denied request with a finite `retryAfterMs` r, the same request is
 *   probed with `peek` at now + r − 1 and now + r, as if nothing else happened meanwhile.
 *   "exact" = denied at r − 1 and allowed at r; "early" = still denied at r (a client that
 *   obeyed the hint is refused again); "late" = already allowed at r − 1 (the client waited
 *   longer than needed). `Infinity` hints (cost above the limit) are counted as "never".
 *   Probing moves a clock forward and back, which a live limiter must never see (a sliding log
 *   prunes what a later `now` has expired), so probes run on a separate limiter rebuilt for the
 *   key from its admitted events since it was last fresh (`resetMs` says when that is).
 * - delay: leaky-bucket's `delayMs` for admitted requests (mean and max).
 * - series: admitted / denied per time bucket, for the charts.
 */
import { type AlgorithmSpec, createLimiter, type Limiter, ManualClock, type MemoryStore } from "../../index.ts";

/** Final figures for one algorithm. */
export interface RunResult {
  spec: AlgorithmSpec;
  admitted: number;
  denied: number;
  peak: number;
  retry: { exact: number; early: number; late: number; never: number };
  delay: { mean: number; max: number };
  /** Per bucket: [admitted, denied]. */
  series: Array<[number, number]>;
}

interface History {
  events: Array<[number, number]>;
  freshAt: number;
}

interface Window {
  times: number[];
  costs: number[];
  head: number;
  sum: number;
}

/** Runs one algorithm over events fed one by one. */
export class AlgorithmRun {
  readonly spec: AlgorithmSpec;
  readonly #clock = new ManualClock();
  readonly #limiter: Limiter<MemoryStore>;
  readonly #windowMs: number;
  readonly #bucketMs: number;
  readonly #windows = new Map<string, Window>();
  readonly #histories = new Map<string, History>();
  #admitted = 0;
  #denied = 0;
  #peak = 0;
  #retry = { exact: 0, early: 0, late: 0, never: 0 };
  #delaySum = 0;
  #delayMax = 0;
  #series: Array<[number, number]> = [];

  constructor(spec: AlgorithmSpec, windowMs: number, bucketMs: number) {
    this.spec = spec;
    this.#limiter = createLimiter(spec, { clock: this.#clock });
    this.#windowMs = windowMs;
    this.#bucketMs = bucketMs;
  }

  /** Decides one event; `offset` is its time relative to the trace start (for the series). */
  feed(at: number, key: string, cost: number, offset: number): void {
    this.#clock.set(at);
    const d = this.#limiter.tryAcquire(key, cost);
    const bucket = Math.max(0, Math.floor(offset / this.#bucketMs));
    while (this.#series.length <= bucket) this.#series.push([0, 0]);
    const cell = this.#series[bucket] as [number, number];
    if (d.allowed) {
      this.#admitted++;
      cell[0]++;
      this.#delaySum += d.delayMs;
      if (d.delayMs > this.#delayMax) this.#delayMax = d.delayMs;
      this.#track(at, key, cost);
      this.#remember(at, key, cost, d.resetMs);
      return;
    }
    this.#denied++;
    cell[1]++;
    const r = d.retryAfterMs;
    if (!Number.isFinite(r)) {
      this.#retry.never++;
      return;
    }
    this.#probe(at, key, cost, r);
  }

  /** Keeps the admitted events since the key was last equivalent to a fresh one. */
  #remember(at: number, key: string, cost: number, resetMs: number): void {
    let h = this.#histories.get(key);
    if (h === undefined) {
      h = { events: [], freshAt: at };
      this.#histories.set(key, h);
    }
    if (at >= h.freshAt) h.events = [];
    h.events.push([at, cost]);
    h.freshAt = at + resetMs;
  }

  /** Classifies a retry hint on a throwaway limiter holding the same state for `key`. */
  #probe(at: number, key: string, cost: number, r: number): void {
    const clock = new ManualClock();
    const probe = createLimiter(this.spec, { clock });
    const h = this.#histories.get(key);
    if (h !== undefined && at < h.freshAt) {
      for (const [t, c] of h.events) {
        clock.set(t);
        probe.tryAcquire(key, c);
      }
    }
    // The earlier instant first: a probe must never follow one at a later time.
    const passes = (t: number) => {
      clock.set(t);
      return probe.peek(key, cost).allowed;
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
    if (w.sum > this.#peak) this.#peak = w.sum;
    if (w.head > 1024 && w.head * 2 > w.times.length) {
      w.times = w.times.slice(w.head);
      w.costs = w.costs.slice(w.head);
      w.head = 0;
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
      series: this.#series.map(([a, d]) => [a, d]),
    };
  }
}
