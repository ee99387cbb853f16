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
  #at: number[] = [];
  #key: string[] = [];
  #cost: number[] = [];
  #allowed: boolean[][] = [];
  #head = 0;
  #latest = Number.NEGATIVE_INFINITY;
  /** The latest instant of an event dropped for room (not for age). */
  #droppedUpTo = Number.NEGATIVE_INFINITY;
  #zoom: Zoom | undefined = undefined;

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Records one event of the trace and every algorithm's decision on it. */
  record(at: number, key: string, cost: number, allowed: boolean[]): void {
    this.#latest = Math.max(this.#latest, at);
    this.#at.push(at);
    this.#key.push(key);
    this.#cost.push(cost);
    this.#allowed.push(allowed);
    const zoom = this.#zoom;
    if (zoom !== undefined && key === zoom.key && at <= zoom.boundary + zoom.windowMs) {
      zoom.events.push({ at, cost, allowed });
    }
    while (this.#head < this.#at.length && (this.#at[this.#head] as number) < this.#latest - 3 * this.#windowMs) {
      this.#head++;
    }
    while (this.#at.length - this.#head > MAX_RECENT) {
      this.#droppedUpTo = Math.max(this.#droppedUpTo, this.#at[this.#head] as number);
      this.#head++;
    }
    if (this.#head > 4096 && this.#head * 2 > this.#at.length) {
      this.#at = this.#at.slice(this.#head);
      this.#key = this.#key.slice(this.#head);
      this.#cost = this.#cost.slice(this.#head);
      this.#allowed = this.#allowed.slice(this.#head);
      this.#head = 0;
    }
  }

  /** A new highest peak was reached at `at` for `key` (after `record` of that event): capture around it. */
  centre(at: number, key: string): void {
    const w = this.#windowMs;
    const boundary = Math.floor(at / w) * w;
    const from = boundary - 2 * w;
    const events: ZoomEvent[] = [];
    for (let i = this.#head; i < this.#at.length; i++) {
      const t = this.#at[i] as number;
      if (this.#key[i] === key && t >= from && t <= boundary + w) {
        events.push({ at: t, cost: this.#cost[i] as number, allowed: this.#allowed[i] as boolean[] });
      }
    }
    this.#zoom = { key, boundary, windowMs: w, events, complete: this.#droppedUpTo < from };
  }

  /** The capture, once a peak was seen. */
  result(): Zoom | undefined {
    return this.#zoom;
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
