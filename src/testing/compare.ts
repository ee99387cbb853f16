/**
 * How the conformance kit compares a store's Decision with the reference's: every figure the
 * contract fixes (SPEC §4), member by member for composites, and the ban flag. Failures throw a
 * plain Error naming the case, the step and both decisions, so any test runner reports them.
 */
import type { Decision } from "../algorithms/decision.ts";

/** The fields a Decision is judged on (`failure`, `approximate` and `at` are checked apart). */
interface Figures {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
  delayMs: number;
  banned?: true;
  parts?: Figures[];
}

/** The judged figures of `d`, in a fixed order (so messages read alike). */
export function figures(d: Decision): Figures {
  const f: Figures = {
    allowed: d.allowed,
    limit: d.limit,
    remaining: d.remaining,
    retryAfterMs: d.retryAfterMs,
    resetMs: d.resetMs,
    delayMs: d.delayMs,
  };
  if (d.banned === true) f.banned = true;
  if (d.parts !== undefined) f.parts = d.parts.map(figures);
  return f;
}

/** JSON that keeps Infinity readable. */
export function show(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (v === Number.POSITIVE_INFINITY ? "Infinity" : v));
}

/** Throws when `got` is not a Decision with the figures of `want`. */
export function expectDecision(got: unknown, want: Decision, where: string): void {
  if (typeof got !== "object" || got === null) throw new Error(`${where}: expected a Decision, got ${show(got)}`);
  const g = show(figures(got as Decision));
  const w = show(figures(want));
  if (g !== w) throw new Error(`${where}:\n  expected ${w}\n  got      ${g}`);
  if ((got as Decision).failure !== undefined) {
    throw new Error(`${where}: the store failed (${String((got as Decision).failure?.error)}) and its policy answered`);
  }
}

/** Throws `message` unless `ok`. */
export function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}
