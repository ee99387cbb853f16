/**
 * An independent reference model of a rule, written from docs (SPEC §4–§6, §10) and sharing no
 * code with src/: a sliding log is an array of timestamps, gcra and leaky-bucket keep their
 * theoretical arrival time as an exact rational (BigInt numerator over the emission interval's
 * denominator), the token bucket its balance in exact integers, the sliding window its two
 * counts, searching retry times one ms at a time. Slow and obviously right, so any store (the
 * MemoryStore, Redis's Lua and the TypeScript that assembles its replies) can be checked against it.
 *
 * Instants must be whole ms; rates must be whole or tenths (so every quantity is exact).
 */
import type { Decision } from "../algorithms/decision.ts";
import type { AlgorithmSpec } from "../algorithms/specs.ts";

/** One member's reference state machine. */
export interface ReferenceModel {
  /** The rule's limit / capacity / burst. */
  readonly limit: number;
  /** Which spec changes keep the state (SPEC §10: limits may change, windows and capacities not). */
  readonly shape: string;
  /** Decides `cost` at `now`; commits when `commit` and allowed. Cost 0 reports the state as it stands. */
  step(now: number, cost: number, commit: boolean): Decision;
  /**
   * Gives back up to `cost` units this key's own checks took and still count; with `at` (a
   * receipt), only units the check decided at `at` took and the algorithm still counts.
   */
  refund(now: number, cost: number, at?: number): void;
  /** Takes `cost` units whether or not they fit (rate-limiter-flexible's `penalty`). */
  force(now: number, cost: number): void;
  /** Whether the state at `now` decides exactly like a fresh key's. */
  fresh(now: number): boolean;
  /** This model with new parameters of the same shape, keeping the state. */
  respec(spec: AlgorithmSpec): ReferenceModel;
  /** Leases only: gives back `cost` leases logged at exactly `at`, while they still count. */
  release?(now: number, cost: number, at: number): void;
  /**
   * Leases only: whether `cost` counting leases were logged at exactly `at`; allowed and (with
   * `commit`) moved to now when they were, denied with retryAfterMs Infinity when not.
   */
  renew?(now: number, cost: number, at: number, commit: boolean): Decision;
}

const INF = Number.POSITIVE_INFINITY;

const decision = (allowed: boolean, limit: number, remaining: number, retryAfterMs: number, resetMs: number) => ({
  allowed,
  limit,
  remaining,
  retryAfterMs,
  resetMs,
  delayMs: 0,
});

/** ceil(n / d) for BigInts with d > 0. */
function ceilDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d < n ? q + 1n : q;
}
/** floor(n / d) for BigInts with d > 0. */
function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return q * d > n ? q - 1n : q;
}
const big = (n: number) => BigInt(n);
const num = (n: bigint) => Number(n);
const maxB = (a: bigint, b: bigint) => (a > b ? a : b);
const minB = (a: bigint, b: bigint) => (a < b ? a : b);

/** A positive rate as an exact fraction p/q (whole numbers and tenths only). */
function fraction(rate: number): [bigint, bigint] {
  const tenths = Math.round(rate * 10);
  if (Math.abs(tenths / 10 - rate) > 1e-12 || tenths <= 0) throw new Error(`oracle: rate ${rate} is not in tenths`);
  return tenths % 10 === 0 ? [big(tenths / 10), 1n] : [big(tenths), 10n];
}

/** fixed-window (SPEC §5): one count per aligned window; a clock behind the stored window keeps it. */
function fixedWindow(limit: number, W: number, state = { w: -INF, c: 0 }): ReferenceModel {
  return {
    limit,
    shape: `fixed-window/${W}`,
    respec: (spec) => fixedWindow((spec as { limit: number }).limit, W, state),
    step(now, cost, commit) {
      const s = Math.max(Math.floor(now / W) * W, state.w);
      const c = state.w === s ? state.c : 0;
      const end = s + W - now;
      const left = Math.max(0, limit - c);
      if (cost > limit) return decision(false, limit, left, INF, c > 0 ? end : 0);
      if (c + cost > limit) return decision(false, limit, left, end, c > 0 ? end : 0);
      if (commit) Object.assign(state, { w: s, c: c + cost });
      return decision(true, limit, limit - c - cost, 0, c + cost > 0 ? end : 0);
    },
    refund(now, cost, at) {
      const s = Math.max(Math.floor(now / W) * W, state.w);
      // A receipt from another window: its unit is no longer counted.
      if (at !== undefined && Math.floor(at / W) * W !== s) return;
      if (state.w === s) state.c = Math.max(0, state.c - cost);
    },
    force(now, cost) {
      const s = Math.max(Math.floor(now / W) * W, state.w);
      Object.assign(state, { w: s, c: (state.w === s ? state.c : 0) + cost });
    },
    fresh(now) {
      return !(state.w === Math.max(Math.floor(now / W) * W, state.w) && state.c > 0);
    },
  };
}

