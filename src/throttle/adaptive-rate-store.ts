/**
 * The adaptive rate's factor, kept in the throttle's store so a shared store shares it with the
 * fleet. It is a token bucket of SCALE units per key that refills at `recoverPerSecond` × SCALE
 * a second: its level is the factor, the refill is the additive recovery, the capacity is the
 * ceiling of 1, and a cut is a `penalty` of the units between the level and the cut level. No
 * new store operation, so every store carries it.
 *
 * Each process reads the factor at most every `refreshMs` per key (and at once when a permit is
 * refused by a pause, the sign of a 429 somewhere in the fleet), and between reads recovers it
 * locally as the bucket does. A job then takes `cost / factor` units of the rate
 * ({@link scaledCost}): the same shared rate, spent faster, so the fleet slows as one.
 */
import type { Decision } from "../algorithms/decision.ts";
import { type Clock, systemClock } from "../core/clock.ts";
import type { Store } from "../core/store.ts";
import { createLimiter, type Limiter, type LimiterOptions } from "../limiter.ts";
import { type AdaptiveParams, afterCut, bounded, recovered, scaledCost } from "./adaptive-rate.ts";

/** Units of the factor's bucket: the factor's resolution is 1 / SCALE. */
export const SCALE = 10_000;
/** Keys whose factor a process remembers before it forgets those at the full rate. */
const MAX_ENTRIES = 10_000;

interface Entry {
  /** The factor as last read or set, at `at`. */
  factor: number;
  at: number;
  /** When the store was last asked (-Infinity: never). */
  readAt: number;
  reading: boolean;
  /** The fraction of a unit carried to the next job (scaledCost). */
  owed: number;
  /** Until then a 429 of this key does not cut again (it belongs to the pause that already cut). */
  cutUntil: number;
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === "function";
}

/** The fleet's adaptive factor per key, and the rate limiter that spends units by it. */
export class AdaptiveRate {
  readonly #bucket: Limiter;
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;

