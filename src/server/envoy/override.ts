/**
 * Envoy's per-descriptor limit override (`RateLimitDescriptor.limit`, set by route actions with
 * `limit: { dynamic_metadata }`): as in envoyproxy/ratelimit it bypasses the config tree (the
 * domain must still be known) and counts per domain and full key/value list.
 *
 * Each distinct limit is a rule (`envoy:override:<n>/<unit>`, a clock-aligned fixed window), from
 * a bounded pool: past `max` rules the least recently used is removed. Its counts are not: every
 * store keeps a removed rule's records until they are fresh (Redis keys until they expire, the
 * memory store's table until a sweep finds it fresh) and the same rule name finds them again, so
 * recycling changes no answer, and a stream of distinct overrides holds a bounded set of rules.
 */
import type { DescriptorEntry, EnvoyMatch } from "../../config/envoy/match.ts";
import { ENVOY_UNITS, type EnvoyNode, type EnvoyUnit, LEAF_LEVEL, UNIT_MS } from "../../config/envoy/model.ts";
import { specFor } from "../../config/envoy/parse.ts";
import type { AlgorithmSpec } from "../../core/spec.ts";
import type { EnvoyState } from "./decide.ts";

/** Rule names of overrides start with this (the reload keeps them). */
export const OVERRIDE_PREFIX = "envoy:override:";

/** Default most override rules alive at once. */
export const DEFAULT_MAX_OVERRIDE_RULES = 1000;

function unitOf(unit: string | number): EnvoyUnit | undefined {
  if (typeof unit === "number") return ENVOY_UNITS[unit - 1];
  const lower = unit.toLowerCase();
  return ENVOY_UNITS.find((u) => u === lower);
}

/**
 * An override node is a leaf outside the config tree, so every one shares one empty level and
 * one empty `replaces`: a stream of distinct overrides allocates no Maps per rule for them.
 */
const NO_REPLACES: string[] = [];

function nodeOf(rule: string, unit: EnvoyUnit, rpu: number, spec: AlgorithmSpec | undefined): EnvoyNode {
  return {
    key: "",
    value: undefined,
    wildcard: undefined,
    path: "",
    limit: { unit, requestsPerUnit: rpu, unlimited: false, name: "", replaces: NO_REPLACES, spec, rule },
    shadowMode: false,
    detailedMetric: true,
    shareThreshold: false,
    children: LEAF_LEVEL,
    file: "(override)",
  };
}

/** The override rules of one Envoy service, at most `max` at once. */
export class OverridePool {
  readonly #state: () => EnvoyState;
  readonly #max: number;
  /** By rule name, least recently used first (a use moves an entry to the end). */
  readonly #live = new Map<string, EnvoyNode>();

  constructor(state: () => EnvoyState, max: number) {
    this.#state = state;
    this.#max = max;
  }

  /** Rules alive now. */
  get size(): number {
    return this.#live.size;
  }

  /** The node answering limit `rpu` per `unit`, its rule registered. */
  node(rpu: number, unit: EnvoyUnit): EnvoyNode {
    const rule = `${OVERRIDE_PREFIX}${rpu}/${unit}`;
    const pooled = this.#live.get(rule);
    if (pooled !== undefined) {
      this.#live.delete(rule);
      this.#live.set(rule, pooled);
      return pooled;
    }
    const spec = rpu > 0 ? specFor("fixed-window", rpu, UNIT_MS[unit]) : undefined;
    const node = nodeOf(rule, unit, rpu, spec);
    if (spec === undefined) return node; // nothing passes: no counter, no rule
    const service = this.#state().service;
    if (this.#live.size >= this.#max) {
      // The store keeps a removed rule's records until they are fresh and hands them back when
      // the rule returns, so the recycled limit answers exactly as if it had stayed.
      const [oldest] = this.#live.keys();
      if (oldest !== undefined) {
        this.#live.delete(oldest);
        service.removeRule(oldest);
      }
    }
    if (!service.hasRule(rule)) service.addRule(rule, spec);
    this.#live.set(rule, node);
    return node;
  }

  /** Forgets rules the service no longer has (a reload that dropped them). */
  retain(has: (rule: string) => boolean): void {
    for (const rule of this.#live.keys()) if (!has(rule)) this.#live.delete(rule);
  }
}

/** The match of an overridden descriptor, or undefined (unknown domain or unit). */
export function overrideMatch(
  state: EnvoyState,
  domain: string,
  entries: readonly DescriptorEntry[],
  limit: { requests_per_unit: number; unit: string | number },
): EnvoyMatch | undefined {
  const unit = unitOf(limit.unit);
  if (!state.config.domains.has(domain) || unit === undefined) return undefined;
  const node = state.overrides.node(limit.requests_per_unit, unit);
  const stat = `${domain}.${entries.map((e) => (e.value === "" ? e.key : `${e.key}_${e.value}`)).join(".")}`;
  return { node, key: JSON.stringify([domain, ...entries.map((e) => [e.key, e.value])]), stat };
}
