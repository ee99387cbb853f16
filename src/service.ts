/**
 * `RateLimiterService`: named rules (each one spec or a composite), optional tiers per rule,
 * runtime updates that keep state which still fits. Callers name a rule; they never see the
 * algorithm behind it.
 */

import type { Decision } from "./algorithms/decision.ts";
import { decideAllAsync, decideAllSync } from "./check-all.ts";
import { type BanPolicy, validateBan } from "./core/ban.ts";
import type { Clock } from "./core/clock.ts";
import { ArgumentError, DuplicateRuleError, UnknownRuleError } from "./core/errors.ts";
import type { RuleIdentity } from "./core/identity.ts";
import { checkOptions } from "./core/options.ts";
import { type AlgorithmSpec, type LimitSpec, type RuleSpec, validateRule } from "./core/spec.ts";
import type { Store } from "./core/store.ts";
import { handOver } from "./lease.ts";
import {
  bindLimiter,
  checkCost,
  checkKey,
  type Limiter,
  type LimiterOptions,
  type ResetResult,
  type Result,
  resolveOptions,
} from "./limiter.ts";
import { MemoryStore } from "./stores/memory/memory-store.ts";

/** Options of `addRule` / `updateRule`. */
export interface RuleOptions {
  /** Alternative specs selected per call with `{ tier }`, e.g. `{ pro: {...}, free: {...} }`. */
  tiers?: Record<string, LimitSpec | readonly LimitSpec[]>;
  /** Escalation for the rule and each of its tiers: after `after` denials within `withinMs`, refused for `forMs`. */
  ban?: BanPolicy;
}

/** Options of `check` / `peek`. */
export interface CheckOptions {
  /** Units to take (default 1). */
  cost?: number;
  /** Which of the rule's tiers applies (default: the rule's own spec). */
  tier?: string;
}

/** One item of `checkAll`: a check as `check(rule, key, { cost, tier })` would take it. */
export interface GroupCheck {
  rule: string;
  key: string;
  cost?: number;
  tier?: string;
}

/** A registered rule as `rules()` describes it. */
export interface RuleInfo {
  name: string;
  specs: AlgorithmSpec[];
  tiers: Record<string, AlgorithmSpec[]>;
  /** The rule's ban policy, if any (it applies to every tier). */
  ban?: BanPolicy;
}

interface Rule {
  info: RuleInfo;
  base: Limiter;
  tiers: Map<string, Limiter>;
  /** The options as given (tiers: a spec or an array each), so an update can keep them exactly. */
  given: RuleOptions | undefined;
}

/** What `get` returns on store `S`: a Decision or null in-process, a promise of one on Redis. */
export type GetResult<S extends Store> = S["synchronous"] extends true
  ? Decision | null
  : S["synchronous"] extends false
    ? Promise<Decision | null>
    : Decision | null | Promise<Decision | null>;

/** The options of a check (`check(rule, key, { cost, tier })`), also those the service client takes. */
export const CHECK_OPTIONS = ["cost", "tier"] as const satisfies readonly (keyof CheckOptions)[];

/**
 * Named rate-limit rules over one store and clock.
 *
 * @example
 * const service = new RateLimiterService().addRule("login", { algorithm: "sliding-log", limit: 5, windowMs: 3_600_000 });
 * service.check("login", accountId).allowed
 */
export class RateLimiterService<S extends Store = MemoryStore> {
  readonly #store: Store;
  readonly #clock: Clock | undefined;
  readonly #rules = new Map<string, Rule>();
  readonly #onDecision: LimiterOptions["onDecision"];
  readonly #maxKeyBytes: number | undefined;

  /** Uses `options.store` (default: a new MemoryStore) and `options.clock` (or a Clock given directly). */
  constructor(options?: Pick<LimiterOptions<S>, "clock" | "store" | "onDecision" | "maxKeyBytes"> | Clock) {
    const opts = resolveOptions(options);
    this.#onDecision = (options as LimiterOptions<S> | undefined)?.onDecision;
    this.#maxKeyBytes = opts.maxKeyBytes;
    // `name` and `ban` belong to rules (addRule), not to the service: refused rather than ignored.
    for (const key of ["name", "ban"] as const) {
      if (opts[key] !== undefined) {
        throw new ArgumentError(
          `RateLimiterService: unknown option \`${key}\` (expected clock, store; ${key === "ban" ? "give `ban` to addRule" : "rules are named by addRule"})`,
        );
      }
    }
    this.#store = opts.store ?? new MemoryStore();
    this.#clock = opts.clock;
  }

  /** The store rules keep their state in. */
  get store(): Store {
    return this.#store;
  }

