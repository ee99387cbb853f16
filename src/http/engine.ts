/**
 * The framework-neutral middleware: options → limiter; request → lists, key, cost, tier →
 * Decision → Verdict (status + what to write); after the response, refunds for `count`.
 * Adapters (Node, Express, Fastify, Hono, fetch, and any new one) only:
 *
 * 1. build `new Engine(options, reader, ["onLimited", …their own option names])`;
 * 2. call `decide(request)` — `null` means skipped / allow-listed: pass on untouched;
 * 3. `writeHeaders(verdict, set, get)` — `get` reads headers already set, so stacked limiters merge;
 * 4. put `verdict.decision` on the request (see `tighter`) when there is one;
 * 5. status 200: run the handler; otherwise answer `verdict.status` with `body(verdict)` as
 *    `PROBLEM_CONTENT_TYPE` (or their `onLimited` on 429);
 * 6. when `observes(verdict)` (a `count` mode, or a lease to release: a concurrency spec),
 *    report how the response ended: `settle(verdict, req, res, status)`
 *    with the final status, or `undefined` when it never completed (abort, handler threw);
 *    with `countOn === "handler"`, a client that left does not end it: the status the handler
 *    answered with (its `end()`, its returned Response) does.
 *
 * A check on the in-process store stays synchronous end to end (no promise, no microtask)
 * unless a hook is async; on Redis it is one awaited round trip.
 */

import { type Decision, decision } from "../algorithms/decision.ts";
import { type Clock, sleep, systemClock } from "../core/clock.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError } from "../core/errors.ts";
import type { RuleSpec } from "../core/spec.ts";
import { problemOf, retryAfterOf, statusOf } from "./answer.ts";
import { checkChoice, checkFunction, checkOptionKeys } from "./check-options.ts";
import { type Client, ClientAddresses, type RequestReader, UNKNOWN_CLIENT, warner } from "./client-address.ts";
import { boundKey, storeKey } from "./client-key.ts";
import { type Charge, COUNT_MODES, COUNT_ON, refunds } from "./count-mode.ts";
import { type HandleKey, handleStoreKey, type PeekOptions } from "./handles.ts";
import {
  compilePolicies,
  HEADER_FORMATS,
  type HeaderFormat,
  type LegacyReset,
  type PolicySet,
  type SetHeader,
  writeRateLimitHeaders,
} from "./headers.ts";
import { type AddressList, compileList } from "./lists.ts";
import { andThen, isPromise } from "./maybe-promise.ts";
import type { CountMode, CountOn, DecisionInfo, MaybePromise, RateLimitOptions, UnknownTierPolicy } from "./options.ts";
import { PendingCheck } from "./pending-check.ts";
import * as problems from "./problem.ts";
import { distinctFrom, type GetHeader, listNames, stackingSetter } from "./stack.ts";
import { type Continue, isProblem, type Target, targetOf } from "./target.ts";

export type { RequestReader } from "./client-address.ts";

/** The policies of a request no rule was resolved for. */
const NO_POLICIES: PolicySet = compilePolicies([]);

export { isPromise } from "./maybe-promise.ts";
export type { GetHeader } from "./stack.ts";

/** A request that was checked: passed on (200), banned (403), limited (429), or the store failed (503); see answer.ts. */
export interface CheckedVerdict {
  readonly status: 200 | 403 | 429 | 503;
  readonly decision: Decision;
  readonly policies: PolicySet;
  /** What the request was charged (for `count` refunds). */
  readonly charge: Charge;
}

/** A request refused without a check: deny-listed (403) or an unknown tier (400). */
export interface RefusedVerdict {
  readonly status: 400 | 403;
  readonly decision: undefined;
  readonly problem: problems.ProblemDetails;
}

/** What the middleware does with a request. */
export type Verdict = CheckedVerdict | RefusedVerdict;

/** What a check answered asynchronously, before it became a verdict. */
interface Checked {
  readonly decision: Decision;
  readonly policies: PolicySet;
  readonly tier: string | undefined;
}

