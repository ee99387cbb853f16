/**
 * GCRA (generic cell rate algorithm): one instant per key, the theoretical arrival time.
 * Admits exactly what a token bucket of `burst` refilled at `limit/periodMs` admits, with
 * half the state and evenly spaced emissions. Choose it as the default for per-user API
 * limits at scale (what Stripe, Shopify and redis-cell use).
 *
 * Precision (docs/semantics.md §5): the arithmetic is in integers. The emission interval
 * `T = periodMs / limit` (or `1000 / leakPerSecond`) is an exact fraction `per / den` ms, so
 * time is counted in ticks of `1/den` ms and the arrival time is kept as whole ms plus ticks.
 * Every figure a decision uses is a difference from `now` no larger than a few `τ`, so no
 * decision depends on the clock's absolute value (a float64 at today's epoch cannot hold
 * sub-µs intervals), and every value stays a safe integer (the Lua twin computes in doubles).
 */

import type { Algorithm } from "./algorithm.ts";
import { type Decision, decision } from "./decision.ts";
import type { GcraSpec, LeakyBucketSpec } from "./specs.ts";

/**
 * GCRA / leaky-bucket state: the theoretical arrival time `ms + ticks/den` of the next request.
 * `den` is the tick size it was written in, so a rule whose interval changed (same shape: a new
 * limit or rate) reads it rounded up to the next ms, never earlier.
 */
export interface GcraState {
  /** Whole ms of the theoretical arrival time (-Infinity: a fresh key). */
  ms: number;
  /** Ticks of `1/den` ms past `ms`, `0 ≤ ticks < den`. */
  ticks: number;
  /** The tick denominator the state was written with. */
  den: number;
}

/** Largest tick count a rule's tolerance `τ` may span: every intermediate stays below 2^53. */
const MAX_TAU_TICKS = 2 ** 52;
/** Largest tick denominator (ticks per ms). */
const MAX_DEN = 2 ** 50;

/**
 * An emission interval as an exact fraction: `per / den` ms, in lowest terms, and the burst
 * (τ = burst·per ticks). `exact` is false only when the fraction had to be rounded up to fit
 * 52 bits (absurd rates or periods, see {@link emissionInterval}).
 */
export interface EmissionInterval {
  /** Ticks per emission. */
  per: number;
  /** Ticks per ms. */
  den: number;
  /** Emissions that may pass at once (burst / capacity). */
  burst: number;
  /** Whether `per/den` is the spec's interval exactly. */
  exact: boolean;
}

function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** A positive finite double as the exact fraction of its shortest decimal text (0.1 → 1/10). */
function decimalFraction(x: number): [bigint, bigint] {
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(x));
  if (m === null) throw new RangeError(`not a positive finite number: ${x}`);
  const digits = `${m[1]}${m[2] ?? ""}`;
  const exp = Number(m[3] ?? 0) - (m[2]?.length ?? 0);
  return exp >= 0 ? [BigInt(digits) * 10n ** BigInt(exp), 1n] : [BigInt(digits), 10n ** BigInt(-exp)];
}

/**
 * The interval `per/den` of a gcra (`periodMs / limit`) or leaky-bucket (`1000 / leakPerSecond`,
 * the rate read as the decimal it is written as) spec. When `burst·per` or `den` would not fit
 * (a period of millennia, or a rate such as 1/3 written as 0.333…), the interval is rounded UP
 * to the finest tick that fits: the rule then admits never more than the exact one, and over a
 * whole burst at most `burst/den` ms later.
 */
export function emissionInterval(spec: GcraSpec | LeakyBucketSpec): EmissionInterval {
  let per: bigint;
  let den: bigint;
  let burst: number;
  if (spec.algorithm === "gcra") {
    per = BigInt(spec.periodMs);
    den = BigInt(spec.limit);
    burst = spec.burst ?? spec.limit;
  } else {
    const [num, scale] = decimalFraction(spec.leakPerSecond); // rate = num/scale per s
    per = 1000n * scale;
    den = num;
    burst = spec.capacity;
  }
  const g = gcd(per, den);
  per /= g;
  den /= g;
  const b = BigInt(burst);
  if (den <= BigInt(MAX_DEN) && b * per <= BigInt(MAX_TAU_TICKS)) {
    return { per: Number(per), den: Number(den), burst, exact: true };
  }
  // The finest den2 with burst·ceil(per·den2/den) ≤ MAX_TAU_TICKS (validation keeps τ and burst
  // below 2^51, so den2 ≥ 1).
  let den2 = ((BigInt(MAX_TAU_TICKS) - b) * den) / (b * per);
  if (den2 > den) den2 = den;
  if (den2 > BigInt(MAX_DEN)) den2 = BigInt(MAX_DEN);
  if (den2 < 1n) den2 = 1n;
  let per2 = (per * den2 + den - 1n) / den;
  const g2 = gcd(per2, den2);
  per2 /= g2;
  den2 /= g2;
  return { per: Number(per2), den: Number(den2), burst, exact: false };
}

/**
 * The shared arithmetic of gcra and leaky-bucket, in ticks of `1/den` ms: emission `per` ticks,
 * tolerance `τ = burst·per` ticks. A backlog is `tat − now` in ticks; integer divisions of
 * values below 2^53 are exact in float64 (`Math.floor(a / b)` cannot round across an integer).
 */