  /** Registers `name`; throws DuplicateRuleError if it exists, ConfigError if a spec is invalid. */
  addRule(name: string, spec: RuleSpec, options?: RuleOptions): this {
    checkName(name);
    if (this.#rules.has(name)) throw new DuplicateRuleError(name);
    this.#rules.set(name, this.#build(name, spec, options));
    return this;
  }

  /**
   * Replaces `name`'s specs (and tiers, when `options` is given) for later calls. State is kept wherever the member's
   * algorithm is unchanged (a raised limit keeps today's count); a member whose algorithm
   * changed starts fresh. Nothing changes if the new spec is invalid.
   */
  updateRule(name: string, spec: RuleSpec, options?: RuleOptions): this {
    const old = this.#get(name);
    // Without options the rule keeps its tiers; pass `{ tiers: {} }` to drop them.
    const rule = this.#build(name, spec, options ?? old.given);
    this.#rules.set(name, rule);
    // Requests in flight release (and renew) their leases through the rule as it now stands.
    handOver(old.base, rule.base);
    for (const [tier, limiter] of old.tiers) {
      const next = rule.tiers.get(tier);
      if (next !== undefined) handOver(limiter, next);
    }
    closeRule(old);
    return this;
  }

  /** Removes `name` and its state; returns whether it existed. */
  removeRule(name: string): boolean {
    const rule = this.#rules.get(name);
    if (rule === undefined) return false;
    this.#rules.delete(name);
    closeRule(rule);
    return true;
  }

  /** Whether `name` is registered. */
  hasRule(name: string): boolean {
    return this.#rules.has(name);
  }

  /** One rule's normalised specs and tiers, or undefined (O(1); the object changes on update). */
  getRule(name: string): RuleInfo | undefined {
    return this.#rules.get(name)?.info;
  }

  /** The registered rules with their normalised specs. */
  rules(): RuleInfo[] {
    return [...this.#rules.values()].map((r) => r.info);
  }

  /** Takes `cost` units of `rule` for `key`; UnknownRuleError / ArgumentError on bad names. */
  check(rule: string, key: string, options?: CheckOptions): Result<S> {
    return this.#guard(() => this.#limiter(rule, options).tryAcquire(key, options?.cost)) as Result<S>;
  }

  /**
   * Decides several checks as one (see src/check-all.ts): if any is denied, none consumes and
   * every item gets what `peek` then says; otherwise every item is taken. Items are validated
   * before anything is decided. Decisions come back in item order.
   */
  checkAll(items: readonly GroupCheck[]): S["synchronous"] extends true ? Decision[] : Promise<Decision[]> {
    type Out = S["synchronous"] extends true ? Decision[] : Promise<Decision[]>;
    return this.#guard(() => {
      const group = items.map((item) => {
        const limiter = this.#limiter(item.rule, {
          ...(item.cost === undefined ? {} : { cost: item.cost }),
          ...(item.tier === undefined ? {} : { tier: item.tier }),
        });
        checkKey(item.key);
        const cost = item.cost ?? 1;
        checkCost(cost); // before anything is taken: a bad item changes nothing
        return { limiter, key: item.key, cost };
      });
      return (this.#store.synchronous ? decideAllSync(group) : decideAllAsync(group)) as Out;
    }) as Out;
  }

  /** What `check` would say now; changes nothing. */
  peek(rule: string, key: string, options?: CheckOptions): Result<S> {
    return this.#guard(() => this.#limiter(rule, options).peek(key, options?.cost)) as Result<S>;
  }

  /**
   * Gives `cost` units back to `key` under `rule` (and `tier`), never above the limit; returns
   * what `peek` then says.
   */
  refund(rule: string, key: string, options?: CheckOptions & { at?: number }): Result<S> {
    // `at`: the refunded check's `decision.at` (a receipt; see Limiter.refund).
    const { at, ...check } = options ?? {};
    return this.#guard(() =>
      this.#limiter(rule, options === undefined ? undefined : check).refund(
        key,
        at === undefined ? check.cost : { cost: check.cost ?? 1, at },
      ),
    ) as Result<S>;
  }

  /**
   * Gives back `cost` leases of `key` under `rule` (and `tier`) acquired, or last renewed, at `at`
   * (see Limiter.release); returns what `peek` then says. The rule needs a concurrency member.
   */
  release(rule: string, key: string, options: CheckOptions & { at: number }): Result<S> {
    return this.#lease("release", rule, key, options);
  }

  /**
   * Renews `cost` leases of `key` under `rule` (and `tier`) acquired, or last renewed, at `at`
   * (see Limiter.renew): the answer's `at` is their new receipt; denied when no longer held.
   */
  renew(rule: string, key: string, options: CheckOptions & { at: number }): Result<S> {
    return this.#lease("renew", rule, key, options);
  }

  #lease(call: "release" | "renew", rule: string, key: string, options: CheckOptions & { at: number }): Result<S> {
    return this.#guard(() => {
      if (typeof options !== "object" || options === null) {
        throw new ArgumentError(`${call} takes { at, cost?, tier? } (got ${String(options)})`);
      }
      const { at, ...check } = options;
      const limiter = this.#limiter(rule, check);
      return limiter[call](key, { cost: check.cost ?? 1, at });
    }) as Result<S>;
  }

  /**
   * Takes `cost` units of `rule` (and `tier`) for `key` whether or not they fit
   * (rate-limiter-flexible's `penalty`); returns what `peek` then says.
   */
  penalty(rule: string, key: string, options?: CheckOptions): Result<S> {
    return this.#guard(() => this.#limiter(rule, options).penalty(key, options?.cost)) as Result<S>;
  }

  /**
   * Refuses `key` under `rule` (and `tier`) for `ms` from now (rate-limiter-flexible's `block`):
   * answered as banned, on any rule (with or without a `ban`). `cost` is not used by a block.
   */
  block(rule: string, key: string, ms: number, options?: CheckOptions): Result<S> {
    return this.#guard(() => this.#limiter(rule, options).block(key, ms)) as Result<S>;
  }

  /**
   * `key`'s state under `rule` (and `tier`) as a peek of one unit, or `null` for a key whose state
   * is equivalent to a fresh one (rate-limiter-flexible's `get`). `cost` is not used by a get.
   */
  get(rule: string, key: string, options?: CheckOptions): GetResult<S> {
    return this.#guard(() => this.#limiter(rule, options).get(key)) as GetResult<S>;
  }

  /** Forgets `key` under `rule` (its own spec and every tier). */
  reset(rule: string, key: string): ResetResult<S> {
    return this.#guard(() => {
      const r = this.#get(rule);
      const results = [r.base, ...r.tiers.values()].map((l) => l.reset(key));
      if (this.#store.synchronous) return;
      return Promise.all(results).then(() => undefined);
    }) as ResetResult<S>;
  }

  #guard<T>(run: () => T): T {
    if (this.#store.synchronous) return run();
    try {
      return run();
    } catch (error) {
      return Promise.reject(error) as T;
    }
  }

  #get(name: string): Rule {
    if (typeof name !== "string") checkName(name);
    const rule = this.#rules.get(name);
    if (rule === undefined) throw new UnknownRuleError(name);
    return rule;
  }

  #limiter(name: string, options: CheckOptions | undefined): Limiter {
    const rule = this.#get(name);
    if (options !== undefined) checkOptions(options, "check", CHECK_OPTIONS);
    const tier = options?.tier;
    if (tier === undefined) return rule.base;
    const limiter = typeof tier === "string" ? rule.tiers.get(tier) : undefined;
    if (limiter === undefined) {
      // Names no other tier: this text may reach a client (`rule(name).tiers` lists them).
      throw new ArgumentError(`unknown tier ${JSON.stringify(tier)} for rule ${JSON.stringify(name)}`);
    }
    return limiter;
  }

  /** Validates everything first, so an invalid update changes nothing. */
  #build(name: string, spec: RuleSpec, options: RuleOptions | undefined): Rule {
    const where = `rule ${JSON.stringify(name)}: `;
    if (options !== undefined) checkOptions(options, `${where}addRule`, ["tiers", "ban"]);
    const specs = validateRule(spec, where);
    const ban = validateBan(options?.ban, where);
    // Tier names are user text: a null-prototype record keeps `__proto__` an ordinary tier.
    const tierSpecs: Record<string, AlgorithmSpec[]> = Object.create(null);
    const tiers = options?.tiers ?? {};
    if (typeof tiers !== "object" || tiers === null || Array.isArray(tiers)) {
      throw new ArgumentError(`${where}tiers must be an object of specs (got ${String(tiers)})`);
    }
    for (const [tier, tierSpec] of Object.entries(tiers)) {
      tierSpecs[tier] = validateRule(tierSpec, `rule ${JSON.stringify(name)} tier ${JSON.stringify(tier)}: `);
    }
    const base = bindLimiter(
      specs,
      this.#store,
      this.#clock,
      { kind: "rule", name },
      Array.isArray(spec),
      ban,
      this.#onDecision,
      this.#maxKeyBytes,
    );
    const bound = new Map<string, Limiter>();
    for (const [tier, s] of Object.entries(tierSpecs)) {
      const identity: RuleIdentity = { kind: "rule", name, tier };
      const composite = Array.isArray(tiers[tier]);
      bound.set(
        tier,
        bindLimiter(s, this.#store, this.#clock, identity, composite, ban, this.#onDecision, this.#maxKeyBytes),
      );
    }
    const info: RuleInfo = { name, specs, tiers: tierSpecs, ...(ban === undefined ? {} : { ban }) };
    return { info, base, tiers: bound, given: options };
  }
}

function closeRule(rule: Rule): void {
  rule.base.close();
  for (const limiter of rule.tiers.values()) limiter.close();
}

function checkName(name: unknown): asserts name is string {
  if (typeof name !== "string" || name.length === 0) {
    throw new ArgumentError(`rule name must be a non-empty string (got ${JSON.stringify(name) ?? String(name)})`);
  }
}
