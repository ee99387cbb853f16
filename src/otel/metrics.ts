/**
 * The instruments sluice reports through `@opentelemetry/api`, named in the OpenTelemetry
 * semantic-conventions style (dotted lower-case, a namespace, units per UCUM):
 * - `sluice.decisions` (counter, `{decision}`): attributes `sluice.rule`, `sluice.outcome`
 *   (`allowed` | `denied`), `sluice.store`;
 * - `sluice.decision.duration` (histogram, `s`): the same attributes;
 * - `sluice.store.errors` (counter, `{error}`): `sluice.rule`, `sluice.store`, `error.type`
 *   (the error's code, e.g. `ERR_STORE_TIMEOUT`), counted whether the store's `onError` policy
 *   answered (the decision carries `failure`) or the error was thrown;
 * - `sluice.errors` (counter, `{error}`): checks refused for any other reason (an unknown rule
 *   or tier, a bad argument), by `sluice.rule` and `error.type`: a caller's mistake is not a
 *   store failure.
 * Label values are bounded: `sluice.rule` is a configured rule's name (`instrument(service)`
 * reports names the service does not have as {@link OTHER_RULE}), and the per-rule attribute
 * cache is capped, so no caller can grow memory or series without end.
 */
import type { Attributes, Counter, Histogram, Meter } from "@opentelemetry/api";
import type { Decision } from "../algorithms/decision.ts";
import { requirePeer } from "../optional-peer.ts";

/** The global MeterProvider's meter named "sluice" (`@opentelemetry/api` loaded on first use, SPEC §14). */
export function globalMeter(): Meter {
  return requirePeer<typeof import("@opentelemetry/api")>("@opentelemetry/api", "sluice/otel").metrics.getMeter(
    "sluice",
  );
}

/** Options shared by every `instrument*` function. */
export interface MetricsOptions {
  /** Where to record (default: the global MeterProvider's meter named "sluice"). */
  meter?: Meter;
  /** The `sluice.store` attribute (default: from the store: "memory", "redis", or its class name). */
  store?: string;
}

/** The `sluice.rule` of checks naming no configured rule (OpenTelemetry's overflow value). */
export const OTHER_RULE = "_OTHER";

/** Most rules whose attribute sets are cached (past it the cache starts over). */
const MAX_CACHED_RULES = 1024;

/** Bucket bounds (seconds) for decision times, from in-process (µs) to a slow Redis (1 s). */
const DURATION_BUCKETS = [
  0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
  0.25, 0.5, 1,
];

/** The `sluice.store` value for a store object: "memory", "redis", or the class name in lower case. */
export function storeKind(store: object | undefined): string {
  const name = store?.constructor?.name ?? "unknown";
  return name.replace(/Store$/, "").toLowerCase() || "unknown";
}

/** Records decisions on one meter; attribute sets are cached per rule so recording allocates nothing. */
export class DecisionMetrics {
  readonly #decisions: Counter;
  readonly #duration: Histogram;
  readonly #errors: Counter;
  readonly #refusals: Counter;
  readonly #store: string;
  readonly #attributes = new Map<string, { allowed: Attributes; denied: Attributes; base: Attributes }>();

  constructor(store: string, meter: Meter = globalMeter()) {
    this.#store = store;
    this.#decisions = meter.createCounter("sluice.decisions", {
      description: "Rate-limit decisions, by rule and outcome",
      unit: "{decision}",
    });
    this.#duration = meter.createHistogram("sluice.decision.duration", {
      description: "Time to decide, store round trip included",
      unit: "s",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.#errors = meter.createCounter("sluice.store.errors", {
      description: "Store failures met while deciding (answered by the onError policy, or thrown)",
      unit: "{error}",
    });
    this.#refusals = meter.createCounter("sluice.errors", {
      description: "Checks refused before deciding (unknown rule or tier, bad argument), by kind",
      unit: "{error}",
    });
  }

  #for(rule: string) {
    let set = this.#attributes.get(rule);
    if (set === undefined) {
      const base = { "sluice.rule": rule, "sluice.store": this.#store };
      set = {
        base,
        allowed: { ...base, "sluice.outcome": "allowed" },
        denied: { ...base, "sluice.outcome": "denied" },
      };
      if (this.#attributes.size >= MAX_CACHED_RULES) this.#attributes.clear();
      this.#attributes.set(rule, set);
    }
    return set;
  }

  /** Records one decision that took `seconds`. */
  decided(rule: string, decision: Decision, seconds: number): void {
    const set = this.#for(rule);
    const attributes = decision.allowed ? set.allowed : set.denied;
    this.#decisions.add(1, attributes);
    this.#duration.record(seconds, attributes);
    if (decision.failure !== undefined)
      this.#errors.add(1, { ...set.base, "error.type": errorType(decision.failure.error) });
  }

  /** Records a check that threw (or rejected) instead of deciding: a store failure, or a refusal by kind. */
  failed(rule: string, error: unknown): void {
    const type = errorType(error);
    if (type.startsWith("ERR_STORE")) this.#errors.add(1, { ...this.#for(rule).base, "error.type": type });
    else this.#refusals.add(1, { "sluice.rule": rule, "error.type": type });
  }
}

function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  return error instanceof Error ? error.name : "_OTHER";
}