/**
 * concurrency (SPEC §16): the sliding log of leases, windowMs = leaseMs, except that a lease is
 * logged at its own instant (`now`, its receipt) even when the log holds a later one; a release
 * removes leases of its receipt's instant, a renewal moves them to now (written here on the array).
 */
function concurrency(limit: number, W: number, log: number[] = []): ReferenceModel {
  const model = slidingLog(limit, W, log);
  const at = (now: number) => Math.max(now, log.length > 0 ? (log[log.length - 1] as number) : -INF);
  /** The log's counting entries at `now` with `cost` entries at `now` added, in time order. */
  const admit = (now: number, cost: number, live: number[]) => {
    const entries = [...live, ...new Array<number>(cost).fill(now)].sort((a, b) => a - b);
    log.splice(0, log.length, ...entries);
  };
  return {
    ...model,
    step(now, cost, commit) {
      const d = model.step(now, cost, false);
      if (commit && d.allowed) {
        const t = at(now);
        admit(
          now,
          cost,
          log.filter((e) => e > t - W),
        );
      }
      return d;
    },
    // Leases are receipts, read alike under any leaseMs: a new leaseMs keeps them (same shape).
    shape: "concurrency",
    respec: (spec) => {
      const { limit: l, leaseMs } = spec as { limit: number; leaseMs?: number };
      return concurrency(l, leaseMs ?? W, log);
    },
    release: (now, cost, receipt) => model.refund(now, cost, receipt),
    // A refund is for rate units: leases leave by release or expiry only.
    refund: () => {},
    renew(now, cost, receipt, commit) {
      const t = at(now);
      const live = log.filter((e) => e > t - W);
      const n = live.length;
      const newest = live[n - 1];
      const left = Math.max(0, limit - n);
      if (live.filter((e) => e === receipt).length < cost) {
        return decision(false, limit, left, INF, newest === undefined ? 0 : newest + W - now);
      }
      if (commit) {
        let moved = 0;
        admit(
          now,
          cost,
          live.filter((e) => !(e === receipt && moved++ < cost)),
        );
      }
      return decision(true, limit, left, 0, t + W - now);
    },
  };
}

/** sliding-log (SPEC §5): literally the log, one timestamp per admitted unit, oldest first. */
function slidingLog(limit: number, W: number, log: number[] = []): ReferenceModel {
  // "No time passed" when the clock is behind the newest entry.
  const at = (now: number) => Math.max(now, log.length > 0 ? (log[log.length - 1] as number) : -INF);
  const counting = (t: number) => log.filter((e) => e > t - W);
  return {
    limit,
    shape: `sliding-log/${W}`,
    respec: (spec) => slidingLog((spec as { limit: number }).limit, W, log),
    step(now, cost, commit) {
      const t = at(now);
      const live = counting(t);
      const n = live.length;
      const newest = live[n - 1];
      const reset = newest === undefined ? 0 : newest + W - now;
      const left = Math.max(0, limit - n);
      if (cost > limit) return decision(false, limit, left, INF, reset);
      if (n + cost > limit) {
        const e = live[n + cost - limit - 1] as number; // the (n + cost − limit)-th oldest
        return decision(false, limit, left, e + W - now, reset);
      }
      if (commit) {
        log.splice(0, log.length, ...live);
        for (let i = 0; i < cost; i++) log.push(t);
      }
      return decision(true, limit, limit - n - cost, 0, cost > 0 ? t + W - now : reset);
    },
    refund(now, cost, receipt) {
      const t = at(now);
      if (receipt === undefined) {
        for (let k = 0; k < cost && log.length > 0 && (log[log.length - 1] as number) > t - W; k++) log.pop();
        return;
      }
      // Only entries logged at the receipt's instant, while they still count.
      if (!(receipt > t - W)) return;
      let left = cost;
      for (let i = log.length - 1; i >= 0 && left > 0; i--) {
        if (log[i] === receipt) {
          log.splice(i, 1);
          left--;
        }
      }
    },
    force(now, cost) {
      const t = at(now);
      for (let i = 0; i < cost; i++) log.push(t);
    },
    fresh(now) {
      return counting(at(now)).length === 0;
    },
  };
}

