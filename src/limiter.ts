/**
 * `createLimiter`: a validated rule (one spec or a composite) bound to a store and a clock.
 * The limiter owns what every store shares: reading the clock once per decision, validating
 * keys and costs, waiting in `acquire`.
 */
import { type AcquireOptions, waitQueuesOf, wakeWaiter } from "./acquire.ts";
import { type Decision, stampAt } from "./algorithms/decision.ts";
import { type BanPolicy, validateBan } from "./core/ban.ts";
import { type Clock, isOwnClock, stopwatch, systemClock } from "./core/clock.ts";
import { combine } from "./core/composite.ts";
import { isFreshAnswer, type Operation } from "./core/decide-rule.ts";
import { describeValue } from "./core/describe-value.ts";
import { ArgumentError, StoreError } from "./core/errors.ts";
import { gone, type LeaseAct } from "./core/hold-lease.ts";
import { describeIdentity, identityText, type RuleIdentity } from "./core/identity.ts";
import { checkMaxKeyBytes, DEFAULT_MAX_KEY_BYTES, keyBound, keysSurelyFitting } from "./core/key-bound.ts";
import { compileRule } from "./core/rule.ts";
import type { AlgorithmSpec, RuleSpec } from "./core/spec.ts";
import { validateRule } from "./core/spec.ts";
import type { BoundRule, Store } from "./core/store.ts";
import { warn } from "./core/warn.ts";
import { holdLease, leaseThrough, successorOf } from "./lease.ts";
import { resetLedgerOf } from "./lease-resets.ts";
import { MemoryStore } from "./stores/memory/memory-store.ts";

/** Options of {@link createLimiter}. */
export interface LimiterOptions<S extends Store = Store> {
  /** Time source (default: `systemClock`, or Redis server time on a `RedisStore`). */
  clock?: Clock;
  /** Where state lives (default: a new `MemoryStore`). */
  store?: S;
  /**
   * Namespace of this limiter's state in its store. Limiters with the same name (or, without
   * one, the same spec) on one store share state, which is how a fleet shares a Redis limit.
   * Names live in their own namespace: no name can reach a service rule's state or a
   * spec-derived one.
   */
  name?: string;
  /** Escalation: after `after` denials within `withinMs`, the key is refused for `forMs`. */
  ban?: BanPolicy;
  /**
   * Called after every check, peek and refund with what was decided (or the store error that
   * rejected it) and how long it took: the hook metrics and tracing build on (`sluice/otel`).
   * It must not throw; what it throws is reported with `process.emitWarning` and ignored.
   */
  onDecision?: (event: DecisionEvent) => void;
  /**
   * Keys longer than this many UTF-8 bytes (default 1024) are stored as `sha256:<digest>` of
   * the key, with a warning the first time (src/core/key-bound.ts); `onDecision` sees that form.
   */
  maxKeyBytes?: number;
}

/** What `onDecision` receives. */
export interface DecisionEvent {
  /** The limiter's identity as stores see it: `identityText(identity)`. */
  id: string;
  /** The limiter's identity: a named limiter, an unnamed spec, or a service rule and tier. */
  identity: RuleIdentity;
  key: string;
  cost: number;
  op: Operation;
  /** The decision (absent when the store rejected the call). */
  decision?: Decision;
  /** The error a store rejected the call with (a `StoreError` under `onError: "throw"`). */
  error?: unknown;
  /** Time the decision took, in ms (including the store round trip). */
  durationMs: number;
}

/** What a check returns on store `S`: a plain Decision in-process, a promise on Redis. */
export type Result<S extends Store> = S["synchronous"] extends true
  ? Decision
  : S["synchronous"] extends false
    ? Promise<Decision>
    : Decision | Promise<Decision>;

/** What `reset` returns on store `S`: nothing in-process, a promise on Redis. */
export type ResetResult<S extends Store> = S["synchronous"] extends true
  ? undefined
  : S["synchronous"] extends false
    ? Promise<void>
    : Promise<void> | undefined;

