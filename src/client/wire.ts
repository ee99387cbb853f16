/**
 * The service's JSON, read back: Decisions (`null` was `Infinity`, a server-side failure
 * becomes a `failure` with a StoreError) and problem answers turned into typed errors. Problem
 * bodies are read by the one problem module the service writes them with (src/http/problem.ts:
 * the client is an HTTP door like the middleware, so it imports it at its own level).
 */
import type { Decision } from "../algorithms/decision.ts";
import { ArgumentError, type SluiceError, StoreError, UnknownRuleError } from "../core/errors.ts";
import { type ReadProblem, slugOf } from "../http/problem.ts";

const NUMBERS = ["limit", "remaining", "retryAfterMs", "resetMs", "delayMs"] as const;

/** Reads one Decision from JSON; anything that is not one is a StoreError (a wrong URL, a proxy page). */
export function readDecision(raw: unknown): Decision {
  if (raw === null || typeof raw !== "object" || typeof (raw as { allowed?: unknown }).allowed !== "boolean") {
    throw new StoreError(
      `the service answered something that is not a Decision: ${JSON.stringify(raw)?.slice(0, 200)}`,
    );
  }
  const r = raw as Record<string, unknown>;
  const d: Decision = {
    allowed: r.allowed as boolean,
    limit: 0,
    remaining: 0,
    retryAfterMs: 0,
    resetMs: 0,
    delayMs: 0,
  };
  for (const field of NUMBERS) {
    const v = r[field];
    // JSON has no Infinity: the service writes it as null (a cost above the limit never passes).
    d[field] = v === null ? Number.POSITIVE_INFINITY : typeof v === "number" ? v : 0;
  }
  if (Array.isArray(r.parts)) d.parts = r.parts.map(readDecision);
  if (r.approximate === true) (d as Decision & { approximate?: true }).approximate = true;
  if (r.banned === true) (d as Decision & { banned?: true }).banned = true;
  // The receipt for `refund`, not enumerated (as on every Decision): decisions compare as before.
  if (typeof r.at === "number") Object.defineProperty(d, "at", { value: r.at, writable: true, configurable: true });
  const failure = r.failure as { policy?: unknown; code?: unknown } | undefined;
  if (failure !== undefined && failure !== null && typeof failure === "object") {
    const policy = failure.policy === "allow" || failure.policy === "fallback" ? failure.policy : "deny";
    const code = String(failure.code ?? "ERR_STORE");
    d.failure = {
      policy,
      error: new StoreError(`the service's store failed (${code}); its policy "${policy}" answered`, {
        timeout: code === "ERR_STORE_TIMEOUT",
      }),
    };
  }
  return d;
}

/**
 * The error a caller gets for a refused call: bad input (400) is an ArgumentError, an unknown
 * rule (404 unknown-rule) an UnknownRuleError, anything else (401, 404 of an older service,
 * 415...) a StoreError carrying the service's detail. None goes to the failure policy: they
 * are mistakes to fix, not outages to ride out.
 */
export function refusal(status: number, problem: ReadProblem, rule: string): SluiceError {
  const detail = typeof problem.detail === "string" ? problem.detail : `HTTP ${status}`;
  const slug = slugOf(problem);
  if (status === 404 && slug === "unknown-rule") return new UnknownRuleError(rule);
  if (status === 400) return new ArgumentError(`sluice service refused the call: ${detail}`);
  return new StoreError(`sluice service refused the call (${status}${slug ? ` ${slug}` : ""}): ${detail}`);
}
