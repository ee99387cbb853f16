/**
 * The one place the check script's reply is decoded. Its shape is fixed: per check, a status
 * (`ok` or `error: …`) then 6 strings per member (allowed, limit, remaining, retryAfterMs,
 * resetMs, delayMs). Numbers travel as `%.17g` text because Redis truncates Lua numbers in
 * replies to integers; `inf` is how Lua prints the `Infinity` of "this can never pass".
 */
import { combine } from "../../composite.ts";
import { type Decision, decision } from "../../decision.ts";
import { StoreError } from "../../errors.ts";

/** Fields per member decision in the reply. */
export const FIELDS = 6;

function number(text: string): number {
  if (text === "inf") return Number.POSITIVE_INFINITY;
  if (text === "-inf") return Number.NEGATIVE_INFINITY;
  const value = Number(text);
  if (text === "" || Number.isNaN(value)) throw new StoreError(`unexpected number in the Redis reply: ${text}`);
  return value;
}

/**
 * Splits a batch reply into per-check results: the member fields of each check, or the error
 * the script reported for that check. `members[i]` is the member count of check `i`.
 */
export function splitBatch(reply: unknown, members: readonly number[]): Array<readonly string[] | StoreError> {
  const expected = members.reduce((sum, m) => sum + 1 + m * FIELDS, 0);
  if (!Array.isArray(reply) || reply.length !== expected) {
    const got = Array.isArray(reply) ? `an array of ${reply.length}` : typeof reply;
    throw new StoreError(`unexpected reply from the sluice script: expected ${expected} fields, got ${got}`);
  }
  const out: Array<readonly string[] | StoreError> = [];
  let at = 0;
  for (const m of members) {
    const status = String(reply[at]);
    const fields = reply.slice(at + 1, at + 1 + m * FIELDS).map(String);
    at += 1 + m * FIELDS;
    out.push(status === "ok" ? fields : new StoreError(`the sluice script failed: ${status}`));
  }
  return out;
}

/** The Decision of one check from its member fields (members combined as the core combines them). */
export function toDecision(fields: readonly string[]): Decision {
  const parts: Decision[] = [];
  for (let i = 0; i < fields.length; i += FIELDS) {
    const f = (j: number) => number(fields[i + j] as string);
    parts.push(decision(fields[i] === "1", f(1), f(2), f(3), f(4), f(5)));
  }
  return parts.length === 1 ? (parts[0] as Decision) : combine(parts);
}
