/**
 * Handles on a middleware's state: `reset(key)`, `peek(key)`, `get(key)` reach the very state
 * the middleware counts (its store key namespaces included), so "unlock this account" after a
 * password reset is `limiter.reset("alice")`, not a guess at how the middleware names keys.
 */
import type { Decision } from "../algorithms/decision.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError } from "../core/errors.ts";
import type { RuleSpec } from "../core/spec.ts";
import { clientKey, storeKey } from "./client-key.ts";
import type { MaybePromise } from "./options.ts";

/** A client address, for a middleware whose `key` option may fall back to the address. */
export interface AddressRef {
  /** The peer address as a socket reports it (`203.0.113.5`, `::ffff:10.0.0.1`, `2001:db8::1`). */
  address: string;
}

/**
 * What the handles take: what your `key` option returns (or, without a `key` option, a client
 * address), or `{ address }` for an address when a `key` option is set.
 */
export type HandleKey = string | AddressRef;

/** Which rule shape / tier `peek` and `get` read. */
export interface PeekOptions {
  /** With a function `spec`: the resolved spec whose state to read (default: every shape seen, the tightest). */
  spec?: RuleSpec;
  /** With `service` + `rule`: the tier whose state to read (default: the rule's own spec). */
  tier?: string;
}

/** The handles every `rateLimit(...)` middleware object carries. */
export interface RateLimitHandles {
  /** Forgets the key's state (every rule shape and tier): its next request starts afresh. */
  reset(key: HandleKey): MaybePromise<void>;
  /** What a request under this key would be answered now (cost 1); changes nothing. */
  peek(key: HandleKey, options?: PeekOptions): MaybePromise<Decision>;
  /** The key's state now; `null` when the store holds nothing for it (where the limiter can tell). */
  get(key: HandleKey, options?: PeekOptions): MaybePromise<Decision | null>;
}

/**
 * The store key a handle argument names, exactly as the middleware derives it from a request:
 * addresses go through {@link clientKey} (IPv4-mapped folded, IPv6 grouped by `ipv6Subnet`)
 * into the address namespace; keys through {@link storeKey} into the key namespace.
 */
export function handleStoreKey(key: unknown, keyedByAddress: boolean, ipv6Subnet: number | undefined): string {
  if (typeof key === "object" && key !== null && typeof (key as AddressRef).address === "string") {
    return addressStoreKey((key as AddressRef).address, ipv6Subnet);
  }
  if (typeof key !== "string") {
    throw new ArgumentError(`a rate-limit handle takes a key string or { address } (got ${describeValue(key)})`);
  }
  return keyedByAddress ? addressStoreKey(key, ipv6Subnet) : storeKey(key, false);
}

function addressStoreKey(address: string, ipv6Subnet: number | undefined): string {
  // What the middleware does with a socket address it cannot parse: keys it as written.
  const options = ipv6Subnet === undefined ? {} : { ipv6Subnet };
  return storeKey(clientKey(address, undefined, options) ?? address, true);
}

/** Adds `engine`'s handles to a middleware function (or object) and returns it. */
export function withHandles<T extends object>(middleware: T, handles: RateLimitHandles): T & RateLimitHandles {
  return Object.assign(middleware, {
    reset: (key: HandleKey) => handles.reset(key),
    peek: (key: HandleKey, options?: PeekOptions) => handles.peek(key, options),
    get: (key: HandleKey, options?: PeekOptions) => handles.get(key, options),
  });
}
