/**
 * `SluiceLimits`: the module's limits, one shared engine (src/http/engine.ts) per module-wide
 * limit and per `@RateLimit` application, built on first use. Guards are thin readers of it,
 * so every guard instance (`APP_GUARD` and each `@UseGuards(SluiceGuard)`) shares the state.
 */

import type { IncomingMessage } from "node:http";
import type { Decision } from "../algorithms/decision.ts";
import type { Clock } from "../core/clock.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError } from "../core/errors.ts";
import { type LimitSpec, type RuleSpec, validateRule } from "../core/spec.ts";
import type { Store } from "../core/store.ts";
import { Engine, type RequestReader } from "../http/engine.ts";
import type { HandleKey, PeekOptions } from "../http/handles.ts";
import type { LegacyReset } from "../http/headers.ts";
import { nodeReader } from "../http/node.ts";
import type { MaybePromise, RateLimitOptions } from "../http/options.ts";
import type { RateLimiterService } from "../service.ts";
import type { LoadShedOptions } from "../shed/options.ts";
import { type LoadShedHandle, Shedder } from "../shed/shedder.ts";
import { MemoryStore } from "../stores/memory/memory-store.ts";
import type { RouteLimit, SkippedMembers } from "./decorators.ts";
import { checkModuleOptions, type LimitOptions, type SluiceModuleOptions } from "./options.ts";

/** @nestjs/throttler's `X-RateLimit-Reset` is the seconds left (its `timeToExpire`). */
const NEST_LEGACY_RESET: LegacyReset = "delta";

/** The request as Nest hands it over: Express's (a Node request) or Fastify's (`raw` is the Node request). */
type PlatformRequest = IncomingMessage | { raw: IncomingMessage };

const raw = (request: PlatformRequest): IncomingMessage => ("raw" in request ? request.raw : request);

/** Reads the socket address and headers of an Express or Fastify request. */
export const nestReader: RequestReader<unknown> = {
  address: (request) => nodeReader.address(raw(request as PlatformRequest)),
  header: (request, name) => nodeReader.header(raw(request as PlatformRequest), name),
};

/** The limits of one `SluiceModule`; injectable as `SluiceLimits`. */
export class SluiceLimits {
  /** The module's `onLimited`, if any. */
  readonly onLimited: SluiceModuleOptions["onLimited"];
  /** The module's `throttlerHeaders`: @nestjs/throttler's header names and values. */
  readonly throttlerHeaders: boolean;
  readonly #shared: LimitOptions<unknown>;
  readonly #service: RateLimiterService<Store> | undefined;
  /** Where spec limits keep their state. */
  readonly #store: Store;
  readonly #clock: Clock | undefined;
  /** Spec limits by state name (normalised spec as JSON), to refuse two different limits under one name. */
  readonly #names = new Map<string, string>();
  readonly #default: Engine<unknown> | undefined;
  /** The module-wide spec's members by policy name (for per-member overrides and skips). */
  readonly #members: ReadonlyMap<string, LimitSpec> | undefined;
  /** The module-wide limit's state name. */
  readonly #moduleName: string;
  /** Engines of member overrides / skips, by route limit and skipped members. */
  readonly #variants = new Map<string, Engine<unknown> | undefined>();
  readonly #engines = new WeakMap<RouteLimit, Engine<unknown>>();
  /** Engines by the name handles take: a spec limit's state name, or a service rule's name. */
  readonly #named = new Map<string, Engine<unknown>>();

  /** @internal The module's load shedder (`loadShed` option), run by the guard before any limit. */
  readonly shedder: Shedder<object> | undefined;

  /** Stats and metrics of the module's load shedder (undefined without the `loadShed` option). */
  get loadShed(): LoadShedHandle | undefined {
    return this.shedder;
  }

