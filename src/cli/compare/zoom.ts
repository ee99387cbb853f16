/**
 * The events around the busiest window boundary of a compare run, for the zoomed chart: the
 * key and the boundary where a peak (the command follows fixed-window's) was first reached,
 * and that key's events from two windows before the boundary to one after, with each
 * algorithm's decision. The trace is read once and never held whole: only the last three
 * windows of events are kept (at most {@link MAX_RECENT}), so memory is bounded.
 */

/** Most recent events kept while looking for the peak (beyond it, the oldest go first). */
export const MAX_RECENT = 200_000;

/** One captured event: its instant, units and, per algorithm in run order, whether it was admitted. */
export interface ZoomEvent {
  at: number;
  cost: number;
  allowed: boolean[];
}

/** What the zoomed chart draws. */
export interface Zoom {
  /** The key whose peak it shows. */
  key: string;
  /** The window boundary nearest before the peak (a multiple of the window, as fixed-window aligns). */
  boundary: number;
  windowMs: number;
  /** The key's events in [boundary − 2 windows, boundary + 1 window], in trace order. */
  events: ZoomEvent[];
  /** False when some of those events were pushed out of the recent buffer (a trace too dense to keep). */
  complete: boolean;
}

/** Keeps recent events and captures the ones around the peak as the trace streams by. */
export class ZoomCapture {
  readonly #windowMs: number;
  readonly #runs: number;
  // A ring of the recent events: slots [head, tail) modulo MAX_RECENT, allocated once.
  readonly #at = new Float64Array(MAX_RECENT);
  readonly #cost = new Float64Array(MAX_RECENT);
  /** Per event, bit i set when algorithm i admitted it. */
  readonly #allowed = new Int32Array(MAX_RECENT);
  readonly #key = new Array<string>(MAX_RECENT);
  #head = 0;
  #tail = 0;
  #latest = Number.NEGATIVE_INFINITY;
  /** The latest instant of an event dropped for room (not for age). */
  #droppedUpTo = Number.NEGATIVE_INFINITY;
  /** The copied span, kept raw (a peak may move many times: objects are made once, in `result`). */
  #span:
    | { key: string; boundary: number; at: number[]; cost: number[]; allowed: number[]; complete: boolean }
    | undefined = undefined;
  /**
   * The latest peak, not yet copied out of the ring: a rising peak calls `centre` once per
   * unit, so the copy waits until the span is over (or the result is asked for), once.
   */
  #pending: { key: string; boundary: number } | undefined = undefined;

  /** `runs`: how many algorithms decide each event (at most 31, bits of one integer). */
  constructor(windowMs: number, runs: number) {
    this.#windowMs = windowMs;
    this.#runs = runs;
  }

  #bits(mask: number): boolean[] {
    return Array.from({ length: this.#runs }, (_, i) => (mask & (1 << i)) !== 0);
  }

  /** Records one event of the trace and every algorithm's decision on it: bit i of `allowed` for algorithm i. */
  record(at: number, key: string, cost: number, allowed: number): void {
    this.#latest = Math.max(this.#latest, at);
    if (this.#tail - this.#head === MAX_RECENT) {
      this.#droppedUpTo = Math.max(this.#droppedUpTo, this.#at[this.#head % MAX_RECENT] as number);
      this.#head++;
    }
    const slot = this.#tail % MAX_RECENT;
    this.#at[slot] = at;
    this.#cost[slot] = cost;
    this.#allowed[slot] = allowed;
    this.#key[slot] = key;
    this.#tail++;
    const pending = this.#pending;
    const span = this.#span;
    if (pending !== undefined) {
      // Past the span: copy it out (this event included if in it) before it ages out of the ring.
      if (this.#latest > pending.boundary + this.#windowMs) this.#capture();
    } else if (span !== undefined && key === span.key && at <= span.boundary + this.#windowMs) {
      // A late (out-of-order) event of a span already copied.
      span.at.push(at);
      span.cost.push(cost);
      span.allowed.push(allowed);
    }
    const oldest = this.#latest - 3 * this.#windowMs;
    while (this.#head < this.#tail && (this.#at[this.#head % MAX_RECENT] as number) < oldest) this.#head++;
  }

  /** A new highest peak was reached at `at` for `key` (after `record` of that event): capture around it. */
  centre(at: number, key: string): void {
    this.#pending = { key, boundary: Math.floor(at / this.#windowMs) * this.#windowMs };
  }

  /** Copies the pending span's events out of the ring. */
  #capture(): void {
    const { key, boundary } = this.#pending as { key: string; boundary: number };
    this.#pending = undefined;
    const w = this.#windowMs;
    const from = boundary - 2 * w;
    const span = { key, boundary, at: [] as number[], cost: [] as number[], allowed: [] as number[], complete: true };
    for (let i = this.#head; i < this.#tail; i++) {
      const slot = i % MAX_RECENT;
      const t = this.#at[slot] as number;
      if (this.#key[slot] === key && t >= from && t <= boundary + w) {
        span.at.push(t);
        span.cost.push(this.#cost[slot] as number);
        span.allowed.push(this.#allowed[slot] as number);
      }
    }
    span.complete = this.#droppedUpTo < from;
    this.#span = span;
  }

  /** The capture, once a peak was seen. */
  result(): Zoom | undefined {
    if (this.#pending !== undefined) this.#capture();
    const span = this.#span;
    if (span === undefined) return undefined;
    const events = span.at.map((at, i) => ({
      at,
      cost: span.cost[i] as number,
      allowed: this.#bits(span.allowed[i] as number),
    }));
    return { key: span.key, boundary: span.boundary, windowMs: this.#windowMs, events, complete: span.complete };
  }
}

/**
 * Units admitted by algorithm `run` in the rolling window (t − W, t], as a step function over
 * [from, to]: the points where it changes, each [instant, count from then on], starting at `from`.
 */
export function rollingCounts(zoom: Zoom, run: number, from: number, to: number): Array<[number, number]> {
  const w = zoom.windowMs;
  const deltas = new Map<number, number>();
  let count = 0;
  for (const e of zoom.events) {
    if (e.allowed[run] !== true) continue;
    // In the window at `from` already: counted from the start; otherwise it enters at e.at.
    if (e.at <= from && e.at > from - w) count += e.cost;
    else if (e.at > from) deltas.set(e.at, (deltas.get(e.at) ?? 0) + e.cost);
    // It leaves once t − W reaches it.
    if (e.at + w > from) deltas.set(e.at + w, (deltas.get(e.at + w) ?? 0) - e.cost);
  }
  const points: Array<[number, number]> = [[from, count]];
  for (const t of [...deltas.keys()].sort((a, b) => a - b)) {
    if (t > to) break;
    count += deltas.get(t) as number;
    points.push([t, count]);
  }
  return points;
}
