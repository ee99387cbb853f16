/**
 * Rules files (YAML or JSON): `rules: { <name>: spec | [spec, ...] | { spec, tiers } }`.
 * Human units are converted here ("1m" → 60000 for `*Ms` fields, "100/min" → 1.667 for
 * `*PerSecond` fields); everything else is validated by the core exactly as `createLimiter`
 * does, so a file is accepted iff the same rules would be accepted in code.
 */
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { ConfigError, RateLimiterService, type RuleSpec } from "../index.ts";
import { describeValue } from "../spec.ts";
import { EnvoyConfigBuilder } from "./envoy/parse.ts";
import { parseDuration, parseRate } from "./units.ts";

/** One rule as a rules file defines it. */
export interface RuleDefinition {
  name: string;
  spec: RuleSpec;
  tiers: Record<string, RuleSpec>;
}

/** A parsed and validated rules file. */
export interface RulesConfig {
  rules: RuleDefinition[];
  /** `domains:`: envoyproxy/ratelimit documents (`{ domain, descriptors }`), validated. */
  domains: unknown[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function fail(field: string, message: string, value: unknown): never {
  throw new ConfigError(field, `${message} (got ${describeValue(value)})`, value);
}

/** Converts human units in one spec object; leaves validation of the result to the core. */
function convertSpec(input: unknown, where: string): unknown {
  if (!isObject(input)) return input;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === "string" && field.endsWith("Ms")) {
      const ms = parseDuration(value);
      if (ms === undefined)
        fail(field, `${where}${field} must be a duration like "500ms", "1s", "15m", "1h", "1d"`, value);
      out[field] = ms;
    } else if (typeof value === "string" && field.endsWith("PerSecond")) {
      const rate = parseRate(value);
      if (rate === undefined) fail(field, `${where}${field} must be a rate like "5/s", "100/min", "1000/15m"`, value);
      out[field] = rate;
    } else {
      out[field] = value;
    }
  }
  return out;
}

function convertRule(input: unknown, where: string): unknown {
  if (Array.isArray(input)) return input.map((spec, i) => convertSpec(spec, `${where}[${i}] `));
  return convertSpec(input, where);
}

/** A rule written as `{ spec, tiers }` rather than as a bare spec or array. */
function isTiered(value: unknown): value is Record<string, unknown> {
  return isObject(value) && "spec" in value && !("algorithm" in value) && !("type" in value);
}

/**
 * Turns a parsed document into validated rule definitions; throws ConfigError naming the
 * rule and the field. Validation goes through a throwaway `RateLimiterService`, the same path
 * `sluice serve` uses, so check-config and serve can never disagree.
 */
export function parseRules(doc: unknown): RulesConfig {
  if (!isObject(doc)) fail("rules", "a rules file must be an object with a `rules` key", doc);
  for (const key of Object.keys(doc)) {
    if (key !== "rules" && key !== "domains") {
      fail(key, `unknown top-level key \`${key}\` (expected \`rules\` and \`domains\`)`, doc[key]);
    }
  }
  const domains = parseDomains(doc.domains);
  const rules = doc.rules ?? (domains.length > 0 ? {} : undefined);
  if (!isObject(rules)) fail("rules", "`rules` must be a mapping of rule names to specs", rules);
  if (Object.keys(rules).length === 0 && domains.length === 0) {
    fail("rules", "`rules` must define at least one rule", rules);
  }
  const probe = new RateLimiterService();
  const out: RuleDefinition[] = [];
  for (const [name, body] of Object.entries(rules)) {
    const where = `rule ${JSON.stringify(name)}: `;
    if (name.startsWith("envoy:")) fail("rules", `${where}names starting with "envoy:" belong to \`domains\``, name);
    let spec: unknown = body;
    let tiersIn: unknown = {};
    if (isTiered(body)) {
      for (const key of Object.keys(body)) {
        if (key !== "spec" && key !== "tiers") {
          fail(key, `${where}unknown key \`${key}\` (a tiered rule has \`spec\` and \`tiers\`)`, body[key]);
        }
      }
      spec = body.spec;
      tiersIn = body.tiers ?? {};
      if (!isObject(tiersIn)) fail("tiers", `${where}tiers must be a mapping of tier names to specs`, tiersIn);
    }
    const tiers: Record<string, RuleSpec> = {};
    for (const [tier, tierSpec] of Object.entries(tiersIn as Record<string, unknown>)) {
      tiers[tier] = convertRule(tierSpec, `rule ${JSON.stringify(name)} tier ${JSON.stringify(tier)}: `) as RuleSpec;
    }
    const converted = convertRule(spec, where) as RuleSpec;
    try {
      probe.addRule(name, converted, { tiers });
    } catch (error) {
      // Bad names and tier shapes surface from the core as ArgumentError; in a file they are config.
      if (error instanceof ConfigError || !(error instanceof Error)) throw error;
      throw new ConfigError("rules", `${where}${error.message}`, name, { cause: error });
    }
    out.push({ name, spec: converted, tiers });
  }
  return { rules: out, domains };
}

/** `domains:` holds envoyproxy/ratelimit documents; validated here so a bad one is refused like a bad rule. */
function parseDomains(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) fail("domains", "`domains` must be a list of { domain, descriptors }", value);
  const builder = new EnvoyConfigBuilder();
  for (const [i, doc] of (value as unknown[]).entries()) builder.add(doc, `domains[${i}]`);
  return value as unknown[];
}

/** Parses rules-file text; JSON when the file name ends in .json, else YAML (a superset of JSON). */
export function parseRulesText(text: string, fileName = "rules.yaml"): RulesConfig {
  let doc: unknown;
  try {
    doc = fileName.endsWith(".json") ? JSON.parse(text) : parseYaml(text, { prettyErrors: true });
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new ConfigError("file", `${fileName}: not valid ${fileName.endsWith(".json") ? "JSON" : "YAML"}: ${message}`);
  }
  try {
    return parseRules(doc);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new ConfigError(error.field, `${fileName}: ${error.message}`, error.value, { cause: error });
    }
    throw error;
  }
}

/** Reads and validates a rules file; unreadable files become a ConfigError naming the path. */
export async function loadRulesFile(path: string): Promise<RulesConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError("file", `cannot read rules file ${JSON.stringify(path)} (${reason})`, path);
  }
  return parseRulesText(text, path);
}
