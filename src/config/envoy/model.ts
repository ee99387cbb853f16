/**
 * envoyproxy/ratelimit configuration as sluice holds it: per domain, a tree of descriptor
 * nodes. Each level is indexed the way the Go service looks it up (exact key/value first, then
 * the first wildcard value in file order that matches, then key only), so matching costs a few
 * map lookups per entry, and the wildcard lookup grows with the value, not with the number of
 * wildcards (src/config/envoy/wildcard-index.ts).
 */
import type { AlgorithmSpec } from "../../core/spec.ts";
import { WildcardIndex } from "./wildcard-index.ts";

/** Rate-limit units of envoyproxy/ratelimit, in the order of the protobuf `Unit` enum (1..6). */
export const ENVOY_UNITS = ["second", "minute", "hour", "day", "month", "year"] as const;

/** One of {@link ENVOY_UNITS}. */
export type EnvoyUnit = (typeof ENVOY_UNITS)[number];

/**
 * Window length of each unit in ms. As in the Go service (utils.UnitToDivider), a month is 30
 * days and a year 365 days, and windows are aligned to multiples of the unit since the Unix epoch.
 */
export const UNIT_MS: Record<EnvoyUnit, number> = {
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  month: 30 * 86_400_000,
  year: 365 * 86_400_000,
};

/** A descriptor's `rate_limit` block, validated. */
export interface EnvoyRateLimit {
  /** Undefined only when `unlimited`. */
  unit: EnvoyUnit | undefined;
  requestsPerUnit: number;
  unlimited: boolean;
  /** `name`, or "" (as in the Go service, an unnamed limit can never be replaced). */
  name: string;
  /** Names of the limits this one replaces when both match one request. */
  replaces: string[];
  /** The sluice spec counting it; undefined when unlimited or `requests_per_unit: 0`. */
  spec: AlgorithmSpec | undefined;
  /** The rule name in the Envoy service (its own namespace: no user rule can reach it). */
  rule: string;
}

/** One descriptor of the tree. */
export interface EnvoyNode {
  key: string;
  /** The configured value; undefined for a key-only descriptor (any value, one counter each). */
  value: string | undefined;
  /** Present when `value` holds `*` (matches any run of characters, even an empty one). */
  wildcard: RegExp | undefined;
  /** The Go service's stats key: `domain.key_value.key2` (the path in metrics). */
  path: string;
  limit: EnvoyRateLimit | undefined;
  shadowMode: boolean;
  /** `detailed_metric` (or `value_to_metric`): metrics name the request's values, not the pattern. */
  detailedMetric: boolean;
  /** With a wildcard value: every value it matches shares one counter. */
  shareThreshold: boolean;
  children: EnvoyLevel;
  /** The file that defined it, for error messages. */
  file: string;
}

/** The descriptors of one level, indexed for lookup. */
export interface EnvoyLevel {
  /** `key\0value` → node. */
  exact: Map<string, EnvoyNode>;
  /** Wildcard-valued nodes: in file order (`.nodes`; the first that matches wins), indexed. */
  wildcards: WildcardIndex;
  /** `key` → node without a value. */
  keyOnly: Map<string, EnvoyNode>;
}

/** A loaded configuration: the descriptor tree of each domain. */
export interface EnvoyConfig {
  domains: Map<string, EnvoyLevel>;
}

/** A new empty level. */
export function emptyLevel(): EnvoyLevel {
  return { exact: new Map(), wildcards: new WildcardIndex(), keyOnly: new Map() };
}

/**
 * The children of every leaf descriptor: one shared empty level (a level of its own per leaf,
 * three empty tables, was about a fifth of a large config's memory). Never added to.
 */
export const LEAF_LEVEL: EnvoyLevel = Object.freeze(emptyLevel());

/** Whether a level holds no descriptor. */
export function isEmptyLevel(level: EnvoyLevel): boolean {
  return level.exact.size === 0 && level.wildcards.size === 0 && level.keyOnly.size === 0;
}

/** Every node of `config` that carries a rate limit (depth first, file order within a level). */
export function* limitedNodes(config: EnvoyConfig): Generator<EnvoyNode> {
  function* walk(level: EnvoyLevel): Generator<EnvoyNode> {
    for (const node of [...level.exact.values(), ...level.wildcards.nodes, ...level.keyOnly.values()]) {
      if (node.limit !== undefined) yield node;
      yield* walk(node.children);
    }
  }
  for (const level of config.domains.values()) yield* walk(level);
}
