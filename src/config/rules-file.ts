/**
 * Rules files (YAML or JSON): `rules: { <name>: spec | [spec, ...] | { spec, tiers?, ban? } }`.
 * Human units are converted here ("1m" → 60000 for `*Ms` fields, "100/min" → 1.667 for
 * `*PerSecond` fields); everything else is validated by the core exactly as `createLimiter`
 * does, so a file is accepted iff the same rules would be accepted in code.
 */
import { open } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import type { BanPolicy } from "../core/ban.ts";
import { describeValue } from "../core/describe-value.ts";
import { ConfigError, RateLimiterService, type RuleSpec } from "../index.ts";
import { EnvoyConfigBuilder } from "./envoy/parse.ts";
import { parseDuration, parseRate } from "./units.ts";

/** One rule as a rules file defines it. */
export interface RuleDefinition {
  name: string;
  spec: RuleSpec;
  /** Null-prototype: a tier may be named `__proto__` or `constructor` like any other. */
  tiers: Record<string, RuleSpec>;
  /** Escalation after repeated denials (`ban: { after, withinMs, forMs }`; durations like "1h"). */
  ban?: BanPolicy;
}

/** Largest rules file read by default (1 MiB): parsing is synchronous, so its size bounds the pause. */
export const DEFAULT_MAX_CONFIG_BYTES = 1024 * 1024;

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
  const out: Record<string, unknown> = Object.create(null);
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

/** A rule written as `{ spec, tiers?, ban? }` rather than as a bare spec or array. */
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
    let banIn: unknown;
    if (isTiered(body)) {
      for (const key of Object.keys(body)) {
        if (key !== "spec" && key !== "tiers" && key !== "ban") {
          fail(key, `${where}unknown key \`${key}\` (a wrapped rule has \`spec\`, \`tiers\` and \`ban\`)`, body[key]);
        }
      }
      spec = body.spec;
      tiersIn = body.tiers ?? {};
      if (body.ban !== undefined) banIn = convertSpec(body.ban, `${where}ban: `);
      if (!isObject(tiersIn)) fail("tiers", `${where}tiers must be a mapping of tier names to specs`, tiersIn);
    }
    // Tier names come from the file: a plain object would turn `__proto__` into its prototype.
    const tiers: Record<string, RuleSpec> = Object.create(null);
    for (const [tier, tierSpec] of Object.entries(tiersIn as Record<string, unknown>)) {
      tiers[tier] = convertRule(tierSpec, `rule ${JSON.stringify(name)} tier ${JSON.stringify(tier)}: `) as RuleSpec;
    }
    const converted = convertRule(spec, where) as RuleSpec;
    try {
      probe.addRule(name, converted, { tiers, ...(banIn === undefined ? {} : { ban: banIn as BanPolicy }) });
    } catch (error) {
      // Bad names and tier shapes surface from the core as ArgumentError; in a file they are config.
      if (error instanceof ConfigError || !(error instanceof Error)) throw error;
      throw new ConfigError("rules", `${where}${error.message}`, name, { cause: error });
    }
    out.push({ name, spec: converted, tiers, ...(banIn === undefined ? {} : { ban: banIn as BanPolicy }) });
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

/** Options of {@link loadRulesFile}. */
export interface LoadOptions {
  /** Refuse files larger than this many bytes (default {@link DEFAULT_MAX_CONFIG_BYTES}). */
  maxBytes?: number;
}

function tooBig(what: string, path: string, size: string, max: number): ConfigError {
  return new ConfigError(
    "file",
    `${what} ${JSON.stringify(path)} is ${size}, more than the limit of ${max} bytes (see --max-config-bytes)`,
    path,
  );
}

/**
 * Reads a config file of at most `max` bytes (`what` names it in errors: "rules file", "envoy
 * config"). Unreadable or oversized files become a ConfigError naming the path. The size is
 * checked before reading, and the read stops at the limit even if the file grows meanwhile,
 * so no file can make the process read (or parse) more than `max`. `limitText` is how the limit
 * is described when it is less than --max-config-bytes itself (what is left of it).
 */
export async function readConfigText(what: string, path: string, max: number, limitText?: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, "r");
    const { size } = await handle.stat();
    if (size > max) {
      throw limitText === undefined
        ? tooBig(what, path, `${size} bytes`, max)
        : new ConfigError(
            "file",
            `${what} ${JSON.stringify(path)} is ${size} bytes, more than ${limitText} (see --max-config-bytes)`,
            path,
          );
    }
    // One byte more than stat said: a file that grew meanwhile is noticed, not half-read.
    const buffer = Buffer.alloc(size + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > size) {
      throw new ConfigError("file", `${what} ${JSON.stringify(path)} changed while being read; try again`, path);
    }
    return buffer.toString("utf8", 0, length);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError("file", `cannot read ${what} ${JSON.stringify(path)} (${reason})`, path);
  } finally {
    await handle?.close();
  }
}

/** Reads and validates a rules file of at most `maxBytes` (see {@link readConfigText}). */
export async function loadRulesFile(path: string, options: LoadOptions = {}): Promise<RulesConfig> {
  const text = await readConfigText("rules file", path, options.maxBytes ?? DEFAULT_MAX_CONFIG_BYTES);
  return parseRulesText(text, path);
}