/** A rate limiter: one rule applied per key. */
export interface Limiter<S extends Store = Store> {
  /** The rule's normalised member specs (one, or several for a composite). */
  readonly specs: readonly AlgorithmSpec[];
  /** Takes `cost` units (default 1) for `key` if the rule allows it; a denial changes nothing. */
  tryAcquire(key: string, cost?: number): Result<S>;
  /** What `tryAcquire` would say now; changes nothing. */
  peek(key: string, cost?: number): Result<S>;
  /**
   * Gives units back to `key` (a request that turned out not to count), never above the limit;
   * returns what `peek(key)` then says. With a receipt, `{ cost, at }` where `at` is the
   * refunded check's `decision.at`, only units that check took and the algorithm still counts
   * come back (a past fixed window, a log entry that left the window: nothing), never another
   * request's. With a bare `cost` (default 1), up to `cost` of the units the key holds now come
   * back, newest first: it cannot tell whose they are (see docs/semantics.md, refunds). Leases
   * (a concurrency member) are left alone: they leave by `release` or expiry.
   */
  refund(key: string, cost?: number | RefundReceipt): Result<S>;
  /**
   * Takes `cost` units (default 1) for `key` whether or not they fit (rate-limiter-flexible's
   * `penalty`): past the limit they are still counted, and the key recovers from them as the
   * algorithm recovers from units it took. Returns what `peek(key)` then says.
   */
  penalty(key: string, cost?: number): Result<S>;
  /**
   * Refuses `key` for `ms` from now (rate-limiter-flexible's `block`): answered as banned, with
   * `retryAfterMs` the time left (never sooner than the limit allows), replacing a running block
   * or ban, on any rule (see src/core/block.ts); `reset` lifts it, refunds do not.
   */
  block(key: string, ms: number): Result<S>;
  /**
   * The key's state now, as what `peek(key)` of one unit says; `null` for a key whose state is
   * equivalent to a fresh (or absent) key's, like rate-limiter-flexible's `get`.
   */
  get(
    key: string,
  ): S["synchronous"] extends true
    ? Decision | null
    : S["synchronous"] extends false
      ? Promise<Decision | null>
      : Decision | null | Promise<Decision | null>;
  /** Forgets `key`: its next request is treated as a new key's. */
  reset(
    key: string,
  ): S["synchronous"] extends true ? void : S["synchronous"] extends false ? Promise<void> : void | Promise<void>;
  /**
   * Gives back `cost` (default 1) leases of `key` acquired, or last renewed, at `at` (the
   * decision's `at`): the concurrency members of the rule free those slots; rate members are
   * untouched. A lease that already expired (or was released) frees nothing. Returns what
   * `peek(key)` then says. An allowed decision's own `release()` calls this once.
   */
  release(key: string, receipt: LeaseReceipt): Result<S>;
  /**
   * Renews `cost` (default 1) leases of `key` acquired, or last renewed, at `at`: their
   * `leaseMs` starts again now, and the answer's `at` is their new receipt. Denied, changing
   * nothing, when they are no longer held (expired or released).
   */
  renew(key: string, receipt: LeaseReceipt): Result<S>;
  /** Waits (FIFO per key) until allowed; rejects with WaitTimeoutError or the abort reason. */
  acquire(key: string, options?: AcquireOptions): Promise<Decision>;
  /** Releases this limiter's hold on its store state (for rules replaced at runtime). */
  close(): void;
}

/**
 * How often `acquire` tries again on a rule with a concurrency member whose store other
 * processes share: their releases free slots long before the retryAfterMs a denial gives (the
 * oldest lease's expiry), and are announced to no one here. Releases in this process wake the
 * waiters at once (src/acquire.ts). One check per waiting key per 25 ms.
 */
const LEASE_POLL_MS = 25;

/** Checks a key argument; keys are arbitrary strings, including the empty string. */
export function checkKey(key: unknown): asserts key is string {
  if (typeof key !== "string") {
    throw new ArgumentError(`key must be a string (got ${typeof key === "object" ? String(key) : typeof key})`, {
      field: "key",
    });
  }
}

/** Checks a cost argument: a safe integer ≥ 1. */
export function checkCost(cost: unknown): asserts cost is number {
  if (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1) {
    throw new ArgumentError(`cost must be a positive integer (got ${describeValue(cost)})`, { field: "cost" });
  }
}

function isClock(value: unknown): value is Clock {
  return typeof value === "object" && value !== null && typeof (value as Clock).now === "function";
}

