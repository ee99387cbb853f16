/**
 * Values that may or may not be promises: the in-process store and synchronous hooks answer
 * plain values, and the middleware stays synchronous (no microtask) until something is async.
 */
import type { MaybePromise } from "./options.ts";

/** True when `value` is a promise (or any thenable). */
export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/**
 * Applies `fn` to a value or a promise of it, staying synchronous for plain values. (Not named
 * `then`: a module exporting `then` is itself a thenable, and `import()` would call it.)
 */
export function andThen<T, U>(value: MaybePromise<T>, fn: (v: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(fn) : fn(value);
}