function emission(spec: GcraSpec | LeakyBucketSpec, delays: boolean): Algorithm<GcraState> {
  const { per, den, burst } = emissionInterval(spec);
  const tau = burst * per;
  // A state more than this many whole ms ahead of now is past τ for certain ("far"): its
  // backlog in ticks is never formed (a clock stepped back by years would overflow it).
  const nearMs = Math.ceil(tau / den) + 1;
  const ceilTicks = (ticks: number) => Math.ceil(ticks / den); // ticks → whole ms, rounded up
  // The state's arrival time in this rule's ticks: as written, or rounded up to the next ms
  // when it was written under another interval (a spec change that kept the shape).
  const msOf = (s: GcraState) => (s.den === den || s.ticks === 0 ? s.ms : s.ms + 1);
  const ticksOf = (s: GcraState) => (s.den === den ? s.ticks : 0);
  const write = (s: GcraState, ms: number, ticks: number) => {
    // ticks may exceed a ms (or be negative after a refund): carry whole ms.
    const carry = Math.floor(ticks / den);
    s.ms = ms + carry;
    s.ticks = ticks - carry * den;
    s.den = den;
  };
  const remainingAfter = (backlog: number) => Math.max(0, Math.floor((tau - backlog) / per));
  return {
    kind: spec.algorithm,
    spec,
    limit: burst,
    // freshAt rounds up to whole ms: a state is fresh at most ⌈τ⌉ + 1 ms after its last change.
    horizonMs: Math.ceil(tau / den) + 1,
    create: () => ({ ms: Number.NEGATIVE_INFINITY, ticks: 0, den }),
    freshAt: (s) => (s.ticks > 0 ? s.ms + 1 : s.ms),
    shape: spec.algorithm,
    summary: {
      // The latest theoretical arrival time as whole ms and the fraction of a ms past it (a
      // later one admits less); read back in this rule's ticks, rounded up.
      slots: 2,
      join(cells, at, state) {
        const frac = state.ticks / state.den;
        const ms = cells[at] as number;
        if (Number.isNaN(ms) || state.ms > ms || (state.ms === ms && frac > (cells[at + 1] as number))) {
          cells[at] = state.ms;
          cells[at + 1] = frac;
        }
      },
      read(cells, at) {
        const ms = cells[at] as number;
        if (Number.isNaN(ms)) return undefined;
        const ticks = Math.ceil((cells[at + 1] as number) * den);
        return ticks >= den ? { ms: ms + 1, ticks: 0, den } : { ms, ticks, den };
      },
    },
    refund(state, now, cost, at) {
      // Backlog ahead of now shrinks by the refunded emissions; time already past stays past.
      const nowMs = Math.floor(now);
      const nowTicks = Math.floor((now - nowMs) * den);
      const dm = msOf(state) - nowMs;
      const frac = ticksOf(state) - nowTicks;
      if (!(dm > 0 || (dm === 0 && frac > 0))) return;
      let give = cost * per;
      if (at !== undefined && now > at) {
        // With a receipt, what has drained since the check is not given back twice.
        const drained = Math.ceil((now - at) * den);
        if (drained >= give) return;
        give -= drained;
      }
      const backlog = dm * den + frac;
      if (give >= backlog) write(state, nowMs, nowTicks);
      // From the state's own instant, so a large backlog (a clock stepped back) is never re-based.
      else write(state, msOf(state), ticksOf(state) - give);
    },
    force(state, now, cost) {
      // The theoretical arrival time moves `cost` emissions past max(itself, now).
      const nowMs = Math.floor(now);
      const nowTicks = Math.floor((now - nowMs) * den);
      const dm = msOf(state) - nowMs;
      const ahead = dm > 0 || (dm === 0 && ticksOf(state) > nowTicks);
      if (ahead) write(state, msOf(state), ticksOf(state) + cost * per);
      else write(state, nowMs, nowTicks + cost * per);
    },
    step(state, now, cost, commit): Decision {
      // A fractional clock reading counts its whole ticks (a whole-ms clock has none).
      const nowMs = Math.floor(now);
      const nowTicks = Math.floor((now - nowMs) * den);
      const dm = msOf(state) - nowMs; // -Infinity for a fresh key
      const frac = ticksOf(state) - nowTicks; // in (−den, den)
      const ahead = dm > 0 || (dm === 0 && frac > 0);
      if (ahead && dm > nearMs) {
        // Far ahead: backlog > τ. Figures are whole ms plus a tick remainder, never ms·den.
        const reset = dm + ceilTicks(frac);
        if (cost > burst) return decision(false, burst, 0, Number.POSITIVE_INFINITY, reset);
        return decision(false, burst, 0, dm + ceilTicks(frac + cost * per - tau), reset);
      }
      const backlog = ahead ? dm * den + frac : 0; // ticks of earlier requests still ahead of this one
      if (cost > burst) {
        return decision(false, burst, remainingAfter(backlog), Number.POSITIVE_INFINITY, ceilTicks(backlog));
      }
      const need = cost * per;
      if (backlog <= tau - need) {
        const after = backlog + need;
        if (commit) write(state, nowMs, nowTicks + after);
        return decision(true, burst, remainingAfter(after), 0, ceilTicks(after), delays ? ceilTicks(backlog) : 0);
      }
      return decision(false, burst, remainingAfter(backlog), ceilTicks(backlog + need - tau), ceilTicks(backlog));
    },
  };
}

/** Builds the gcra step for `spec` (`burst` defaults to `limit`). */
export function gcra(spec: GcraSpec): Algorithm<GcraState> {
  return emission(spec, false);
}

/**
 * Leaky bucket: a queue of `capacity` that drains at `leakPerSecond`. Admitted requests get
 * `delayMs`, the time until those queued ahead have drained; honouring it turns any burst into
 * a constant outflow (nginx `limit_req` without `nodelay`). Choose it to protect a downstream
 * that needs a smooth rate (a payment gateway, a legacy backend), not to fail fast.
 */
export function leakyBucket(spec: LeakyBucketSpec): Algorithm<GcraState> {
  return emission(spec, true);
}