/** The shared middleware logic; one per `rateLimit(...)` call. */
export class Engine<Req, Res = unknown> {
  readonly #options: RateLimitOptions<Req, Res>;
  readonly #clients: ClientAddresses<Req>;
  readonly #allow: AddressList | undefined;
  readonly #deny: AddressList | undefined;
  readonly #target: Target;
  readonly #clock: Clock;
  readonly #warn = warner();
  readonly #count: CountMode;
  /** When `count` judges a request (see {@link CountOn}); adapters read it to know what to wait for. */
  readonly countOn: CountOn;
  /** Header layout, or undefined for none. */
  readonly format: HeaderFormat | undefined;
  /** Whether the middleware only reports. */
  readonly dryRun: boolean;
  readonly #honorDelay: boolean;
  /** A function `spec`: resolved per request (see target.ts's rule shapes). */
  readonly #specFn: ((request: Req) => MaybePromise<RuleSpec>) | undefined;
  /** No hook, list or function spec: a request goes straight from its client address to the check. */
  readonly #plain: boolean;
  /** The clock as the `legacy` headers read it, bound once rather than per request. */
  readonly #now: () => number;
  /** The request whose check is in its synchronous part (see `#continue`). */
  readonly #pending = new PendingCheck();
  /** The charge of the last check (see `#checked`). */
  #lastCharge: Charge = { key: "", cost: Number.NaN, tier: undefined };

  /** `adapterKeys`: the options the adapter reads itself; any other unknown key is refused. */
  /** How the `legacy` layout writes its reset (the adapter's peer's convention; see `LegacyReset`). */
  readonly #legacyReset: LegacyReset;

  /**
   * `adapterKeys`: the options the adapter reads itself; any other unknown key is refused.
   * `legacyReset`: what `X-RateLimit-Reset` means under `headers: "legacy"` on this framework.
   */
  constructor(
    options: RateLimitOptions<Req, Res>,
    reader: RequestReader<Req>,
    adapterKeys: readonly string[] = [],
    legacyReset: LegacyReset = "epoch",
  ) {
    if (typeof options !== "object" || options === null) {
      throw new ConfigError("options", `rateLimit options must be an object (got ${describeValue(options)})`, options);
    }
    checkOptionKeys(options, adapterKeys);
    this.#options = options;
    for (const name of ["key", "cost", "tier", "skip", "onDecision", "requestWasSuccessful"])
      checkFunction(options, name);
    this.#clients = new ClientAddresses(options, reader, this.#warn);
    this.#allow = compileList("allowList", options.allowList);
    this.#deny = compileList("denyList", options.denyList);
    const headers = checkChoice<HeaderFormat | false>(options, "headers", [...HEADER_FORMATS, false], "draft-11");
    this.format = headers === false ? undefined : headers;
    this.#legacyReset = legacyReset;
    this.#count = checkChoice(options, "count", COUNT_MODES, "all");
    this.countOn = checkChoice(options, "countOn", COUNT_ON, "response");
    const unknownTier = checkChoice<UnknownTierPolicy>(options, "onUnknownTier", ["reject", "base", "throw"], "reject");
    this.dryRun = options.dryRun === true;
    this.#honorDelay = options.honorDelay !== false;
    this.#clock = options.clock ?? systemClock;
    this.#target = targetOf(options as RateLimitOptions<never, never>, unknownTier, this.#warn);
    this.#specFn =
      typeof options.spec === "function" ? (options.spec as (request: Req) => MaybePromise<RuleSpec>) : undefined;
    this.#plain =
      options.skip === undefined &&
      this.#allow === undefined &&
      this.#deny === undefined &&
      options.key === undefined &&
      options.cost === undefined &&
      options.tier === undefined &&
      this.#specFn === undefined;
    const clock = this.#clock;
    this.#now = () => clock.now();
  }

  /** The default key of a request: its client address as far as `trustProxy` allows. */
  clientAddress(request: Req): string | undefined {
    return this.#clients.of(request)?.key;
  }

