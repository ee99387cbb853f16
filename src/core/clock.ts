/**
 * Time for sluice. This is the only module that reads the system time: algorithms and stores
 * receive `now` as a number, so every decision is reproducible with a {@link ManualClock}.
 */

import { describeValue } from "./describe-value.ts";
import { ArgumentError } from "./errors.ts";
import { checkOptions } from "./options.ts";

/** A source of time in milliseconds. Every decision reads it exactly once. */
export interface Clock {
  /** Current time in milliseconds. */
  now(): number;
}

/** Largest delay `setTimeout` honours; longer waits are chained so durations of years work. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Wall-clock milliseconds that never run backwards. It is built on a monotonic source
 * (`monotonicNow` below: libuv's, as `performance.now()` reads it) anchored once to the epoch, so fixed windows still align to epoch
 * multiples while NTP steps and manual clock changes cannot move it back. A plain closure, not
 * a class with a private field: it is read on every decision, and the field access measured
 * ~10 ns more per read (bench/memory.mjs prints what a read costs).
 */
const origin = Math.floor(performance.timeOrigin);
const monotonic = performance;

/**
 * The monotonic reading as `performance.now()` gives it, but through `process.hrtime` where there
 * is one: the same clock (libuv's monotonic time), read for about 70 fewer instructions (Node's
 * `performance.now` checks its receiver with a `hasOwnProperty` on every call; callgrind). The
 * offset is taken once; it only places the same ticks on the `performance.now()` scale.
 */
const hrtime: (() => [number, number]) | undefined = globalThis.process?.hrtime?.bind(globalThis.process);
/** ms on libuv's monotonic clock (not indexed by destructuring: that walks the iterator protocol). */
const hrMs = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
const hrOffset = hrtime === undefined ? 0 : monotonic.now() - hrMs(hrtime());
const monotonicNow: () => number = hrtime === undefined ? () => monotonic.now() : () => hrMs(hrtime()) + hrOffset;

/** The default clock: epoch milliseconds (integers) from a monotonic source. */
export const systemClock: Clock = Object.freeze({ now: () => origin + Math.floor(monotonicNow()) });

/** Options of {@link coarseClock}. */
export interface CoarseClockOptions {
  /**
   * Reads served from one system-clock reading at most (default 1024), so a long synchronous
   * run (a batch of decisions in one event-loop turn) still sees time move.
   */
  maxReads?: number;
}

/** The default of {@link CoarseClockOptions.maxReads}. */
const DEFAULT_MAX_READS = 1024;

/**
 * An opt-in clock for hot paths where reading the time dominates a decision: it reads
 * {@link systemClock} at most once per event-loop turn and at most once per `maxReads` reads,
 * and answers every other read from that reading. Staleness bound: a reading is never older than
 * the current turn's run so far, nor than the last `maxReads - 1` reads; it never runs backwards.
 * Decisions are then exact at that granularity: requests within one turn are decided at the
 * instant the turn first read, as if they had all arrived then (a window boundary crossed
 * mid-turn takes effect on the next turn). A `setImmediate` marks the end of the turn. It is
 * NOT unref'd: an unref'd immediate does not stop libuv's poll phase from blocking, so a reading
 * taken in a timer callback was served, seconds later, to the I/O callbacks that ended the
 * block (an outside attack measured 1–6.3 s; a connection in a new window was refused). A
 * pending immediate makes the poll return at once; it delays an exit by one turn at most.
 */
export function coarseClock(options: CoarseClockOptions = {}): Clock {
  checkOptions(options, "coarseClock", ["maxReads"]);
  const maxReads = options.maxReads ?? DEFAULT_MAX_READS;
  if (!Number.isSafeInteger(maxReads) || maxReads < 1) {
    throw new ArgumentError(`coarseClock: \`maxReads\` must be a positive integer (got ${describeValue(maxReads)})`);
  }
  let reading = 0;
  let left = 0;
  let turnEnding = false;
  const endTurn = () => {
    left = 0;
    turnEnding = false;
  };
  /** A new reading, served for the next `maxReads - 1` reads and at most to the end of this turn. */
  const refresh = () => {
    // systemClock is monotonic, so a new reading is never behind the one it replaces.
    reading = systemClock.now();
    left = maxReads - 1;
    if (!turnEnding) {
      turnEnding = true;
      setImmediate(endTurn);
    }
    return reading;
  };
  // The served read is a few bytes of bytecode (the refresh is a call away), so V8 inlines it
  // into the decision it times.
  const clock = Object.freeze({ now: () => (left-- > 0 ? reading : refresh()) });
  ownClocks.add(clock);
  return clock;
}