/** sliding-window (SPEC §5): two counts, retry found by trying each later ms in turn. */
function slidingWindow(limit: number, W: number, state = { w: -INF, p: 0, c: 0 }): ReferenceModel {
  const view = (now: number) => {
    const s = Math.max(Math.floor(now / W) * W, state.w);
    if (state.w === s) return { s, prev: state.p, cur: state.c };
    if (state.w === s - W) return { s, prev: state.c, cur: 0 };
    return { s, prev: 0, cur: 0 };
  };
  const passes = (now: number, cost: number) => {
    const { s, prev, cur } = view(now);
    const el = Math.max(0, now - s);
    return big(prev) * big(W - el) + big(cur + cost) * big(W) <= big(limit) * big(W);
  };
  return {
    limit,
    shape: `sliding-window/${W}`,
    respec: (spec) => slidingWindow((spec as { limit: number }).limit, W, state),
    step(now, cost, commit) {
      const { s, prev, cur } = view(now);
      const el = Math.max(0, now - s);
      const remaining = (c: number) =>
        Math.max(0, num(floorDiv(big(limit) * big(W) - big(prev) * big(W - el) - big(c) * big(W), big(W))));
      const reset = (c: number) => (c > 0 ? s + 2 * W - now : prev > 0 ? s + W - now : 0);
      if (cost > limit) return decision(false, limit, remaining(cur), INF, reset(cur));
      if (passes(now, cost)) {
        if (commit) Object.assign(state, { w: s, p: prev, c: cur + cost });
        return decision(true, limit, remaining(cur + cost), 0, reset(cur + cost));
      }
      // State unchanged, so later instants are judged on the stored counts.
      let retry = 1;
      while (!passes(now + retry, cost)) retry++;
      return decision(false, limit, remaining(cur), retry, reset(cur));
    },
    refund(now, cost, at) {
      const { s } = view(now);
      if (at !== undefined) {
        // Only the window the receipt's check was counted in, while it still weighs.
        const from = Math.floor(at / W) * W;
        if (state.w === s && from === s) state.c = Math.max(0, state.c - cost);
        else if (state.w === s && from === s - W) state.p = Math.max(0, state.p - cost);
        else if (state.w === s - W && from === s - W) state.c = Math.max(0, state.c - cost);
        return;
      }
      if (state.w === s) {
        const fromCurrent = Math.min(state.c, cost);
        state.c -= fromCurrent;
        state.p = Math.max(0, state.p - (cost - fromCurrent));
      } else if (state.w === s - W) state.c = Math.max(0, state.c - cost);
    },
    force(now, cost) {
      const { s, prev, cur } = view(now);
      Object.assign(state, { w: s, p: prev, c: cur + cost });
    },
    fresh(now) {
      const { prev, cur } = view(now);
      return prev === 0 && cur === 0;
    },
  };
}

/**
 * token-bucket (SPEC §5): balance in thousandths of a token, scaled by the rate's denominator q
 * so refills are whole: B = balance·q, refill p per ms (rate = p/q tokens per second).
 */
function tokenBucket(C: number, rate: number): ReferenceModel {
  const [p, q] = fraction(rate);
  const full = big(C) * 1000n * q;
  let B = full;
  let updated = -INF;
  const balanceAt = (now: number) => (updated === -INF || now <= updated ? B : minB(full, B + big(now - updated) * p));
  const whole = (b: bigint) => Math.max(0, num(floorDiv(b, 1000n * q)));
  const model: ReferenceModel = {
    limit: C,
    shape: `token-bucket/${C}/${rate}`,
    // Same shape means the same capacity and rate: nothing changes.
    respec: () => model,
    step(now, cost, commit) {
      const b = balanceAt(now);
      const need = big(cost) * 1000n * q;
      const reset = (left: bigint) => num(ceilDiv(full - left, p));
      if (cost > C) return decision(false, C, whole(b), INF, reset(b));
      if (b >= need) {
        if (commit) {
          B = b - need;
          updated = Math.max(now, updated);
        }
        return decision(true, C, whole(b - need), 0, reset(b - need));
      }
      // A clock behind the last update refills nothing until it catches up.
      const lag = updated > now ? updated - now : 0;
      return decision(false, C, whole(b), lag + num(ceilDiv(need - b, p)), reset(b));
    },
    refund(now, cost, at) {
      // With a receipt, what refilled since the check is not given back twice.
      const taken = big(cost) * 1000n * q;
      const give = at === undefined ? taken : maxB(0n, taken - big(Math.max(0, now - at)) * p);
      B = minB(full, balanceAt(now) + give);
      updated = Math.max(now, updated);
    },
    force(now, cost) {
      B = balanceAt(now) - big(cost) * 1000n * q;
      updated = Math.max(now, updated);
    },
    fresh: (now) => balanceAt(now) >= full,
  };
  return model;
}