const OPTION_KEYS = new Set(["clock", "store", "name", "ban", "onDecision", "maxKeyBytes"]);

/**
 * Normalises the `options | clock` argument shared by `createLimiter` and `RateLimiterService`:
 * any object with a `now()` method is a Clock; otherwise an options object whose fields are
 * checked here, so a typo or a broken clock/store fails at construction with an ArgumentError
 * rather than at the first request.
 */
export function resolveOptions<S extends Store>(options: LimiterOptions<S> | Clock | undefined): LimiterOptions<S> {
  if (options === undefined) return {};
  if (isClock(options)) return { clock: options };
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ArgumentError(`options must be an object or a Clock (got ${describeValue(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw new ArgumentError(`unknown option \`${key}\` (expected ${[...OPTION_KEYS].join(", ")})`);
    }
  }
  const { clock, store, name } = options;
  if (clock !== undefined && !isClock(clock)) {
    throw new ArgumentError(`\`clock\` must have a now() method (got ${describeValue(clock)})`);
  }
  if (
    store !== undefined &&
    (typeof store !== "object" || store === null || typeof (store as Store).bind !== "function")
  ) {
    throw new ArgumentError(
      `\`store\` must be a Store such as MemoryStore or RedisStore (got ${describeValue(store)})`,
    );
  }
  if (name !== undefined && typeof name !== "string") {
    throw new ArgumentError(`\`name\` must be a string (got ${describeValue(name)})`);
  }
  const { onDecision } = options as LimiterOptions<S>;
  if (onDecision !== undefined && typeof onDecision !== "function") {
    throw new ArgumentError(`\`onDecision\` must be a function (got ${describeValue(onDecision)})`);
  }
  checkMaxKeyBytes((options as LimiterOptions<S>).maxKeyBytes);
  return options;
}

/** What a refund names: the units and, as a receipt, the instant its check was decided. */
export interface RefundReceipt {
  /** Units to give back (default 1). */
  cost?: number;
  /** The refunded check's `decision.at`: only what that check took (and still counts) comes back. */
  at?: number;
}

/** Splits `refund`'s second argument into a cost and a receipt (ArgumentError naming what is wrong). */
export function refundArgs(arg: number | RefundReceipt | undefined): [number, number | undefined] {
  if (arg === undefined || typeof arg === "number") return [arg ?? 1, undefined];
  if (typeof arg !== "object" || arg === null) {
    throw new ArgumentError(`refund takes a cost or { cost, at } (got ${describeValue(arg)})`);
  }
  return receiptArgs("refund", arg, "a decision's `at`", false);
}

/**
 * The `{ cost, at }` of a refund or a lease call: unknown keys and an `at` that is not a finite
 * instant are refused, naming `call`; `at` may be absent only when not `required`.
 */
function receiptArgs(call: string, arg: object, atIs: string, required: boolean): [number, number | undefined] {
  for (const k of Object.keys(arg)) {
    if (k !== "cost" && k !== "at") throw new ArgumentError(`unknown ${call} option \`${k}\` (expected cost, at)`);
  }
  const { cost = 1, at } = arg as { cost?: number; at?: unknown };
  if ((required || at !== undefined) && (typeof at !== "number" || !Number.isFinite(at))) {
    throw new ArgumentError(`${call} \`at\` must be a finite instant in ms (${atIs}) (got ${describeValue(at)})`);
  }
  return [cost, at as number | undefined];
}

/** Stamps a decision with the instant it was decided (its receipt for `refund`). */
function stamp(d: Decision, at: number | undefined): Decision {
  return at === undefined ? d : stampAt(d, at);
}

/** What `release` and `renew` name: the leases (default 1) and their receipt. */
export interface LeaseReceipt {
  /** Leases to release or renew: the `cost` the check took (default 1). */
  cost?: number;
  /** The receipt: the acquiring (or last renewing) decision's `at`. */
  at: number;
}

/** Splits a lease receipt into a cost and an instant (ArgumentError naming what is wrong). */
export function leaseArgs(call: "release" | "renew", arg: unknown): [number, number] {
  if (typeof arg !== "object" || arg === null || Array.isArray(arg)) {
    throw new ArgumentError(`${call} takes { cost?, at } (got ${describeValue(arg)})`);
  }
  const [cost, at] = receiptArgs(call, arg, "the acquiring decision's `at`", true);
  checkCost(cost);
  return [cost, at as number];
}

