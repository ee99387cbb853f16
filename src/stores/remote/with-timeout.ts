/**
 * The one timeout race in sluice. Stores and the service bound every call to a remote store
 * with it, so no request waits on a dead server, and the timer never outlives the race.
 */

import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";

/** The default bound on one call to a remote store's server, in ms (RedisStore, ClusterStore, createClient). */
export const DEFAULT_TIMEOUT_MS = 1000;

/** Checks a store's `timeoutMs` option: a positive number of ms, {@link DEFAULT_TIMEOUT_MS} when unset. */
export function checkTimeoutMs(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new ArgumentError(`\`timeoutMs\` must be a positive number of ms (got ${describeValue(value)})`);
  }
  return value;
}

/** The StoreError (code `ERR_STORE_TIMEOUT`) of a call `who` did not answer within `timeoutMs`. */
export function timeoutError(who: string, timeoutMs: number): StoreError {
  return new StoreError(`${who} did not answer within timeoutMs (${timeoutMs} ms)`, { timeout: true });
}

/**
 * Local monotonic epoch-like ms (never steps back): what the remote stores measure deadlines
 * and clock offsets on.
 */
export function localMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Settles with `promise` if it settles within `ms`; otherwise with `onTimeout()` (which may
 * throw or reject to fail the race). The timer is cleared as soon as either side wins, and a
 * late rejection of `promise` is swallowed (nobody is waiting for it any more).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      try {
        resolve(onTimeout());
      } catch (error) {
        reject(error);
      }
    }, ms);
    promise.then(
      (value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
