/**
 * `createClient` options: checked up front, so a typo (`timeout` for `timeoutMs`) or a bad
 * URL fails at start-up with an ArgumentError naming it, not on the first request.
 */

import { describeValue } from "../core/describe-value.ts";
import { ArgumentError } from "../core/errors.ts";
import { type BreakerOptions, checkBreaker } from "../stores/remote/breaker.ts";
import {
  checkOnError,
  DEFAULT_POLICY,
  type FallbackLimiter,
  type FixedPolicy,
} from "../stores/remote/failure-policy.ts";
import { DEFAULT_TIMEOUT_MS } from "../stores/remote/with-timeout.ts";

/**
 * What a call answers when the service cannot (connection refused, reset, timeout, 5xx):
 * `"deny"` (default), `"allow"`, `"throw"` (reject with the StoreError), a fallback `Limiter`
 * (asked with the same key and cost), or a function building one fallback limiter per rule name.
 */
export type ClientOnError = FixedPolicy | FallbackLimiter | ((rule: string) => FallbackLimiter);

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** Base URL of the service, e.g. `http://127.0.0.1:8080` (http: or https:). */
  url: string | URL;
  /** Sent as `Authorization: Bearer <token>` (the service's `--token`). */
  token?: string;
  /** Longest a call waits for the service, in ms (default 1000); then `onError` answers. */
  timeoutMs?: number;
  /** What a call answers when the service fails or times out (default `"deny"`). */
  onError?: ClientOnError;
  /** Most checks sent in one request (default 1000, the service's `--max-batch` default). */
  maxBatch?: number;
  /** Most sockets kept open to the service (default 16). */
  maxSockets?: number;
  /** Circuit breaker, as RedisStore's: open after 5 consecutive failures, probe after 1 s; `false` to always try. */
  breaker?: BreakerOptions | false;
}

/** The options after checking, with defaults filled in. */
export interface ResolvedOptions {
  base: URL;
  token: string | undefined;
  timeoutMs: number;
  onError: ClientOnError;
  maxBatch: number;
  maxSockets: number;
  breaker: BreakerOptions | false | undefined;
}

const KEYS = new Set(["url", "token", "timeoutMs", "onError", "maxBatch", "maxSockets", "breaker"]);

function positiveInteger(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ArgumentError(`\`${name}\` must be a positive integer (got ${describeValue(value)})`);
  }
  return value;
}

/** Checks `options`; unknown keys and bad values throw ArgumentError naming them. */
export function resolveOptions(options: unknown): ResolvedOptions {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ArgumentError(`createClient options must be an object with a \`url\` (got ${describeValue(options)})`);
  }
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KEYS.has(key))
      throw new ArgumentError(`unknown createClient option \`${key}\` (expected ${[...KEYS].join(", ")})`);
  }
  let base: URL;
  try {
    if (typeof o.url !== "string" && !(o.url instanceof URL)) throw new Error("not a string");
    base = new URL(String(o.url));
  } catch {
    throw new ArgumentError(
      `\`url\` must be the service's base URL, e.g. "http://127.0.0.1:8080" (got ${describeValue(o.url)})`,
    );
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new ArgumentError(`\`url\` must be http: or https: (got ${JSON.stringify(base.href)})`);
  }
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  if (o.token !== undefined && (typeof o.token !== "string" || o.token === "" || /[\r\n]/.test(o.token))) {
    // The token itself stays out of the message: it is a secret.
    throw new ArgumentError(
      `\`token\` must be a non-empty string on one line (got ${typeof o.token === "string" ? "a string that is not" : typeof o.token})`,
    );
  }
  return {
    base,
    token: o.token as string | undefined,
    timeoutMs: positiveInteger("timeoutMs", o.timeoutMs, DEFAULT_TIMEOUT_MS),
    onError: checkOnError<string>(o.onError ?? DEFAULT_POLICY, false) as ClientOnError,
    maxBatch: positiveInteger("maxBatch", o.maxBatch, 1000),
    maxSockets: positiveInteger("maxSockets", o.maxSockets, 16),
    breaker: checkBreaker(o.breaker),
  };
}
