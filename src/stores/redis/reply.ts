/**
 * The one place the check script's reply is decoded. Its shape is fixed: a flat array with 4
 * values per member of each check, in order: status (1 allowed, 0 denied, -1 the check
 * failed), remaining, retryAfterMs when denied or delayMs when allowed, resetMs. Whole figures
 * arrive as integers; the rest (`inf`, `-0`, fractions) as exact `%.17g` text. A failed check
 * carries its error text in place of its first `remaining`.
 */

import { type Decision, decision } from "../../algorithms/decision.ts";
import { combine } from "../../composite.ts";
import { StoreError } from "../../errors.ts";

/** Reply values per member decision. */
export const FIELDS = 4;

function figure(value: unknown): number {
  if (typeof value === "number") return value;
  if (value === "inf") return Number.POSITIVE_INFINITY;
  if (value === "-inf") return Number.NEGATIVE_INFINITY;
  const parsed = typeof value === "string" && value !== "" ? Number(value) : Number.NaN;
  if (Number.isNaN(parsed)) throw new StoreError(`unexpected figure in the Redis reply: ${String(value)}`);
  return parsed;
}

/** One member's decision from the 4 values at `at`; `limit` is known from the spec, not sent. */
function member(reply: readonly unknown[], at: number, limit: number): Decision {
  const status = reply[at];
  const slot = figure(reply[at + 2]);
  if (status === 1) return decision(true, limit, figure(reply[at + 1]), 0, figure(reply[at + 3]), slot);
  if (status === 0) return decision(false, limit, figure(reply[at + 1]), slot, figure(reply[at + 3]));
  throw new StoreError(`unexpected status in the Redis reply: ${String(status)}`);
}

/**
 * The Decision of the check whose values start at `at` (members combined as the core combines
 * them), or the StoreError the script reported for it. Throws StoreError on a malformed reply.
 */
export function decodeCheck(reply: readonly unknown[], at: number, limits: readonly number[]): Decision | StoreError {
  if (reply[at] === -1) return new StoreError(`the sluice script failed: ${String(reply[at + 1])}`);
  if (limits.length === 1) return member(reply, at, limits[0] as number);
  const parts: Decision[] = [];
  for (let i = 0; i < limits.length; i++) parts.push(member(reply, at + i * FIELDS, limits[i] as number));
  return combine(parts);
}
