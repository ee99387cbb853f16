/**
 * Parsing envoyproxy/ratelimit YAML documents (`domain` + nested `descriptors`) into the
 * descriptor tree, with the Go service's validation rules. Every error is a ConfigError naming
 * the file and the descriptor path (`domain.key_value.key`) that is wrong.
 */

import { describeValue } from "../../core/describe-value.ts";
import { ConfigError } from "../../core/errors.ts";
import { ALGORITHMS, type AlgorithmSpec, validateSpec } from "../../core/spec.ts";
import {
  ENVOY_UNITS,
  type EnvoyConfig,
  type EnvoyLevel,
  type EnvoyNode,
  type EnvoyRateLimit,
  type EnvoyUnit,
  emptyLevel,
  LEAF_LEVEL,
  UNIT_MS,
} from "./model.ts";

const DOC_KEYS = new Set(["domain", "descriptors"]);
const DESCRIPTOR_KEYS = new Set([
  "key",
  "value",
  "rate_limit",
  "descriptors",
  "shadow_mode",
  "detailed_metric",
  "value_to_metric",
  "share_threshold",
]);
const LIMIT_KEYS = new Set(["unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm"]);
const MAX_UINT32 = 4_294_967_295;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The rule name of a descriptor path: JSON, so no two paths (or user rules) can share one. */
export function ruleName(domain: string, segments: ReadonlyArray<readonly [string, string | null]>): string {
  return `envoy:${JSON.stringify([domain, ...segments])}`;
}

/**
 * The sluice spec for `requests_per_unit` per `unit` under `algorithm` (sluice's extension; the
 * default, fixed-window, is what envoyproxy/ratelimit does). Rates keep the same long-run limit.
 */
export function specFor(algorithm: string, limit: number, unitMs: number): AlgorithmSpec {
  const perSecond = (limit * 1000) / unitMs;
  switch (algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return validateSpec({ algorithm, limit, windowMs: unitMs });
    case "gcra":
      return validateSpec({ algorithm, limit, periodMs: unitMs });
    case "token-bucket":
      return validateSpec({ algorithm, capacity: limit, refillPerSecond: perSecond });
    case "leaky-bucket":
      return validateSpec({ algorithm, capacity: limit, leakPerSecond: perSecond });
    default:
      throw new ConfigError("algorithm", `unknown algorithm (expected one of ${ALGORITHMS.join(", ")})`, algorithm);
  }
}

/** Parses documents into one config; documents of one domain merge (duplicates are errors). */
export class EnvoyConfigBuilder {
  readonly config: EnvoyConfig = { domains: new Map() };

  /** Adds one parsed YAML document read from `file`. */
  add(doc: unknown, file: string): this {
    for (const _ of this.steps(doc, file));
    return this;
  }

  /**
   * Adds one parsed document one descriptor at a time: each `yield` follows one descriptor, a
   * point where a caller may give the event loop a turn (a reload of 20,000 descriptors in one
   * go held it for half a second; see {@link runSliced}).
   */
  *steps(doc: unknown, file: string): Generator<void, void, undefined> {
    const fail = (field: string, message: string, value: unknown): never => {
      throw new ConfigError(field, `${file}: ${message} (got ${describeValue(value)})`, value);
    };
    if (!isObject(doc)) return fail("domain", "an envoy rate limit config must be a mapping with `domain`", doc);
    for (const key of Object.keys(doc)) {
      if (!DOC_KEYS.has(key)) fail(key, `unknown key \`${key}\` (expected domain, descriptors)`, doc[key]);
    }
    const domain = doc.domain;
    if (typeof domain !== "string" || domain === "") fail("domain", "`domain` must be a non-empty string", domain);
    let level = this.config.domains.get(domain as string);
    if (level === undefined) {
      level = emptyLevel();
      this.config.domains.set(domain as string, level);
    }
    yield* this.#descriptors(doc.descriptors, level, domain as string, [], file, fail);
  }