  constructor(options: SluiceModuleOptions<never>) {
    checkModuleOptions(options);
    const { spec, service, rule, store, clock, name, appGuard, onLimited, throttlerHeaders, loadShed, ...shared } =
      options;
    this.shedder = loadShed === undefined ? undefined : new Shedder<object>(loadShed as LoadShedOptions<object>);
    if (appGuard !== undefined && typeof appGuard !== "boolean") {
      throw new ConfigError("appGuard", `\`appGuard\` must be a boolean (got ${describeValue(appGuard)})`, appGuard);
    }
    if (onLimited !== undefined && typeof onLimited !== "function") {
      throw new ConfigError("onLimited", "`onLimited` must be a function returning the exception to throw", onLimited);
    }
    if (throttlerHeaders !== undefined && typeof throttlerHeaders !== "boolean") {
      throw new ConfigError(
        "throttlerHeaders",
        `\`throttlerHeaders\` must be a boolean (got ${describeValue(throttlerHeaders)})`,
        throttlerHeaders,
      );
    }
    if (throttlerHeaders === true && shared.headers !== undefined) {
      throw new ConfigError("headers", "give either `headers` or `throttlerHeaders: true`, not both", shared.headers);
    }
    this.onLimited = onLimited;
    this.throttlerHeaders = throttlerHeaders === true;
    this.#shared = shared;
    this.#service = service;
    this.#store = store ?? service?.store ?? new MemoryStore();
    this.#clock = clock;
    if (spec !== undefined && rule !== undefined)
      throw new ConfigError("rule", "give either `spec` or `rule`, not both");
    this.#moduleName = name ?? "default";
    this.#members = typeof spec === "function" || spec === undefined ? undefined : membersOf(spec, shared, name);
    if (spec !== undefined) this.#default = this.#specEngine(spec, name ?? "default", {}, name ?? "default");
    else if (rule !== undefined) this.#default = this.#ruleEngine(rule, {});
  }

  /**
   * Forgets `key` (what the `key` option returns, or a client address) under the limit named
   * `limit`: a `@RateLimit` spec's state name (`options.name`, else `Controller.method`, or
   * `Controller` on a class), a service rule's name, or (omitted) the module-wide limit.
   */
  reset(key: HandleKey, limit?: string): MaybePromise<void> {
    return this.#handle(limit).reset(key);
  }

  /** What a request under `key` would be answered now by the limit named `limit` (see `reset`). */
  peek(key: HandleKey, limit?: string, options?: PeekOptions): MaybePromise<Decision> {
    return this.#handle(limit).peek(key, options);
  }

  /** The state of `key` under the limit named `limit` (see `reset`); `null` when unknown, where the store can tell. */
  get(key: HandleKey, limit?: string, options?: PeekOptions): MaybePromise<Decision | null> {
    return this.#handle(limit).get(key, options);
  }

  #handle(limit: string | undefined): Engine<unknown> {
    const engine = limit === undefined ? this.#default : this.#named.get(limit);
    if (engine === undefined) {
      const known = [...this.#named.keys()].map((n) => JSON.stringify(n)).join(", ") || "none";
      throw new ArgumentError(
        limit === undefined
          ? "SluiceModule has no module-wide limit; name the route limit (known: " + known + ")"
          : `no limit named ${JSON.stringify(limit)} has been built (known: ${known})`,
      );
    }
    return engine;
  }

  /** The engine for a route's `@RateLimit` metadata, or the module-wide one (undefined: not limited). */
  engine(limit: RouteLimit | undefined, skipped?: SkippedMembers): Engine<unknown> | undefined {
    if (limit !== undefined && "members" in limit) return this.#variant(limit, skipped);
    if (limit === undefined) return skipped === undefined ? this.#default : this.#variant(undefined, skipped);
    let engine = this.#engines.get(limit);
    if (engine === undefined) {
      engine =
        "rule" in limit
          ? this.#ruleEngine(limit.rule, limit.options)
          : this.#specEngine(limit.spec, limit.name, limit.options, "default");
      this.#engines.set(limit, engine);
    }
    return engine;
  }

