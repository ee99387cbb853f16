/**
 * Envoy's per-descriptor limit override (`RateLimitDescriptor.limit`, set by route actions with
 * `limit: { dynamic_metadata }`): as in envoyproxy/ratelimit it bypasses the config tree (the
 * domain must still be known) and counts per domain and full key/value list. One rule per
 * distinct limit, added on first use and kept across reloads.
 */
import type { DescriptorEntry, EnvoyMatch } from "../../config/envoy/match.ts";
import { ENVOY_UNITS, type EnvoyNode, type EnvoyUnit, emptyLevel, UNIT_MS } from "../../config/envoy/model.ts";
import { specFor } from "../../config/envoy/parse.ts";
import type { EnvoyState } from "./decide.ts";

/** Rule names of overrides start with this (the reload keeps them). */
export const OVERRIDE_PREFIX = "envoy:override:";

const nodes = new WeakMap<EnvoyState, Map<string, EnvoyNode>>();

function unitOf(unit: string | number): EnvoyUnit | undefined {
  if (typeof unit === "number") return ENVOY_UNITS[unit - 1];
  const lower = unit.toLowerCase();
  return ENVOY_UNITS.find((u) => u === lower);
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
  const rpu = limit.requests_per_unit;
  const rule = `${OVERRIDE_PREFIX}${rpu}/${unit}`;
  let cache = nodes.get(state);
  if (cache === undefined) nodes.set(state, (cache = new Map()));
  let node = cache.get(rule);
  if (node === undefined) {
    const spec = rpu > 0 ? specFor("fixed-window", rpu, UNIT_MS[unit]) : undefined;
    if (spec !== undefined && !state.service.hasRule(rule)) state.service.addRule(rule, spec);
    node = {
      key: "",
      value: undefined,
      wildcard: undefined,
      path: "",
      limit: { unit, requestsPerUnit: rpu, unlimited: false, name: "", replaces: [], spec, rule },
      shadowMode: false,
      detailedMetric: true,
      shareThreshold: false,
      children: emptyLevel(),
      file: "(override)",
    };
    cache.set(rule, node);
  }
  const stat = `${domain}.${entries.map((e) => (e.value === "" ? e.key : `${e.key}_${e.value}`)).join(".")}`;
  return { node, key: JSON.stringify([domain, ...entries.map((e) => [e.key, e.value])]), stat };
}