/**
 * gcra and leaky-bucket (SPEC §5): the emission interval is T = Tn/den exactly, and the
 * theoretical arrival time an exact rational (kept across spec changes, which may change T);
 * a leaky bucket's admitted requests carry delayMs.
 */
function emission(
  kind: "gcra" | "leaky-bucket",
  burst: number,
  Tn: bigint,
  den: bigint,
  tat: Rational,
): ReferenceModel {
  return {
    limit: burst,
    shape: kind,
    respec(spec) {
      const next = emissionParams(spec);
      return emission(next.kind, next.burst, next.Tn, next.den, tat);
    },
    step(now, cost, commit) {
      // Everything over one denominator D: T = Tn·td/D, τ = burst·T, instants ·D.
      const td = tat.d;
      const D = den * td;
      const T = Tn * td;
      const tau = big(burst) * T;
      const nowD = big(now) * D;
      const start = tat.n === undefined ? nowD : maxB(tat.n * den, nowD);
      const backlog = start - nowD;
      const ahead = backlog + big(cost) * T;
      const whole = (ms: bigint) => num(maxB(0n, floorDiv(tau - ms, T)));
      const up = (x: bigint) => num(maxB(0n, ceilDiv(x, D)));
      if (cost > burst) return decision(false, burst, whole(backlog), INF, up(backlog));
      if (ahead <= tau) {
        if (commit) set(tat, start + big(cost) * T, D);
        const d = decision(true, burst, whole(ahead), 0, up(ahead));
        d.delayMs = kind === "leaky-bucket" ? up(backlog) : 0;
        return d;
      }
      return decision(false, burst, whole(backlog), up(ahead - tau), up(backlog));
    },
    refund(now, cost, at) {
      if (tat.n === undefined) return;
      const D = den * tat.d;
      const nowD = big(now) * D;
      const t = tat.n * den;
      if (t <= nowD) return;
      let give = big(cost) * Tn * tat.d;
      // With a receipt, what has drained since the check is not given back twice.
      if (at !== undefined && now > at) give -= big(now - at) * D;
      if (give > 0n) set(tat, maxB(nowD, t - give), D);
    },
    force(now, cost) {
      const D = den * tat.d;
      const nowD = big(now) * D;
      const start = tat.n === undefined ? nowD : maxB(tat.n * den, nowD);
      set(tat, start + big(cost) * Tn * tat.d, D);
    },
    fresh: (now) => tat.n === undefined || tat.n * den <= big(now) * den * tat.d,
  };
}

/** Stores n/d in lowest terms (denominators would otherwise multiply at every commit). */
function set(r: Rational, n: bigint, d: bigint): void {
  let a = n < 0n ? -n : n;
  let b = d;
  while (b !== 0n) [a, b] = [b, a % b];
  const g = a === 0n ? d : a;
  r.n = n / g;
  r.d = d / g;
}

/** An exact instant n/d ms (n undefined: never set). */
interface Rational {
  n: bigint | undefined;
  d: bigint;
}

function emissionParams(spec: AlgorithmSpec) {
  if (spec.algorithm === "gcra") {
    return { kind: "gcra" as const, burst: spec.burst ?? spec.limit, Tn: big(spec.periodMs), den: big(spec.limit) };
  }
  if (spec.algorithm === "leaky-bucket") {
    // T = 1000 / (p/q) = 1000·q / p.
    const [p, q] = fraction(spec.leakPerSecond);
    return { kind: "leaky-bucket" as const, burst: spec.capacity, Tn: 1000n * q, den: p };
  }
  throw new Error(`oracle: not an emission spec: ${spec.algorithm}`);
}

