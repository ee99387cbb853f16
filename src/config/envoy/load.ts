/**
 * Loading envoyproxy/ratelimit configuration unchanged: one YAML file, or a directory of
 * `.yaml`/`.yml` files (read in name order, dot files skipped, like the Go service's runtime
 * loader); files of one domain merge, as with its MERGE_DOMAIN_CONFIG.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { ConfigError } from "../../core/errors.ts";
import type { EnvoyConfig } from "./model.ts";
import { EnvoyConfigBuilder } from "./parse.ts";

/** Parses envoy config text from `file` into `builder` (a file may hold several `---` documents). */
export function addEnvoyText(builder: EnvoyConfigBuilder, text: string, file: string): void {
  const docs = parseAllDocuments(text, { prettyErrors: true });
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const error = doc.errors[0];
    if (error !== undefined) {
      throw new ConfigError("file", `${file}: not valid YAML: ${error.message.split("\n")[0]}`);
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue; // an empty document
    builder.add(value, file);
  }
}

/** The config files `path` names: itself, or the .yaml/.yml files directly inside it. */
export async function envoyConfigFiles(path: string): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError("file", `cannot read envoy config ${JSON.stringify(path)} (${reason})`, path);
  }
  if (!info.isDirectory()) return [path];
  const names = (await readdir(path)).filter((n) => !n.startsWith(".") && /\.ya?ml$/i.test(n)).sort();
  return names.map((n) => join(path, n));
}

/**
 * Reads and validates envoy config at `path` (a file or a directory) into `builder` (which may
 * hold other documents already: a path defined twice is an error); throws ConfigError.
 */
export async function loadEnvoyConfig(path: string, builder = new EnvoyConfigBuilder()): Promise<EnvoyConfig> {
  for (const file of await envoyConfigFiles(path)) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new ConfigError("file", `cannot read envoy config ${JSON.stringify(file)} (${reason})`, file);
    }
    addEnvoyText(builder, text, file);
  }
  return builder.config;
}