  /** Decides a request: null when skipped or allow-listed, else the verdict (a promise only when something async ran). */
  decide(request: Req): MaybePromise<Verdict | null> {
    if (this.#plain) {
      // The steps below with nothing to do skipped: same key, cost 1, no tier, the one target.
      const client = this.#clients.of(request) ?? UNKNOWN_CLIENT;
      return this.#checkOn(this.#target, request, client.key, client.storeKey, 1, undefined);
    }
    const skip = this.#options.skip;
    if (skip !== undefined) {
      // Read the client address before an async hook: a client that disconnects meanwhile has
      // no socket address any more, and must not fall out of its bucket or the deny list.
      const client = this.#clients.of(request) ?? UNKNOWN_CLIENT;
      return andThen(skip(request), (skipped) => (skipped === true ? null : this.#listed(request, client)));
    }
    return this.#listed(request, undefined);
  }

  #listed(request: Req, known: Client | undefined): MaybePromise<Verdict | null> {
    if (this.#allow === undefined && this.#deny === undefined) return this.#keyed(request, known);
    const client = known ?? this.#clients.of(request) ?? UNKNOWN_CLIENT;
    const bytes = client.bytes;
    if (bytes !== undefined && this.#deny?.has(bytes)) {
      return { status: 403, decision: undefined, problem: problems.denied() };
    }
    if (bytes !== undefined && this.#allow?.has(bytes)) return null;
    return this.#keyed(request, client);
  }

  #keyed(request: Req, known: Client | undefined): MaybePromise<Verdict> {
    const keyFn = this.#options.key;
    if (keyFn === undefined) {
      const client = known ?? this.#clients.of(request) ?? UNKNOWN_CLIENT;
      return this.#costed(request, client.key, client.storeKey);
    }
    // Only compute the address when the key function asks for it (its second parameter).
    const address = keyFn.length >= 2 ? (known ?? this.#clients.of(request) ?? UNKNOWN_CLIENT).key : undefined;
    const keyed = keyFn(request, address);
    // An async key function may answer undefined (key by address) after the client is gone:
    // its address is read now, while the socket still has it.
    const early = isPromise(keyed) ? (known ?? this.#clients.of(request) ?? UNKNOWN_CLIENT) : known;
    return andThen(keyed, (key) => {
      if (key === undefined) {
        const client = early ?? this.#clients.of(request) ?? UNKNOWN_CLIENT;
        return this.#costed(request, client.key, client.storeKey);
      }
      if (typeof key !== "string") {
        throw new ArgumentError(`\`key\` must return a string or undefined (got ${describeValue(key)})`);
      }
      return this.#costed(request, boundKey(key), storeKey(key, false));
    });
  }

  /** `shown`: the key as `onDecision` reports it; `stored`: the namespaced key the store sees. */
  #costed(request: Req, shown: string, stored: string): MaybePromise<Verdict> {
    const costFn = this.#options.cost;
    const tierFn = this.#options.tier;
    if (costFn === undefined && tierFn === undefined) return this.#check(request, shown, stored, 1, undefined);
    return andThen(costFn === undefined ? 1 : costFn(request), (cost) =>
      andThen(tierFn === undefined ? undefined : tierFn(request), (tier) =>
        this.#check(request, shown, stored, cost, tier),
      ),
    );
  }

  #check(request: Req, shown: string, stored: string, cost: number, tier: string | undefined): MaybePromise<Verdict> {
    const specFn = this.#specFn;
    if (specFn === undefined) return this.#checkOn(this.#target, request, shown, stored, cost, tier);
    let resolved: MaybePromise<RuleSpec>;
    try {
      resolved = specFn(request);
    } catch (error) {
      return this.#specFailed(request, error, shown, stored, cost);
    }
    if (!isPromise(resolved)) return this.#onShape(request, resolved, shown, stored, cost);
    return resolved.then(
      (spec) => this.#onShape(request, spec, shown, stored, cost),
      (error: unknown) => this.#specFailed(request, error, shown, stored, cost),
    );
  }

  /** Checks against the target of the spec `spec(request)` resolved to. */
  #onShape(request: Req, spec: unknown, shown: string, stored: string, cost: number): MaybePromise<Verdict> {
    let target: Target;
    try {
      target = (this.#target.shape as (spec: unknown) => Target)(spec);
    } catch (error) {
      return this.#specFailed(request, error, shown, stored, cost);
    }
    return this.#checkOn(target, request, shown, stored, cost, undefined);
  }

  /**
   * `spec(request)` threw, rejected or returned no valid spec: the request is answered as a
   * store failure under "deny" (503, `Retry-After`), never crashing the server nor admitting
   * an unlimited request; the ConfigError is on `decision.failure.error` and warned once.
   */
  #specFailed(request: Req, error: unknown, shown: string, stored: string, cost: number): Verdict {
    const reason =
      error instanceof ConfigError
        ? error
        : new ConfigError("spec", `\`spec(request)\` failed: ${String(error)}`, undefined, { cause: error });
    this.#warn("SLUICE_INVALID_SPEC", `sluice rateLimit: ${reason.message}; the request was answered 503`);
    const refused: Decision = { ...decision(false, 0, 0, 0, 0), failure: { policy: "deny", error: reason } };
    return this.#verdict(request, refused, NO_POLICIES, { key: stored, cost, tier: undefined }, shown) as Verdict;
  }

  #checkOn(
    target: Target,
    request: Req,
    shown: string,
    stored: string,
    cost: number,
    tier: string | undefined,
  ): MaybePromise<Verdict> {
    const shape = target === this.#target ? undefined : target;
    const pending = this.#pending;
    if (pending.active) {
      // A check started inside another's synchronous part (re-entered): its own closure.
      const checked = target.check(stored, cost, tier, (decision, policies, used) =>
        this.#checked(request, shown, stored, cost, shape, decision, policies, used),
      );
      return isProblem(checked) ? { status: 400, decision: undefined, problem: checked } : checked;
    }
    pending.begin(request, shown, stored, cost, shape);
    let checked: MaybePromise<Verdict | Checked> | problems.ProblemDetails;
    let sync: boolean;
    try {
      checked = target.check(stored, cost, tier, this.#continue);
    } finally {
      // Still active: the target continues later (a store round trip), with a plain Checked.
      sync = !pending.active;
      pending.end();
    }
    if (isProblem(checked)) return { status: 400, decision: undefined, problem: checked };
    if (sync) return checked as MaybePromise<Verdict>;
    return (checked as Promise<Checked>).then((c) =>
      this.#checked(request, shown, stored, cost, shape, c.decision, c.policies, c.tier),
    );
  }

  /**
   * The continuation of every check (made once, not per request). Called while the check is
   * still synchronous, it reads the request from `#pending` and answers the verdict; called
   * later (the store answered asynchronously), `#checkOn`'s own closure finishes from what it returns.
   */
  readonly #continue: Continue<Verdict | Checked> = (decision, policies, used) => {
    const pending = this.#pending;
    if (!pending.active) return { decision, policies, tier: used };
    const { request, shown, stored, cost, shape } = pending;
    pending.end();
    return this.#checked(request as Req, shown, stored, cost, shape, decision, policies, used);
  };