/** The reference model of one algorithm spec (seed `type` specs included). */
export function modelOf(spec: AlgorithmSpec | { type: string; [k: string]: unknown }): ReferenceModel {
  const s = ("type" in spec ? seedSpec(spec) : spec) as AlgorithmSpec;
  switch (s.algorithm) {
    case "fixed-window":
      return fixedWindow(s.limit, s.windowMs);
    case "sliding-log":
      return slidingLog(s.limit, s.windowMs);
    case "sliding-window":
      return slidingWindow(s.limit, s.windowMs);
    case "token-bucket":
      return tokenBucket(s.capacity, s.refillPerSecond);
    case "concurrency":
      return concurrency(s.limit, s.leaseMs ?? 60_000);
    default: {
      const e = emissionParams(s);
      return emission(e.kind, e.burst, e.Tn, e.den, { n: undefined, d: 1n });
    }
  }
}

function seedSpec(spec: { type: string; [k: string]: unknown }): AlgorithmSpec {
  const algorithm = { fixed: "fixed-window", sliding: "sliding-log", bucket: "token-bucket" }[spec.type];
  const { type: _type, ...rest } = spec;
  return { algorithm, ...rest } as AlgorithmSpec;
}

/** A ban policy (SPEC §8): `after` denials within `withinMs` of the first ban the key for `forMs`. */
export interface OracleBan {
  after: number;
  withinMs: number;
  forMs: number;
}

/**
 * The reference model of one rule for one key: its members (all or nothing, strictest figures)
 * and its ban. `respec` models `updateRule` / rebinding a name: the same shape keeps state.
 */
export class RuleOracle {
  #members: ReferenceModel[];
  // An array spec answers with parts even when it has one member.
  #composite: boolean;
  #ban: OracleBan | undefined;
  // Denials counted since `since`, banned until `until`.
  #n = 0;
  #since = -INF;
  #until = -INF;
  // Whether the key has state at all: a check that took units or counted a denial. A refund of
  // a key with none changes nothing (stores keep no record for it).
  #stored = false;

  constructor(spec: AlgorithmSpec | AlgorithmSpec[], ban?: OracleBan) {
    this.#members = (Array.isArray(spec) ? spec : [spec]).map(modelOf);
    this.#composite = Array.isArray(spec);
    this.#ban = ban;
  }

  /** The shape of the state: equal shapes share records across spec changes. */
  get shape(): string {
    return this.#members.map((m) => m.shape).join("+") + (this.#ban ? `+ban/${this.#ban.withinMs}` : "");
  }

  /**
   * Rebinds to `spec`: same shape keeps the state (limits change), another starts fresh. An
   * array spec answers with `parts`, even with one member, as limiters do.
   */
  respec(spec: AlgorithmSpec | AlgorithmSpec[], ban?: OracleBan): RuleOracle {
    const fresh = new RuleOracle(spec, ban);
    if (fresh.shape !== this.shape) return fresh;
    const specs = Array.isArray(spec) ? spec : [spec];
    fresh.#members = this.#members.map((m, i) => m.respec(specs[i] as AlgorithmSpec));
    fresh.#n = this.#n;
    fresh.#since = this.#since;
    fresh.#until = this.#until;
    fresh.#stored = this.#stored;
    return fresh;
  }

