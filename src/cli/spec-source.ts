/**
 * Where `replay` gets its rule: `--spec` (JSON or YAML flow text, human units allowed) or
 * `--rule NAME --config FILE [--tier T]`.
 */
import { parse as parseYaml } from "yaml";
import { loadRulesFile, parseRules } from "../config/rules-file.ts";
import { ConfigError, type RuleSpec } from "../index.ts";
import { type Parsed, str, UsageError } from "./args.ts";

/** Resolves the rule a command runs, from `--spec` or `--rule`/`--config`/`--tier`. */
export async function specFromFlags(parsed: Parsed): Promise<RuleSpec> {
  const spec = str(parsed, "spec");
  const rule = str(parsed, "rule");
  const config = str(parsed, "config");
  const tier = str(parsed, "tier");
  if (spec !== undefined) {
    if (rule !== undefined || config !== undefined || tier !== undefined) {
      throw new UsageError("give either --spec, or --rule with --config, not both");
    }
    let doc: unknown;
    try {
      doc = parseYaml(spec);
    } catch (error) {
      throw new ConfigError(
        "spec",
        `--spec is not valid JSON or YAML: ${(error as Error).message.split("\n")[0]}`,
        spec,
      );
    }
    try {
      const [definition] = parseRules({ rules: { "--spec": doc } }).rules;
      return (definition as { spec: RuleSpec }).spec;
    } catch (error) {
      // The spec is validated as a one-rule file; name the flag, not a made-up rule.
      if (error instanceof ConfigError) {
        throw new ConfigError(error.field, error.message.replace('rule "--spec": ', "--spec: "), error.value);
      }
      throw error;
    }
  }
  if (rule === undefined || config === undefined) {
    throw new UsageError("give the rule to use: --spec '{...}', or --rule NAME --config FILE");
  }
  const file = await loadRulesFile(config);
  const found = file.rules.find((r) => r.name === rule);
  if (found === undefined) {
    const names = file.rules.map((r) => JSON.stringify(r.name)).join(", ");
    throw new ConfigError("rule", `${config}: no rule ${JSON.stringify(rule)} (rules: ${names})`, rule);
  }
  if (tier === undefined) return found.spec;
  const tierSpec = found.tiers[tier];
  if (tierSpec === undefined) {
    const names =
      Object.keys(found.tiers)
        .map((t) => JSON.stringify(t))
        .join(", ") || "none";
    throw new ConfigError(
      "tier",
      `${config}: rule ${JSON.stringify(rule)} has no tier ${JSON.stringify(tier)} (tiers: ${names})`,
      tier,
    );
  }
  return tierSpec;
}