  /** The verdict of a check of `stored` that answered `decision` under `policies` with tier `used`. */
  #checked(
    request: Req,
    shown: string,
    stored: string,
    cost: number,
    shape: object | undefined,
    decision: Decision,
    policies: PolicySet,
    used: string | undefined,
  ): MaybePromise<Verdict> {
    // A charge is immutable: a client's next request (same key, cost and tier) reuses the last.
    let charge = this.#lastCharge;
    if (charge.key !== stored || charge.cost !== cost || charge.tier !== used || charge.shape !== shape) {
      charge = shape === undefined ? { key: stored, cost, tier: used } : { key: stored, cost, tier: used, shape };
      this.#lastCharge = charge;
    }
    return this.#verdict(request, decision, policies, charge, shown);
  }

  /** Forgets a key's state: what the `key` option returns, or a client address (see handles.ts). */
  reset(key: HandleKey): MaybePromise<void> {
    return this.#target.reset(this.#storeKey(key));
  }

  /** What a cost-1 request under `key` would be answered now; changes nothing. */
  peek(key: HandleKey, options?: PeekOptions): MaybePromise<Decision> {
    return this.#target.peek(this.#storeKey(key), options);
  }

  /** The state of `key` now (`null` when unknown, where the limiter can tell). */
  get(key: HandleKey, options?: PeekOptions): MaybePromise<Decision | null> {
    return this.#target.get(this.#storeKey(key), options);
  }

  #storeKey(key: HandleKey): string {
    return handleStoreKey(key, this.#options.key === undefined, this.#options.ipv6Subnet);
  }

  #verdict(
    request: Req,
    decision: Decision,
    policies: PolicySet,
    charge: Charge,
    shown: string,
  ): MaybePromise<Verdict> {
    const status = (this.dryRun ? 200 : statusOf(decision)) as CheckedVerdict["status"];
    const onDecision = this.#options.onDecision;
    if (onDecision !== undefined) {
      const info: DecisionInfo = { key: shown, cost: charge.cost, tier: charge.tier, dryRun: this.dryRun, status };
      onDecision(request, decision, this.#target.rule, info);
    }
    const verdict: CheckedVerdict = { status, decision, policies, charge };
    // A leaky bucket admits a request with a delay: honouring it is what smooths the outflow.
    if (status === 200 && decision.allowed && decision.delayMs > 0 && !this.dryRun && this.#honorDelay) {
      return sleep(this.#clock, decision.delayMs).then(() => verdict);
    }
    return verdict;
  }

  /**
   * Writes the verdict's headers: rate-limit headers, `Retry-After` on 429 and bans, the
   * dry-run report. `get` reads what the response already has, so a second limiter on the
   * route appends to the draft-11 lists instead of replacing them.
   */
  writeHeaders(verdict: Verdict, set: SetHeader, get?: GetHeader): void {
    if (verdict.decision === undefined) return;
    const { decision } = verdict;
    // No policies: a function `spec` that resolved to nothing valid (answered 503 alone).
    if (this.format !== undefined && verdict.policies.policies.length > 0) {
      const counts = decision.failure === undefined || decision.failure.policy === "fallback";
      let header = set;
      let policies = verdict.policies;
      // Only when another limiter already wrote its policies (stacking) does this cost more.
      // (Asked in lower case, as Node and Fastify keep names: no new string per request.)
      const taken = this.format === "draft-11" && get !== undefined ? get("ratelimit-policy") : undefined;
      if (taken !== undefined && get !== undefined) {
        header = stackingSetter(set, get);
        const names = listNames(taken);
        if (names !== undefined) policies = distinctFrom(policies, names);
      }
      writeRateLimitHeaders(this.format, policies, decision, counts, this.#now, header, this.#legacyReset);
    }
    if (verdict.status !== 200) {
      const retry = retryAfterOf(decision);
      if (retry !== undefined) (get === undefined ? set : stackingSetter(set, get))("Retry-After", retry);
      // A refusal (429, a ban's 403, a failure's 503) is this client's answer now, never a page
      // to keep: a 403 is heuristically cacheable, and a shared cache would serve the ban to
      // everyone behind it. forward-auth sends the same.
      set("Cache-Control", "no-store");
    }
    if (this.dryRun) set("Sluice-Dry-Run", decision.allowed ? "would-allow" : "would-deny");
  }

  /** The problem body (JSON text, `PROBLEM_CONTENT_TYPE`) of a verdict that is not 200. */
  body(verdict: Verdict): string {
    if (verdict.decision === undefined) return JSON.stringify(verdict.problem);
    return JSON.stringify(problemOf(verdict.decision, verdict.policies.policies));
  }

  /**
   * True when the adapter must report how this verdict's response ended: `count` is not "all",
   * or the request holds a lease (a rule with a concurrency member: it is in flight until then).
   */
  observes(verdict: Verdict): verdict is CheckedVerdict {
    const d = verdict.decision;
    return d?.allowed === true && d.failure === undefined && (this.#count !== "all" || d.release !== undefined);
  }

  /**
   * The response to an observed verdict ended: with `status`, or never completed (`undefined`:
   * the client left, the handler threw). Releases the request's lease (once: the decision's
   * `release()` acts once, whatever calls it), then gives the units back when this request
   * should not count. Never throws: a failed release leaves the slot taken until its `leaseMs`
   * ends, a failed refund leaves the request counted (the safe sides), each reported once.
   */
  settle(verdict: CheckedVerdict, request: Req, response: Res, status: number | undefined): void {
    this.release(verdict);
    this.settleCount(verdict, request, response, status);
  }

  /**
   * Releases the lease of an observed verdict, if it holds one (once: the decision's `release()`
   * acts once). For adapters that learn the handler's answer before the response ends (Koa with
   * `countOn: "handler"`, Hono on Node): they release on the Node response's end and report the
   * answer with {@link settleCount}, so a streamed body holds its slot until it is sent.
   */
  release(verdict: CheckedVerdict): void {
    const release = verdict.decision.release;
    if (release === undefined) return;
    try {
      const released = release();
      if (isPromise(released)) released.then(undefined, (error: unknown) => this.#releaseFailed(error));
    } catch (error) {
      this.#releaseFailed(error);
    }
  }

  /** The `count` half of {@link settle}: gives the units back when this request should not count; never throws. */
  settleCount(verdict: CheckedVerdict, request: Req, response: Res, status: number | undefined): void {
    if (this.#count === "all") return;
    let succeeded = false;
    try {
      const judge = this.#options.requestWasSuccessful;
      succeeded = status !== undefined && (judge === undefined ? status < 400 : judge(request, response) === true);
    } catch (error) {
      this.#refundFailed(error);
    }
    if (!refunds(this.#count, succeeded)) return;
    try {
      const result = this.#target.refund(verdict.charge, verdict.decision); // its `at` is the receipt
      if (isPromise(result)) result.then(undefined, (error: unknown) => this.#refundFailed(error));
    } catch (error) {
      this.#refundFailed(error);
    }
  }

  #releaseFailed(error: unknown): void {
    this.#warn(
      "SLUICE_RELEASE_FAILED",
      `sluice rateLimit: releasing a request's lease failed, so its slot stays taken until leaseMs ends: ${String(error)}`,
    );
  }

  #refundFailed(error: unknown): void {
    this.#warn(
      "SLUICE_REFUND_FAILED",
      `sluice rateLimit: a \`count\` refund failed, so the request stayed counted: ${String(error)}`,
    );
  }
}
