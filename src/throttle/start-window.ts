/**
 * Where a task's start lands against its rate unit (issue 32). A store decides a grant on its
 * own clock (Redis TIME, a host's clock) and the task starts later in this process: a grant heard
 * late (a PUBLISH or a reply read by a loaded event loop) or one that waited for the loop can start
 * in the next fixed window while its unit counts in the one before. A user's checker sees only the
 * tasks' starts, so a start that lands in another window than its unit moves the unit there first
 * (the runner's restamp), judged on the store's clock as StoreClock estimates it. (Lateness for the
 * 20 ms rule still counts from when this process heard the grant, except for a shared store's
 * rolling rules: runner.ts `#late`, start-safe-rate.ts.)
 */
import type { AlgorithmSpec } from "../core/spec.ts";

/** How long a store-clock sample counts (ms): two buckets of it are kept, so a stepped clock is forgotten within twice this. */
const SAMPLE_SPAN_MS = 10_000;

/**
 * The store's clock against this process's: the largest `storeInstant − localArrival` of recent
 * answers (an answer is heard after the store decided it, so each sample is at most the true
 * offset; the quickest answer is the closest), and never below 0. On one machine the clocks are
 * one and every sample is the answer's delay below 0: a loaded machine (thread messages that all
 * took 4 ms or more) made the estimate a few ms behind and missed starts just past a window's
 * edge. A store truly behind this clock is taken as level with it: a start just before a window's
 * end then moves its unit (a store call) where it did not need to, never the other way.
 */
export class StoreClock {
  #current = Number.NEGATIVE_INFINITY;
  #previous = Number.NEGATIVE_INFINITY;
  #since = Number.NEGATIVE_INFINITY;

  /** The store decided something at `storeAt` (its clock) that this process heard at `localNow`. */
  sample(storeAt: number, localNow: number): void {
    if (!Number.isFinite(storeAt)) return;
    if (localNow - this.#since >= SAMPLE_SPAN_MS) {
      this.#previous = this.#current;
      this.#current = Number.NEGATIVE_INFINITY;
      this.#since = localNow;
    }
    const offset = storeAt - localNow;
    if (offset > this.#current) this.#current = offset;
  }

  /** The store's offset (store − local, ms, at least 0), 0 before any sample. */
  get offset(): number {
    return Math.max(0, this.#current, this.#previous);
  }
}

/** The window lengths of `rate`'s clock-aligned fixed windows (a window anchored at a key's first hit has edges only the store knows). */
export function fixedWindowsOf(rate: readonly AlgorithmSpec[] | undefined): number[] {
  const out: number[] = [];
  for (const spec of rate ?? []) {
    const s = spec as { algorithm: string; windowMs?: number; anchor?: string };
    if (s.algorithm === "fixed-window" && s.anchor !== "first" && s.windowMs !== undefined) out.push(s.windowMs);
  }
  return out;
}

/** Whether a unit counted at `unitAt` lies in another window of `windows` than the instant `at` (both on one clock). */
export function crossesWindow(windows: readonly number[], unitAt: number, at: number): boolean {
  for (const w of windows) if (Math.floor(unitAt / w) !== Math.floor(at / w)) return true;
  return false;
}

/** How many ms the instant `at` is before the start of the window of `windows` that holds `unitAt` (0: not before any). */
export function earlyBy(windows: readonly number[], unitAt: number, at: number): number {
  let most = 0;
  for (const w of windows) most = Math.max(most, Math.floor(unitAt / w) * w - at);
  return most;
}
