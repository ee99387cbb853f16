/**
 * Table helpers shared by the algorithm tables beside each step: rows of expected decisions at
 * fixed instants, checked through the public limiter (peek must predict tryAcquire; a denial
 * changes nothing), and retry-hint honesty. Not part of the build (tsconfig.build.json).
 */
import type { Decision, Limiter, ManualClock } from "sluice";
import { expect } from "vitest";

/** `[now, key, cost, allowed, remaining, retryAfterMs, resetMs, delayMs?]`: one expected decision. */
export type Row = [
  now: number,
  key: string,
  cost: number,
  allowed: boolean,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
  delayMs?: number,
];

/** The Decision a row expects for a rule reporting `limit`. */
export function expected(limit: number, row: Row): Decision {
  const [, , , allowed, remaining, retryAfterMs, resetMs, delayMs = 0] = row;
  return { allowed, limit, remaining, retryAfterMs, resetMs, delayMs };
}

/**
 * Runs `rows` in order through `limiter` on `clock`. For each row: `peek` first must say what
 * `tryAcquire` then says; a denied `tryAcquire` must leave the key's `peek` unchanged.
 */
export function runTable(limiter: Limiter, clock: ManualClock, limit: number, rows: Row[]): void {
  rows.forEach((row, i) => {
    const [now, key, cost] = row;
    clock.set(now);
    const want = expected(limit, row);
    const before = limiter.peek(key, cost) as Decision;
    const got = limiter.tryAcquire(key, cost) as Decision;
    expect({ row: i, ...got }, `row ${i}: ${JSON.stringify(row)}`).toEqual({ row: i, ...want });
    expect(before, `row ${i}: peek predicts tryAcquire`).toEqual(got);
    if (!got.allowed) expect(limiter.peek(key, cost), `row ${i}: denial changed state`).toEqual(before);
  });
}

/**
 * For a denied decision at `now` with a finite `retryAfterMs`: returning exactly then passes, and
 * (when `exact`) returning 1 ms earlier does not. Only peeks; but a sliding-log peek drops the
 * entries expired at the later instant, so check the shortest retry first there.
 */
export function checkRetryHonest(limiter: Limiter, clock: ManualClock, key: string, cost: number, exact = true): void {
  const now = clock.now();
  const denied = limiter.peek(key, cost) as Decision;
  expect(denied.allowed).toBe(false);
  expect(Number.isFinite(denied.retryAfterMs)).toBe(true);
  if (exact && denied.retryAfterMs > 1) {
    clock.set(now + denied.retryAfterMs - 1);
    expect((limiter.peek(key, cost) as Decision).allowed, "1 ms before retryAfterMs").toBe(false);
  }
  clock.set(now + denied.retryAfterMs);
  expect((limiter.peek(key, cost) as Decision).allowed, "at retryAfterMs").toBe(true);
  clock.set(now);
}
