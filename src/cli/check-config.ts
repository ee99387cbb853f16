/** `sluice check-config FILE`: validates a rules file and says what each rule admits. */
import type { Writable } from "node:stream";
import { describeRule } from "../config/describe.ts";
import { loadEnvoyConfig } from "../config/envoy/load.ts";
import { limitedNodes } from "../config/envoy/model.ts";
import { EnvoyConfigBuilder } from "../config/envoy/parse.ts";
import { loadRulesFile } from "../config/rules-file.ts";
import { validateRule } from "../index.ts";
import { parseFlags, UsageError } from "./args.ts";
import { printable } from "./io.ts";

/** Help text of `sluice check-config`. */
export const CHECK_CONFIG_HELP = `Usage: sluice check-config FILE
       sluice check-config [FILE] --envoy-config FILE|DIR

Validates a rules file (YAML or JSON) exactly as \`sluice serve\` would and prints one line per
rule (and tier) saying what it admits. Exit status 0 when valid, 1 when not (the message names
the rule and the field), 2 on a usage error. --envoy-config also validates envoyproxy/ratelimit
config files (a YAML file or a directory of them), as \`sluice serve --envoy-config\` loads them.

Example:
  sluice check-config examples/rules.yaml
  api: 10 per second on average; bursts up to 20
`;

/** Runs `sluice check-config`; returns the exit status. */
export async function checkConfigCommand(argv: string[], io: { stdout: Writable }): Promise<number> {
  const parsed = parseFlags(argv, { "envoy-config": { type: "string" } }, 1);
  if (parsed.values.help) {
    io.stdout.write(CHECK_CONFIG_HELP);
    return 0;
  }
  const path = parsed.positionals[0];
  const envoyPath = parsed.values["envoy-config"] as string | undefined;
  if (path === undefined && envoyPath === undefined)
    throw new UsageError("check-config needs a FILE (or --envoy-config FILE|DIR)");
  const config = path === undefined ? { rules: [], domains: [] } : await loadRulesFile(path);
  for (const rule of config.rules) {
    io.stdout.write(`${printable(rule.name)}: ${describeRule(validateRule(rule.spec))}\n`);
    for (const [tier, spec] of Object.entries(rule.tiers)) {
      io.stdout.write(`${printable(rule.name)} [tier ${printable(tier)}]: ${describeRule(validateRule(spec))}\n`);
    }
  }
  if (config.domains.length > 0 || envoyPath !== undefined) {
    // The Envoy API's domains: one line per limited descriptor path.
    const builder = new EnvoyConfigBuilder();
    for (const doc of config.domains) builder.add(doc, path as string);
    if (envoyPath !== undefined) await loadEnvoyConfig(envoyPath, builder);
    for (const node of limitedNodes(builder.config)) {
      const limit = node.limit;
      const what = limit?.unlimited
        ? "unlimited"
        : `${limit?.requestsPerUnit} per ${limit?.unit}${limit?.spec === undefined ? " (blocks everything)" : ` (${describeRule([limit.spec])})`}`;
      io.stdout.write(`envoy ${printable(node.path)}: ${what}${node.shadowMode ? ", shadow mode" : ""}\n`);
    }
  }
  return 0;
}
