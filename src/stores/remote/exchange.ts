/**
 * One batch's round trip, bounded and accounted for, as every remote store sends it: the
 * request must settle within `timeoutMs`; past it the callers are answered by the failure
 * policy and the store is told (`late`) so nothing more is sent for the batch. A failure or a
 * timeout counts against the circuit breaker; a reply is handed back to be delivered (the store
 * records the breaker's success itself, before its callers hear: they may read the breaker).
 */
import { StoreError } from "../../core/errors.ts";
import type { Breaker } from "./breaker.ts";
import { timeoutError, withTimeout } from "./with-timeout.ts";

/** What a store does with a batch's outcome. */
export interface ExchangeHandlers<T> {
  /** The time is up: stop sending anything for the batch (its callers are about to be answered). */
  late(): void;
  /** The reply arrived in time. */
  reply(value: T): void;
  /** The batch failed (error or timeout): answer every call still waiting by the policy. */
  fail(error: StoreError): void;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The one bounded call to a remote store's server: settles with `request` if it settles within
 * `timeoutMs`, else fails with the timeout's StoreError (`ERR_STORE_TIMEOUT`), calling `late`
 * first; a failure that is not already a StoreError becomes one naming `who`, with the original
 * as `cause`. Batches (`exchange`) and a fleet queue's calls (redis/fleet-queue.ts) both go
 * through it, bounded by the same store's `timeoutMs`.
 */
export function boundedCall<T>(request: Promise<T>, timeoutMs: number, who: string, late?: () => void): Promise<T> {
  return withTimeout(request, timeoutMs, () => {
    late?.();
    throw timeoutError(who, timeoutMs);
  }).catch((error: unknown) => {
    throw error instanceof StoreError ? error : new StoreError(`${who} failed: ${message(error)}`, { cause: error });
  });
}

/**
 * Awaits `request` for at most `timeoutMs`, then calls exactly one of `reply` or `fail`. `who`
 * names the server in errors ("Redis", "the cluster primary"); a failure that is not already a
 * StoreError becomes one with the original as `cause`.
 */
export function exchange<T>(
  request: Promise<T>,
  timeoutMs: number,
  who: string,
  breaker: Breaker,
  handlers: ExchangeHandlers<T>,
): void {
  boundedCall(request, timeoutMs, who, handlers.late).then(handlers.reply, (error: StoreError) => {
    handlers.late();
    breaker.failure();
    handlers.fail(error);
  });
}