/** Clocks made here, whose readings are finite ms by construction (their `now` needs no `this`). */
const ownClocks = new WeakSet<Clock>([systemClock]);

/** Whether `clock` is one of sluice's own (systemClock, a coarseClock): its readings need no checking. */
export function isOwnClock(clock: Clock): boolean {
  return ownClocks.has(clock);
}

/** A high-resolution monotonic reading in ms, for measuring how long something took (not for decisions). */
export function stopwatch(): number {
  return monotonicNow();
}

interface ManualTimer {
  at: number;
  fire: () => void;
}

/**
 * A clock that moves only when told to. Tests use it to check behaviour at exact instants
 * without sleeping; waits scheduled on it (e.g. by `acquire`) fire when it is advanced.
 *
 * @example const clock = new ManualClock(); clock.set(1000); clock.advance(500); clock.now() // 1500
 */
export class ManualClock implements Clock {
  #time: number;
  #timers: ManualTimer[] = [];

  /** Starts at `start` milliseconds (default 0). */
  constructor(start = 0) {
    this.#time = checkTime(start, "start");
  }

  /** Current manual time. */
  now(): number {
    return this.#time;
  }

  /** Moves the clock to `ms` (it may move backwards, to test clock steps) and fires due waits. */
  set(ms: number): this {
    this.#time = checkTime(ms, "ms");
    this.#fireDue();
    return this;
  }

  /** Moves the clock forward by `ms` and fires due waits. */
  advance(ms: number): this {
    // Backwards is `set`'s job: an advance by a negative amount is a test's sign error.
    if (checkTime(ms, "ms") < 0)
      throw new ArgumentError(`ManualClock.advance: \`ms\` must be ≥ 0 (got ${ms}); use set() to step back`);
    return this.set(this.#time + ms);
  }

  /** @internal Schedules `fire` for when the clock reaches `now() + ms`; returns a canceller. */
  schedule(ms: number, fire: () => void): () => void {
    const timer = { at: this.#time + ms, fire };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  #fireDue(): void {
    const due = this.#timers.filter((t) => t.at <= this.#time);
    if (due.length === 0) return;
    this.#timers = this.#timers.filter((t) => t.at > this.#time);
    due.sort((a, b) => a.at - b.at);
    for (const t of due) t.fire();
  }
}

function checkTime(value: number, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new ArgumentError(
      `ManualClock: \`${name}\` must be a finite number of milliseconds (got ${describeValue(value)})`,
    );
  }
  return value;
}

/**
 * Calls `fire` once `ms` milliseconds have passed as measured by `clock`; returns a canceller.
 * A {@link ManualClock} fires it when advanced; any other clock uses chained timers, so waits
 * longer than 2^31 ms do not overflow into an immediate timeout. `unref` lets the process exit
 * while only this timer is pending (for work that holds the process open by other means).
 */
export function after(clock: Clock, ms: number, fire: () => void, unref = false): () => void {
  if (clock instanceof ManualClock) return clock.schedule(ms, fire);
  let timer: ReturnType<typeof setTimeout>;
  // sluice's own clocks: the deadline on the source `systemClock` reads (one monotonic clock for
  // every wait and decision, precise below their ms). Any other clock measures its own waits: a
  // user's clock (a test's faked Date, a clock of its own) may run apart from the machine's.
  const read = isOwnClock(clock) ? monotonicNow : () => clock.now();
  const deadline = read() + ms;
  const arm = (wait: number) => {
    timer = setTimeout(check, Math.min(Math.max(0, Math.ceil(wait)), MAX_TIMER_MS));
    if (unref) timer.unref?.();
  };
  const check = () => {
    const left = deadline - read();
    if (left <= 0) fire();
    else arm(left);
  };
  // Never fired from inside this call, even when the process was descheduled past the deadline
  // before a timer was armed: the caller must hold the canceller before `fire` runs (the
  // throttle's wake-up stores it, and a wake that fired before it was stored left the key
  // asleep for good: jobs queued forever under load).
  arm(ms);
  return () => clearTimeout(timer);
}

/**
 * Resolves after `ms` milliseconds as measured by `clock` (see {@link after}), or rejects with
 * the signal's reason when aborted.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    if (ms <= 0) {
      resolve();
      return;
    }
    const onAbort = () => {
      cancel();
      reject(abortReason(signal as AbortSignal));
    };
    const cancel = after(clock, ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The rejection value for an aborted wait: the signal's own reason, else a standard AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted", "AbortError");
}
