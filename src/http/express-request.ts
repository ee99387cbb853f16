/**
 * `req.rateLimit` on Express without the cost of a new property per request. Express gives every
 * request a new prototype (`app.request`) before any middleware runs, and V8 then adds an own
 * property through its runtime on each request (a new hidden class, descriptor copies, uncached
 * lookups): several microseconds, more than the rest of sluice's check. Declared once as an
 * accessor on that prototype (Express's documented extension point), the value is kept in a
 * WeakMap by request instead, and reads and writes stay `req.rateLimit` for every middleware.
 */
import { IncomingMessage } from "node:http";
import type { Decision } from "../algorithms/decision.ts";

/** Each request's `rateLimit`, for the requests whose prototype has the accessor. */
const decisions = new WeakMap<object, Decision | undefined>();

/** The accessor: `req.rateLimit` reads and writes the request's entry. */
const accessor: PropertyDescriptor = {
  get(this: object): Decision | undefined {
    return decisions.get(this);
  },
  set(this: object, value: Decision | undefined): void {
    decisions.set(this, value);
  },
  configurable: true,
  enumerable: false,
};

/**
 * Declares `rateLimit` as an accessor on `prototype` when it is an Express app's request
 * prototype: one that inherits from Node's `IncomingMessage.prototype` (never that prototype
 * itself, nor `Object.prototype` under a hand-made request), unless something on its chain
 * already has the name (another library's own declaration is left as it is).
 */
export function declareRateLimit(prototype: object | null): void {
  if (
    prototype === null ||
    !Object.prototype.isPrototypeOf.call(IncomingMessage.prototype, prototype) ||
    "rateLimit" in prototype ||
    !Object.isExtensible(prototype)
  ) {
    return;
  }
  Object.defineProperty(prototype, "rateLimit", accessor);
}