  *#descriptors(
    list: unknown,
    level: EnvoyLevel,
    domain: string,
    parent: Array<[string, string | null]>,
    file: string,
    fail: (field: string, message: string, value: unknown) => never,
  ): Generator<void, void, undefined> {
    const at =
      parent.length === 0 ? domain : `${domain}.${parent.map(([k, v]) => (v === null ? k : `${k}_${v}`)).join(".")}`;
    if (list === undefined || list === null) return;
    if (!Array.isArray(list)) fail("descriptors", `${at}: \`descriptors\` must be a list`, list);
    for (const [i, item] of (list as unknown[]).entries()) {
      const where = `${at}: descriptors[${i}]`;
      if (!isObject(item)) fail("descriptors", `${where} must be a mapping with \`key\``, item);
      const d = item as Record<string, unknown>;
      for (const key of Object.keys(d)) {
        if (!DESCRIPTOR_KEYS.has(key)) {
          fail(key, `${where}: unknown key \`${key}\` (expected ${[...DESCRIPTOR_KEYS].join(", ")})`, d[key]);
        }
      }
      if (typeof d.key !== "string" || d.key === "") fail("key", `${where}: descriptor has an empty key`, d.key);
      const key = d.key as string;
      const raw = d.value;
      if (raw !== undefined && raw !== null && !["string", "number", "boolean"].includes(typeof raw)) {
        fail("value", `${where}: \`value\` must be a string`, raw);
      }
      const value = raw === undefined || raw === null || raw === "" ? undefined : String(raw);
      const segments: Array<[string, string | null]> = [...parent, [key, value ?? null]];
      const path = `${domain}.${segments.map(([k, v]) => (v === null ? k : `${k}_${v}`)).join(".")}`;
      const flag = (name: string): boolean => {
        const v = d[name];
        if (v !== undefined && v !== null && typeof v !== "boolean")
          fail(name, `${path}: \`${name}\` must be true or false`, v);
        return v === true;
      };
      const wildcard = value?.includes("*") ? globToRegExp(value) : undefined;
      const id = `${key}\0${value ?? ""}`;
      const duplicate =
        value === undefined
          ? level.keyOnly.get(key)
          : wildcard === undefined
            ? level.exact.get(id)
            : level.wildcards.find(key, value);
      if (duplicate !== undefined) {
        fail("descriptors", `duplicate descriptor ${path} (first defined in ${duplicate.file})`, path);
      }
      const node: EnvoyNode = {
        key,
        value,
        wildcard,
        path,
        limit:
          d.rate_limit === undefined || d.rate_limit === null
            ? undefined
            : rateLimit(d.rate_limit, path, ruleName(domain, segments), fail),
        shadowMode: flag("shadow_mode"),
        detailedMetric: flag("detailed_metric") || flag("value_to_metric"),
        shareThreshold: flag("share_threshold"),
        // A leaf shares one empty level: only a descriptor with descriptors gets its own.
        children: Array.isArray(d.descriptors) && d.descriptors.length > 0 ? emptyLevel() : LEAF_LEVEL,
        file,
      };
      if (value === undefined) level.keyOnly.set(key, node);
      else if (wildcard === undefined) level.exact.set(id, node);
      else level.wildcards.add(node);
      yield;
      yield* this.#descriptors(d.descriptors, node.children, domain, segments, file, fail);
    }
  }
}

/** `*` matches any run of characters (even none); everything else is literal. */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("[\\s\\S]*");
  return new RegExp(`^${body}$`);
}

function rateLimit(
  raw: unknown,
  path: string,
  rule: string,
  fail: (field: string, message: string, value: unknown) => never,
): EnvoyRateLimit {
  if (!isObject(raw)) return fail("rate_limit", `${path}: \`rate_limit\` must be a mapping`, raw);
  for (const key of Object.keys(raw)) {
    if (!LIMIT_KEYS.has(key))
      fail(key, `${path}: unknown key \`rate_limit.${key}\` (expected ${[...LIMIT_KEYS].join(", ")})`, raw[key]);
  }
  const unlimited = raw.unlimited === true;
  if (raw.unlimited !== undefined && typeof raw.unlimited !== "boolean")
    fail("unlimited", `${path}: \`unlimited\` must be true or false`, raw.unlimited);
  const unitText = typeof raw.unit === "string" ? raw.unit.toLowerCase() : raw.unit;
  const unit = ENVOY_UNITS.includes(unitText as EnvoyUnit) ? (unitText as EnvoyUnit) : undefined;
  if (unlimited && raw.unit !== undefined && raw.unit !== null)
    fail("unit", `${path}: should not specify a rate limit unit when unlimited`, raw.unit);
  if (!unlimited && unit === undefined)
    fail("unit", `${path}: invalid rate limit unit (expected ${ENVOY_UNITS.join(", ")})`, raw.unit);
  const rpu = raw.requests_per_unit ?? 0;
  if (typeof rpu !== "number" || !Number.isInteger(rpu) || rpu < 0 || rpu > MAX_UINT32) {
    fail("requests_per_unit", `${path}: \`requests_per_unit\` must be an integer 0..${MAX_UINT32}`, rpu);
  }
  const name = raw.name ?? "";
  if (typeof name !== "string") fail("name", `${path}: \`name\` must be a string`, name);
  const replacesRaw = raw.replaces ?? [];
  if (!Array.isArray(replacesRaw)) fail("replaces", `${path}: \`replaces\` must be a list of { name }`, replacesRaw);
  const replaces = (replacesRaw as unknown[]).map((r) => {
    const n = isObject(r) ? r.name : undefined;
    if (isObject(r) && Object.keys(r).some((k) => k !== "name"))
      fail("replaces", `${path}: a \`replaces\` entry has only \`name\``, r);
    if (typeof n !== "string" || n === "") fail("replaces", `${path}: should not have an empty replaces entry`, r);
    if (n === name) fail("replaces", `${path}: replaces should not contain the name of the same descriptor`, n);
    return n as string;
  });
  const algorithm = raw.algorithm ?? "fixed-window";
  if (typeof algorithm !== "string") fail("algorithm", `${path}: \`algorithm\` must be a string`, algorithm);
  if (unlimited && raw.algorithm !== undefined)
    fail("algorithm", `${path}: an unlimited descriptor has no algorithm`, algorithm);
  let spec: AlgorithmSpec | undefined;
  if (!unlimited && (rpu as number) > 0) {
    try {
      spec = specFor(algorithm as string, rpu as number, UNIT_MS[unit as EnvoyUnit]);
    } catch (error) {
      const e = error as ConfigError;
      fail(e.field, `${path}: ${e.message.replace(/ \(got [^)]*\)$/, "")}`, e.value);
    }
  }
  return { unit, requestsPerUnit: rpu as number, unlimited, name: name as string, replaces, spec, rule };
}