  constructor(
    store: Store,
    name: string | undefined,
    clock: Clock | undefined,
    readonly params: AdaptiveParams,
    private readonly maxCost: number,
  ) {
    this.#clock = clock ?? systemClock;
    const o: LimiterOptions = { store };
    if (clock !== undefined) o.clock = clock;
    if (name !== undefined) o.name = `throttle:${name}:adaptive`;
    this.#bucket = createLimiter(
      { algorithm: "token-bucket", capacity: SCALE, refillPerSecond: SCALE * params.recoverPerSecond },
      o,
    );
  }

  /** The factor of `key` as this process knows it now (asks the store when the last read is old). */
  factor(key: string): number {
    const e = this.#entry(key);
    const now = this.#clock.now();
    if (now - e.readAt >= this.params.refreshMs) void this.#read(key, e);
    return recovered(e.factor, now - e.at, this.params);
  }

  /** Reads `key`'s factor from the store (at once on in-process stores). */
  refresh(key: string): void | Promise<void> {
    return this.#read(key, this.#entry(key));
  }

  /** A 429 for `key` that paused it for `pauseMs`: cuts the fleet's factor (once per pause; at once on in-process stores). */
  cut(key: string, pauseMs: number): void | Promise<void> {
    const e = this.#entry(key);
    const now = this.#clock.now();
    if (now < e.cutUntil) return;
    e.cutUntil = now + pauseMs;
    const withState = (state: Decision | null): void | Promise<void> => {
      const level = state === null ? SCALE : state.remaining + 1;
      const target = Math.round(afterCut(bounded(level / SCALE, this.params), this.params) * SCALE);
      const done = () => this.#set(e, target / SCALE, this.#clock.now());
      // Units above the cut level are taken; a level already below it (a concurrent cut) is left.
      if (level <= target) return done();
      const taken = this.#bucket.penalty(key, level - target);
      return isPromise(taken) ? taken.then(done) : done();
    };
    const state = this.#bucket.get(key);
    return isPromise(state) ? state.then(withState) : withState(state);
  }

  /**
   * The units a job of `cost` takes now (`cost / factor`, with the carried fraction), for the
   * fleet queue, whose grants do not pass through {@link wrap}'s `tryAcquire`: the ticket carries
   * them. The fraction is carried at once (a ticket cancelled later does not give it back).
   */
  take(key: string, cost: number): { cost: number; penalty: number } {
    const e = this.#entry(key);
    const { take, extra, owed } = scaledCost(cost, this.factor(key), e.owed, this.maxCost);
    e.owed = owed;
    return { cost: take, penalty: extra };
  }

  /** `rate` spending `cost / factor` units per job; every other call passes through. */
  wrap(rate: Limiter): Limiter {
    const tryAcquire = (key: string, cost = 1): Decision | Promise<Decision> => {
      const e = this.#entry(key);
      const { take, extra, owed } = scaledCost(cost, this.factor(key), e.owed, this.maxCost);
      const decided = (d: Decision): Decision | Promise<Decision> => {
        if (d.allowed) {
          // A refusal took nothing: the carried fraction stays for the next try.
          e.owed = owed;
          // Units past what the rate holds at once: spent after the admission, so the next
          // job waits for them (a longer interval).
          // The admission stands whatever becomes of the penalty (a store without it, an outage).
          if (extra > 0) {
            try {
              const spent = rate.penalty(key, extra);
              if (isPromise(spent))
                return spent.then(
                  () => d,
                  () => d,
                );
            } catch {
              // Only the takes slow this rate.
            }
          }
        }
        // A pause somewhere in the fleet: a 429 may have cut the factor; read it before the pause ends.
        else if (d.banned === true) void this.refresh(key);
        return d;
      };
      const d = rate.tryAcquire(key, take);
      return isPromise(d) ? d.then(decided) : decided(d);
    };
    return new Proxy(rate, {
      get(target, prop, receiver) {
        if (prop === "tryAcquire") return tryAcquire;
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** @internal Keys whose factor this process remembers (bounded: see MAX_ENTRIES). */
  get size(): number {
    return this.#entries.size;
  }

  /** Closes the factor's limiter. */
  close(): void {
    this.#bucket.close();
  }

  #entry(key: string): Entry {
    let e = this.#entries.get(key);
    if (e === undefined) {
      if (this.#entries.size >= MAX_ENTRIES) this.#forget();
      e = { factor: 1, at: this.#clock.now(), readAt: Number.NEGATIVE_INFINITY, reading: false, owed: 0, cutUntil: 0 };
      this.#entries.set(key, e);
    }
    return e;
  }

  /** Forgets keys back at the full rate (their next job reads the store again), else the oldest. */
  #forget(): void {
    const now = this.#clock.now();
    for (const [key, e] of this.#entries) {
      if (!e.reading && recovered(e.factor, now - e.at, this.params) >= 1) this.#entries.delete(key);
    }
    if (this.#entries.size >= MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  #set(e: Entry, factor: number, at: number): void {
    e.factor = bounded(factor, this.params);
    e.at = at;
    e.readAt = at;
  }

  #read(key: string, e: Entry): void | Promise<void> {
    if (e.reading) return;
    e.reading = true;
    const at = this.#clock.now();
    const apply = (state: Decision | null) => {
      e.reading = false;
      this.#set(e, state === null ? 1 : (state.remaining + 1) / SCALE, at);
    };
    let state: Decision | null | Promise<Decision | null>;
    try {
      state = this.#bucket.get(key);
    } catch {
      // The store is down: keep the factor this process knows, and ask again after refreshMs.
      e.reading = false;
      e.readAt = at;
      return;
    }
    if (!isPromise(state)) return apply(state);
    return state.then(apply, () => {
      e.reading = false;
      e.readAt = at;
    });
  }
}