  /** A check (`tryAcquire`). */
  check(now: number, cost: number): Decision {
    if (this.#until > now) return this.#banned(now);
    const d = this.#evaluate(now, cost, true);
    if (d.allowed) this.#forgetEndedBlock();
    if (d.allowed || this.#ban !== undefined) this.#stored = true;
    if (!d.allowed && this.#ban !== undefined && this.#countDenial(now)) return this.#banned(now);
    return d;
  }

  /**
   * A rule without a ban forgets an ended block once its record is rewritten (Redis writes the
   * plain record back over the blocked key's hash); until then a clock stepping back finds it.
   */
  #forgetEndedBlock(): void {
    if (this.#ban === undefined) this.#until = -INF;
  }

  /** A peek: what a check would say, changing nothing. */
  peek(now: number, cost: number): Decision {
    if (this.#until > now) return this.#banned(now);
    return this.#evaluate(now, cost, false);
  }

  /** A refund (with `at`, its receipt): every member gives back, then what a peek of one unit says (a ban stays). */
  refund(now: number, cost: number, at?: number): Decision {
    if (!(this.#until > now)) this.#forgetEndedBlock();
    if (this.#stored) for (const m of this.#members) m.refund(now, cost, at);
    return this.peek(now, 1);
  }

  /** A lease release: every concurrency member gives back `cost` leases of receipt `at`; then a peek of one unit (a ban stays). */
  release(now: number, cost: number, at: number): Decision {
    if (!(this.#until > now)) this.#forgetEndedBlock();
    if (this.#stored) for (const m of this.#members) m.release?.(now, cost, at);
    return this.peek(now, 1);
  }

  /**
   * A lease renewal: in every concurrency member or in none; rate members report as they stand
   * (cost 0, and do not refuse a held renewal). A banned or blocked key's leases are not renewed.
   */
  renew(now: number, cost: number, at: number): Decision {
    if (this.#until > now) return this.#banned(now);
    const members = this.#members;
    const leased = members.filter((m) => m.renew !== undefined);
    const held = leased.length > 0 && leased.every((m) => m.renew?.(now, cost, at, false).allowed);
    const parts = members.map((m) => {
      if (m.renew !== undefined) return m.renew(now, cost, at, held);
      const p = m.step(now, 0, false);
      return held && !p.allowed ? { ...p, allowed: true, retryAfterMs: 0, delayMs: 0 } : p;
    });
    if (held) this.#forgetEndedBlock();
    return this.#composite ? this.#combine(parts) : (parts[0] as Decision);
  }

  /** rate-limiter-flexible's `penalty`: every member takes `cost` units whether or not they fit. */
  penalty(now: number, cost: number): Decision {
    if (!(this.#until > now)) this.#forgetEndedBlock();
    for (const m of this.#members) m.force(now, cost);
    this.#stored = true;
    return this.peek(now, 1);
  }

  /** rate-limiter-flexible's `block`: banned until `now + ms`, on any rule (replacing a running block or ban). */
  block(now: number, ms: number): Decision {
    this.#until = now + ms;
    this.#stored = true;
    return this.peek(now, 1);
  }

  /** rate-limiter-flexible's `get`: a peek of one unit, or null when the key decides like a fresh one. */
  get(now: number): Decision | null {
    const banFresh =
      this.#until <= now && (this.#ban === undefined || this.#n === 0 || now >= this.#since + this.#ban.withinMs);
    if (banFresh && this.#members.every((m) => m.fresh(now))) return null;
    return this.peek(now, 1);
  }

  #countDenial(now: number): boolean {
    const ban = this.#ban as OracleBan;
    // The span is counted from the first denial; one exactly withinMs later starts a new count.
    if (this.#n === 0 || now >= this.#since + ban.withinMs) {
      this.#since = now;
      this.#n = 0;
    }
    this.#n++;
    if (this.#n < ban.after) return false;
    this.#until = now + ban.forMs;
    this.#n = 0;
    return true;
  }

  /** Banned: denied until the ban ends and no sooner than the members would allow one unit. */
  #banned(now: number): Decision {
    const members = this.#evaluate(now, 1, false);
    const left = this.#until - now;
    const d: Decision = {
      allowed: false,
      limit: members.limit,
      remaining: 0,
      retryAfterMs: Math.max(left, members.retryAfterMs),
      resetMs: Math.max(left, members.resetMs),
      delayMs: 0,
      banned: true,
    };
    if (members.parts !== undefined) d.parts = members.parts;
    return d;
  }

  #evaluate(now: number, cost: number, commit: boolean): Decision {
    const members = this.#members;
    if (!this.#composite) return (members[0] as ReferenceModel).step(now, cost, commit);
    let parts = members.map((m) => m.step(now, cost, false));
    const allowed = parts.every((p) => p.allowed);
    if (!allowed) {
      // Nothing consumed: members that would have allowed report as they stand.
      parts = parts.map((p, i) => (p.allowed ? (members[i] as ReferenceModel).step(now, 0, false) : p));
    } else if (commit) for (const m of members) m.step(now, cost, true);
    return this.#combine(parts);
  }

  /** The composite answer: every part must allow; the strictest figures. */
  #combine(parts: Decision[]): Decision {
    const allowed = parts.every((p) => p.allowed);
    // The member with least remaining; the first in spec order on a tie.
    let tightest = parts[0] as Decision;
    for (const p of parts) if (p.remaining < tightest.remaining) tightest = p;
    return {
      allowed,
      limit: tightest.limit,
      remaining: tightest.remaining,
      retryAfterMs: allowed ? 0 : Math.max(...parts.map((p) => p.retryAfterMs)),
      resetMs: Math.max(...parts.map((p) => p.resetMs)),
      delayMs: allowed ? Math.max(...parts.map((p) => p.delayMs)) : 0,
      parts,
    };
  }
}