/** Reads an injected clock, refusing readings that would silently poison every figure. */
function read(clock: Clock): number {
  const now = clock.now();
  // (`now - now` is 0 for a finite number only: NaN and ±Infinity give NaN.) The throw is out
  // of line: this runs on every decision, inside V8's inlining budget.
  if (typeof now !== "number" || now - now !== 0) badReading(now);
  return now;
}

/** Refuses a clock reading that is not a finite number of ms. */
function badReading(now: unknown): never {
  throw new ArgumentError(`clock.now() must return a finite number of ms (got ${describeValue(now)})`);
}

/**
 * The identity of a limiter built by `createLimiter`: its `name`, or else its normalised specs
 * (`validateRule`'s output). Stores key its records by `identityText` of it.
 */
export function limiterIdentity(name: string | undefined, specs: readonly AlgorithmSpec[]): RuleIdentity {
  return name === undefined ? { kind: "spec", shape: JSON.stringify(specs) } : { kind: "name", name };
}

/**
 * Builds a limiter from a spec (or an array of specs: a composite that passes only if every
 * member passes). Throws ConfigError naming the bad field.
 *
 * @example
 * const limiter = createLimiter({ algorithm: "token-bucket", capacity: 10, refillPerSecond: 2 });
 * if (!limiter.tryAcquire(userId).allowed) reply429();
 */
export function createLimiter<S extends Store = MemoryStore>(
  spec: RuleSpec,
  options?: LimiterOptions<S> | Clock,
): Limiter<S> {
  const specs = validateRule(spec);
  const opts = resolveOptions(options);
  const ban = validateBan(opts.ban);
  const store: Store = opts.store ?? new MemoryStore();
  const identity = limiterIdentity(opts.name, specs);
  if (opts.name === undefined && opts.store !== undefined) warnOnReuse(opts.store, identity);
  return bindLimiter(
    specs,
    store,
    opts.clock,
    identity,
    Array.isArray(spec),
    ban,
    opts.onDecision,
    opts.maxKeyBytes,
  ) as Limiter<S>;
}

/** Spec-derived identities already bound per store (to report accidental sharing once). */
const unnamed = new WeakMap<Store, Set<string>>();

/**
 * Two unnamed limiters with the same spec on one store share their counters: usually a mistake
 * (two routes limited "5 per minute" each, sharing one budget). Reported once per identity.
 */
function warnOnReuse(store: Store, identity: RuleIdentity): void {
  const id = identityText(identity);
  let ids = unnamed.get(store);
  if (ids === undefined) unnamed.set(store, (ids = new Set()));
  if (!ids.has(id)) {
    ids.add(id);
    return;
  }
  if (ids.has(`warned:${id}`)) return;
  ids.add(`warned:${id}`);
  warn(
    `Two limiters with the same spec on one store share state (${describeIdentity(identity)}). Give each a \`name\` to keep them apart, or the same name to share on purpose.`,
    "SLUICE_LIMITER_REUSE",
  );
}

/**
 * The fast lane's `tryAcquire`: a one-unit check of a fitting string key goes straight to the
 * store's `one`, read at `tick()`; any other call to `run`. Built by a function of its own so
 * the lane reads its parts as parameters: a `const` of `bindLimiter`'s body captured by a
 * closure is read through a TDZ check, bytes that count against V8's inlining budget.
 */
function fastLane(
  one: (key: string, now: number) => Decision,
  tick: () => number,
  fits: number,
  run: (key: string, cost: number | undefined, op: Operation) => Decision,
): (key: string, cost?: number) => Decision {
  return (key, cost) => {
    // (A key that may need hashing takes the general path, as any other call does.)
    if ((cost !== undefined && cost !== 1) || typeof key !== "string" || key.length > fits) {
      return run(key, cost, "check");
    }
    const now = tick();
    return stampAt(one(key, now), now);
  };
}