  /**
   * The module-wide composite with some members replaced (`@RateLimit({ short: spec })`) and
   * some left out (`@SkipRateLimit("long")`); undefined when every member is left out. Its
   * state is the route's (`Controller.method`, or `options.name`) for overrides, else shared
   * by every route leaving out the same members.
   */
  #variant(limit: Extract<RouteLimit, { members: unknown }> | undefined, skipped: SkippedMembers | undefined) {
    const members = this.#members;
    if (members === undefined) {
      throw new ConfigError(
        "spec",
        "per-member overrides and skips need a module-wide `spec` whose members are named by `policyName`",
      );
    }
    const known = () => [...members.keys()].map((m) => JSON.stringify(m)).join(", ");
    for (const member of [...Object.keys(limit?.members ?? {}), ...(skipped?.members ?? [])]) {
      if (!members.has(member)) {
        throw new ConfigError("policyName", `no member named ${JSON.stringify(member)} (members: ${known()})`, member);
      }
    }
    const id = `${limit === undefined ? "" : JSON.stringify([limit.name, limit.members])}|${(skipped?.members ?? []).join(",")}`;
    if (this.#variants.has(id)) return this.#variants.get(id);
    const names: string[] = [];
    const specs: LimitSpec[] = [];
    for (const [member, spec] of members) {
      if (skipped?.members.includes(member)) continue;
      names.push(member);
      specs.push(limit?.members[member] ?? spec);
    }
    const stateName =
      limit !== undefined ? limit.name : `${this.#moduleName}|without:${(skipped?.members ?? []).join(",")}`;
    const engine =
      specs.length === 0
        ? undefined
        : this.#specEngine(specs, stateName, { ...(limit?.options ?? {}), policyName: names }, names[0] as string);
    this.#variants.set(id, engine);
    return engine;
  }

  #ruleEngine(rule: string, options: LimitOptions<unknown>): Engine<unknown> {
    const service = this.#service;
    if (service === undefined) {
      throw new ConfigError(
        "service",
        `the limit names rule ${JSON.stringify(rule)}, but SluiceModule got no \`service\``,
      );
    }
    if (!service.hasRule(rule)) {
      throw new ConfigError(
        "rule",
        `the limit names rule ${JSON.stringify(rule)}, which \`service\` does not have`,
        rule,
      );
    }
    const engine = new Engine<unknown>(
      { ...this.#shared, ...options, service, rule } as RateLimitOptions<unknown>,
      nestReader,
      [],
      NEST_LEGACY_RESET,
    );
    if (!this.#named.has(rule)) this.#named.set(rule, engine);
    return engine;
  }

  /** A spec limit whose state is named `name`; headers name it `policy` unless `policyName` is given. */
  #specEngine(
    spec: RuleSpec | ((request: unknown) => unknown),
    name: string,
    options: LimitOptions<unknown>,
    policy: string,
  ): Engine<unknown> {
    const merged = { ...this.#shared, ...options };
    if (merged.tier !== undefined) {
      throw new ConfigError(
        "tier",
        `limit ${JSON.stringify(name)}: \`tier\` needs a rule of \`service\` (tiers are service rules)`,
      );
    }
    // A function spec (limits from the request) is validated per resolved shape, by the engine.
    const normalised = typeof spec === "function" ? `fn:${String(spec)}` : JSON.stringify(validateRule(spec));
    const seen = this.#names.get(name);
    if (seen !== undefined && seen !== normalised) {
      throw new ConfigError(
        "name",
        `two different limits are named ${JSON.stringify(name)}; give one another \`name\``,
        name,
      );
    }
    this.#names.set(name, normalised);
    // The state is named after the route's limit (stable across processes sharing a Redis
    // store, distinct between routes), not after its spec.
    const engineOptions: RateLimitOptions<unknown> = {
      policyName: policy,
      ...merged,
      spec: spec as NonNullable<RateLimitOptions<unknown>["spec"]>,
      store: this.#store,
      name: `nest:${name}`,
    };
    if (this.#clock !== undefined) engineOptions.clock = this.#clock;
    const engine = new Engine<unknown>(engineOptions, nestReader, [], NEST_LEGACY_RESET);
    if (!this.#named.has(name)) this.#named.set(name, engine);
    return engine;
  }
}

/** The module-wide spec's members by name: `policyName` (one per member), else the limit's name. */
function membersOf(
  spec: RuleSpec,
  shared: { policyName?: string | readonly string[] },
  name: string | undefined,
): ReadonlyMap<string, LimitSpec> | undefined {
  const list: readonly LimitSpec[] = Array.isArray(spec) ? spec : [spec as LimitSpec];
  const policy = shared.policyName;
  const names = Array.isArray(policy) ? policy : list.length === 1 ? [policy ?? name ?? "default"] : undefined;
  if (names === undefined || names.length !== list.length) return undefined;
  return new Map(list.map((member, i) => [names[i] as string, member]));
}
