/** The answer to every check. Being limited is a Decision, never an exception. */
export interface Decision {
  /** Whether the request may proceed. */
  allowed: boolean;
  /** The rule's limit / capacity / burst (for a composite: that of the member with least remaining). */
  limit: number;
  /** Whole units still available now, after this decision (≥ 0). */
  remaining: number;
  /** 0 when allowed; else ms until the same request would pass; `Infinity` when it never can. */
  retryAfterMs: number;
  /** ms until this key is back to full capacity (0 when it already is). */
  resetMs: number;
  /** leaky-bucket only: how long the admitted request should wait before proceeding; else 0. */
  delayMs: number;
  /** Composite rules: one decision per member, in spec order. */
  parts?: Decision[];
  /**
   * Present only when the store failed and this decision came from the store's `onError`
   * policy rather than from the rule: which policy answered, and the error it answered.
   * HTTP middleware answers 503 (not 429) for `policy: "deny"`.
   */
  failure?: DecisionFailure;
  /**
   * Present when the key's state was read back from the store's bounded summary (past
   * `maxKeys`) rather than its exact record: the summary can only over-count, so such a
   * decision may deny what exact state would allow, never the reverse.
   */
  approximate?: true;
  /** Present when the key is banned after repeated denials (`retryAfterMs` covers the ban). */
  banned?: true;
  /**
   * The instant it was decided on the limiter's clock: the receipt `refund(key, { cost, at })`
   * takes. Not enumerated (decisions compare and serialise as before); absent when the store's
   * own time decided (Redis `TIME` with no clock given).
   */
  at?: number | undefined;
  /**
   * Present on an allowed decision of a rule with a concurrency member (requests in flight):
   * gives back the lease this request holds. Only the first call acts (later calls return its
   * result); a lease that already expired frees nothing. Returns what a peek then says (a
   * promise on an async store).
   */
  release?: () => Decision | Promise<Decision>;
  /**
   * Present with `release`: renews the lease (its `leaseMs` starts again now) and makes the new
   * receipt the one `release()` gives back. Denied (`retryAfterMs` Infinity) when the lease is no
   * longer held: it expired, or was released.
   */
  renew?: () => Decision | Promise<Decision>;
}

/** Why a decision did not come from the store: the failure policy that answered and the error. */
export interface DecisionFailure {
  /** `"deny"`/`"allow"`: the fixed answer; `"fallback"`: the fallback limiter decided. */
  policy: "deny" | "allow" | "fallback";
  /** The store error (`ERR_STORE` or `ERR_STORE_TIMEOUT`), with the original as `cause`. */
  error: Error;
}

/**
 * Builds a Decision; the single place its shape is created, so every path has the same fields.
 * It is also the one place `-0` is normalised (`Math.ceil(-0.5)` is `-0`): `x + 0` is `+0` for
 * both zeros and `x` otherwise, so every figure that leaves an algorithm is a plain number.
 */
export function decision(
  allowed: boolean,
  limit: number,
  remaining: number,
  retryAfterMs: number,
  resetMs: number,
  delayMs = 0,
): Decision {
  // The fields are stored here, not by a constructor: `new` of a class whose constructor V8 did
  // not inline (its inlining budget spent) is a generic construct call, ~230 instructions where
  // an inlined one costs a few; the implicit constructor left is small enough to inline always.
  const d = new Decided();
  d.allowed = allowed;
  d.limit = limit;
  d.remaining = remaining + 0;
  d.retryAfterMs = retryAfterMs + 0;
  d.resetMs = resetMs + 0;
  d.delayMs = delayMs + 0;
  return d;
}

/**
 * A Decision as `decision()` builds it: the fields of the interface, plus `at` kept in a private
 * field behind an accessor, so it is read as `decision.at` but not enumerated, compared or
 * serialised (decisions compare and print as before), and stamping it is a plain store.
 * The fields are declared, not defined, and assigned by `decision()` in the interface's order:
 * a defined class field would be set (to `undefined`) before it is assigned, doubling the stores
 * on the hot path; V8's slack tracking still keeps all seven fields in the object.
 */
class Decided implements Decision {
  #at: number | undefined = undefined;
  declare allowed: boolean;
  declare limit: number;
  declare remaining: number;
  declare retryAfterMs: number;
  declare resetMs: number;
  declare delayMs: number;
  declare parts?: Decision[];
  declare failure?: DecisionFailure;
  declare approximate?: true;
  declare banned?: true;
  /** Stamps `d` if it is a Decided (a plain store); false for any other decision. */
  static stamp(d: Decision, at: number): boolean {
    if (!(#at in d)) return false;
    (d as Decided).#at = at;
    return true;
  }
  get at(): number | undefined {
    return this.#at;
  }
  set at(value: number | undefined) {
    this.#at = value;
  }
  /** Prints (console.log, util.inspect) as the plain object the interface describes, not as a class. */
  [Symbol.for("nodejs.util.inspect.custom")](): object {
    return { ...this };
  }
}

/** Stamps `d` with the instant it was decided (its receipt for refunds and leases). */
export function stampAt(d: Decision, at: number): Decision {
  // Decisions built by decision() keep `at` behind an accessor (a plain store); others get it
  // out of line (kept small: this is on every in-process decision's path).
  if (!Decided.stamp(d, at)) stampOther(d, at);
  return d;
}

/** Stamps a decision not built by decision() (decoded from a remote store, a composite). */
function stampOther(d: Decision, at: number): void {
  // Not enumerated, so every decision compares and prints alike.
  if ("at" in d) d.at = at;
  else Object.defineProperty(d, "at", { value: at, writable: true, configurable: true });
}

/** Tolerance for float noise in quotients such as `periodMs / limit` (far below the 1 ms docs/semantics.md §5 allows). */
export const EPSILON = 1e-6;

/** Rounds a positive duration up to whole ms, ignoring float noise below {@link EPSILON}; never negative. */
export function ceilMs(ms: number): number {
  return ms <= EPSILON ? 0 : Math.ceil(ms - EPSILON);
}