/** Builds a limiter for already validated specs (used by the service for rules and tiers). */
export function bindLimiter(
  specs: AlgorithmSpec[],
  store: Store,
  clock: Clock | undefined,
  identity: RuleIdentity,
  composite = specs.length > 1,
  ban?: BanPolicy,
  onDecision?: (event: DecisionEvent) => void,
  maxKeyBytes = DEFAULT_MAX_KEY_BYTES,
): Limiter {
  const compiled = compileRule(specs, ban);
  const id = identityText(identity);
  const bound: BoundRule = store.bind({ id, identity, rule: compiled, clock });
  // The one place keys are bounded: every store sees at most maxKeyBytes per key.
  const boundKey = keyBound(maxKeyBytes, id);
  // An array of one spec is still a composite: its decisions carry `parts`.
  const checked = composite && specs.length === 1 ? withParts(bound.check) : bound.check;
  // Without a hook the hot path stays one direct call into the store.
  const decide = onDecision === undefined ? checked : observed(checked, identity, onDecision);
  // Rules with a concurrency member hold leases: their allowed checks carry release()/renew().
  const leased = compiled.members.some((m) => m.renew !== undefined);
  // A lease's receipt is the instant its check was decided: the limiter's clock, or the store's
  // own when it stamps it (Redis TIME); any other store is told the system clock's reading.
  const ownTime = clock === undefined && (!leased || store.stampsLeases === true);
  const leaseCall = (call: "release" | "renew") => {
    if (!leased) {
      const kinds = specs.map((s) => s.algorithm).join(", ");
      throw new ArgumentError(`${call} needs a rule with a concurrency member (${kinds} hold no leases)`);
    }
  };
  let tryLease: (key: string, cost: number) => Decision | Promise<Decision> = () => {
    throw new Error("unreachable: set below");
  };
  // This limiter, once built: its lease handles act through its successor after updateRule.
  let self: Limiter | undefined;
  /** A slot of `key` may be free now: its first waiter in this process tries again. */
  // The wait queues are shared by the limiters of this rule on this store (a release through any
  // of them wakes its waiters), and looked up only when used: nothing is kept per rule while none waits.
  const freed = (key: string) => wakeWaiter(store, id, boundKey(key));
  // Resets through any limiter on this store: a handle taken before its key's reset acts no more.
  const resets = resetLedgerOf(store);
  const resetKey = (key: string) => `${id}\n${boundKey(key)}`;
  /**
   * `act` for a lease of `key` taken now, unless the key is reset meanwhile: a stale release
   * answers the peek (frees nothing), a stale renewal is denied for good.
   */
  const unlessReset = (key: string, act: LeaseAct, peek: () => Decision | Promise<Decision>): LeaseAct => {
    const born = resets.epoch;
    return (op, at) => {
      if (!resets.resetSince(resetKey(key), born)) return act(op, at);
      const d = peek();
      if (op === "release") return d;
      return d instanceof Promise ? d.then(gone) : gone(d);
    };
  };
  // A MemoryStore is this process's alone: every release is seen by `freed`, so no poll.
  const leasePollMs = store instanceof MemoryStore ? Number.POSITIVE_INFINITY : LEASE_POLL_MS;
  const acquire = async (key: string, acquireOptions: AcquireOptions = {}) => {
    checkKey(key);
    const cost = acquireOptions.cost ?? 1;
    checkCost(cost);
    const stored = boundKey(key);
    if (leased) {
      return waitQueuesOf(store, id).acquire(
        stored,
        acquireOptions,
        clock ?? systemClock,
        (c) => tryLease(key, c),
        leasePollMs,
      );
    }
    return waitQueuesOf(store, id).acquire(stored, acquireOptions, clock ?? systemClock, (c) =>
      decide(stored, c, clock === undefined ? undefined : read(clock), "check"),
    );
  };
  const close = () => bound.release();
  // rate-limiter-flexible's calls: refused up front, never decided wrongly, where they cannot run.
  const flexible = (call: "penalty" | "block" | "get", ms?: unknown) => {
    if (store.flexibleCalls !== true) {
      throw new StoreError(`${call} is not supported on ${store.constructor.name} yet (use a MemoryStore)`);
    }
    if (call === "penalty") {
      const kinds = compiled.members.filter((m) => m.force === undefined).map((m) => m.kind);
      if (kinds.length > 0) throw new ArgumentError(`penalty is not supported by ${kinds.join(", ")}`);
    }
    if (call === "block") {
      if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 1) {
        throw new ArgumentError(`block \`ms\` must be a positive integer (got ${describeValue(ms)})`);
      }
    }
  };
  if (store.synchronous) {
    // The hot path: one call into the store, no promises; argument errors throw.
    const run = (key: string, cost: number | undefined, op: Operation, at?: number) => {
      if (typeof key !== "string") checkKey(key);
      if (cost === undefined) cost = 1;
      else if (cost !== 1) checkCost(cost);
      const now = clock === undefined ? systemClock.now() : read(clock);
      return stampAt(decide(boundKey(key), cost, now, op, at) as Decision, now);
    };
    /** A lease handle's call: through the rule's current limiter after updateRule, else here. */
    const lease = (key: string, cost: number, op: "release" | "renew", at: number) => {
      const next = successorOf(self as Limiter);
      if (next !== undefined) return leaseThrough(next, key, cost, op, at);
      const d = run(key, cost, op, at);
      if (op === "release") freed(key);
      return d;
    };
    tryLease = (key, cost) => {
      const peek = () => (successorOf(self as Limiter) ?? { peek: (k: string) => run(k, 1, "peek") }).peek(key);
      const act = unlessReset(key, (op, at) => lease(key, cost, op, at), peek);
      return holdLease(run(key, cost, "check"), act, peek);
    };
    // The fast lane: `tryAcquire(key)` (one unit) of a rule the store decides with nothing around
    // it (no hook, no parts to add, no leases) goes straight to the store's one-unit check, on
    // any store whose bound rule offers one (`BoundRule.checkOne`: MemoryStore, SharedMemoryStore).
    const one = decide === bound.check && !leased ? bound.checkOne : undefined;
    // (The reading is bound here: the lane's bytecode counts against V8's inlining budget.)
    const fits = keysSurelyFitting(maxKeyBytes);
    const tick = clock === undefined ? systemClock.now : isOwnClock(clock) ? clock.now : () => read(clock);
    const lane = one === undefined ? undefined : fastLane(one, tick, fits, run);
    self = {
      specs,
      // Rules without a concurrency member keep the one direct call.
      tryAcquire: leased
        ? (key, cost = 1) => tryLease(key, cost) as Decision
        : (lane ?? ((key, cost) => run(key, cost, "check"))),
      release: (key, arg) => {
        leaseCall("release");
        const [cost, at] = leaseArgs("release", arg);
        const d = run(key, cost, "release", at);
        freed(key);
        return d;
      },
      renew: (key, arg) => {
        leaseCall("renew");
        const [cost, at] = leaseArgs("renew", arg);
        return run(key, cost, "renew", at);
      },
      peek: (key, cost) => run(key, cost, "peek"),
      refund: (key, arg) => {
        const [cost, at] = refundArgs(arg);
        return run(key, cost, "refund", at);
      },
      penalty: (key, cost) => {
        flexible("penalty");
        return run(key, cost, "penalty");
      },
      block: (key, ms) => {
        flexible("block", ms);
        return run(key, ms, "block");
      },
      get: (key) => {
        flexible("get");
        const d = run(key, 1, "get");
        return isFreshAnswer(d) ? null : d;
      },
      reset: (key) => {
        checkKey(key);
        if (leased) resets.reset(resetKey(key));
        // In-process stores reset synchronously; their `reset` returns nothing to wait for.
        void bound.reset(boundKey(key));
        freed(key);
        return undefined;
      },
      acquire,
      close,
    };
    return self;
  }
  // Async stores: argument errors reject, so callers handle one failure style.
  const run = (key: string, cost: number, op: Operation, at?: number): Promise<Decision> => {
    try {
      checkKey(key);
      if (cost !== 1) checkCost(cost);
      // Without a clock the store's own time decides (Redis TIME): the limiter cannot stamp `at`
      // (a store that stamps leases does, see Store.stampsLeases).
      const now = clock !== undefined ? read(clock) : ownTime ? undefined : systemClock.now();
      const decided = decide(boundKey(key), cost, now, op, at);
      // The hot path hands back the store's own promise: no async frame and no extra turn per call.
      if (now === undefined && decided instanceof Promise) return decided;
      return Promise.resolve(decided).then((d) => stamp(d, now));
    } catch (error) {
      return Promise.reject(error);
    }
  };
  /** A lease handle's call: through the rule's current limiter after updateRule, else here. */
  const lease = (key: string, cost: number, op: "release" | "renew", at: number) => {
    const next = successorOf(self as Limiter);
    if (next !== undefined) return leaseThrough(next, key, cost, op, at);
    const d = run(key, cost, op, at);
    if (op === "release")
      void d.then(
        () => freed(key),
        () => {},
      );
    return d;
  };
  tryLease = (key, cost) => {
    const peek = () => (successorOf(self as Limiter) ?? { peek: (k: string) => run(k, 1, "peek") }).peek(key);
    // Noted before the check is sent: a reset racing it counts (the slot then expires, never doubles).
    const act = unlessReset(key, (op, at) => lease(key, cost, op, at), peek);
    return run(key, cost, "check").then((d) => holdLease(d, act, peek));
  };
  self = {
    specs,
    tryAcquire: leased ? (key, cost = 1) => tryLease(key, cost) : (key, cost = 1) => run(key, cost, "check"),
    release: async (key, arg) => {
      leaseCall("release");
      const [cost, at] = leaseArgs("release", arg);
      const d = await run(key, cost, "release", at);
      freed(key);
      return d;
    },
    renew: async (key, arg) => {
      leaseCall("renew");
      const [cost, at] = leaseArgs("renew", arg);
      return run(key, cost, "renew", at);
    },
    peek: (key, cost = 1) => run(key, cost, "peek"),
    refund: async (key, arg) => {
      const [cost, at] = refundArgs(arg);
      return run(key, cost, "refund", at);
    },
    penalty: async (key, cost = 1) => {
      flexible("penalty");
      return run(key, cost, "penalty");
    },
    block: async (key, ms) => {
      flexible("block", ms);
      return run(key, ms, "block");
    },
    get: async (key) => {
      flexible("get");
      const d = await run(key, 1, "get");
      return isFreshAnswer(d) ? null : d;
    },
    reset: async (key) => {
      checkKey(key);
      if (leased) resets.reset(resetKey(key));
      await bound.reset(boundKey(key));
      freed(key);
    },
    acquire,
    close,
  } as Limiter;
  return self;
}

/** Wraps a check so every outcome reaches `onDecision` with its duration. */
function observed(
  check: BoundRule["check"],
  identity: RuleIdentity,
  onDecision: (event: DecisionEvent) => void,
): BoundRule["check"] {
  const report = (event: DecisionEvent) => {
    try {
      onDecision(event);
    } catch (error) {
      warn(`onDecision threw: ${(error as Error)?.message ?? String(error)}`, "SLUICE_HOOK");
    }
  };
  const id = identityText(identity);
  return (key, cost, now, op, at) => {
    const started = stopwatch();
    const result = check(key, cost, now, op, at);
    if (!(result instanceof Promise)) {
      report({ id, identity, key, cost, op, decision: result, durationMs: stopwatch() - started });
      return result;
    }
    return result.then(
      (decision) => {
        report({ id, identity, key, cost, op, decision, durationMs: stopwatch() - started });
        return decision;
      },
      (error: unknown) => {
        report({ id, identity, key, cost, op, error, durationMs: stopwatch() - started });
        throw error;
      },
    );
  };
}

/**
 * The one-member composite's decision for its member's `d`: `combine` builds the figures; the
 * flags the store set on `d` itself (read back from the summary, banned) are the composite's
 * too, as on any composite (they were lost here: `approximate` showed only on `parts[0]`).
 */
function asComposite(d: Decision): Decision {
  const c = combine([d]);
  if (d.approximate === true) c.approximate = true;
  if (d.banned === true) c.banned = true;
  return c;
}

/** Wraps a one-member composite's check so its decisions carry `parts` like any composite. */
function withParts(check: BoundRule["check"]): BoundRule["check"] {
  // A fresh `get` answer stays itself: the limiter turns it into `null`.
  const wrap = (d: Decision): Decision =>
    d.parts !== undefined || d.failure !== undefined || isFreshAnswer(d) ? d : asComposite(d);
  return (key, cost, now, op, at) => {
    const result = check(key, cost, now, op, at);
    return result instanceof Promise ? result.then(wrap) : wrap(result);
  };
}
