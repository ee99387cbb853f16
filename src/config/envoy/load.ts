/**
 * Loading envoyproxy/ratelimit configuration unchanged: one YAML file, or a directory of
 * `.yaml`/`.yml` files (read in name order, dot files skipped, like the Go service's runtime
 * loader); files of one domain merge, as with its MERGE_DOMAIN_CONFIG.
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../../core/errors.ts";
import { DEFAULT_MAX_CONFIG_BYTES, readConfigText } from "../rules-file.ts";
import type { EnvoyConfig } from "./model.ts";
import { EnvoyConfigBuilder } from "./parse.ts";
import { type ParsedDocument, parseDocuments, parseDocumentsOffThread } from "./parse-off-thread.ts";
import { counted, runSliced, type SliceProgress } from "./sliced.ts";

/**
 * The steps adding parsed `---` documents of `file` to `builder` (the first YAML error throws
 * ConfigError): one per descriptor, run in slices by a reload ({@link runSliced}).
 */
function* documentSteps(builder: EnvoyConfigBuilder, docs: ParsedDocument[], file: string): Generator<void> {
  for (const doc of docs) {
    if ("error" in doc) throw new ConfigError("file", `${file}: not valid YAML: ${doc.error}`);
    if (doc.value === null || doc.value === undefined) continue; // an empty document
    yield* builder.steps(doc.value, file);
  }
}

/** Parses envoy config text from `file` into `builder` (a file may hold several `---` documents). */
export function addEnvoyText(builder: EnvoyConfigBuilder, text: string, file: string): void {
  for (const _ of documentSteps(builder, parseDocuments(text), file));
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
 * `maxBytes` (`--max-config-bytes`, as for the rules file) bounds all its files together, checked
 * before each is read. Files past 64 KB are parsed on a worker thread, and what was parsed is
 * validated and built in slices of descriptors with turns of the event loop between them, so a
 * reload of a huge config never holds the loop for long. `progress` hears the descriptors built.
 */
export async function loadEnvoyConfig(
  path: string,
  builder = new EnvoyConfigBuilder(),
  maxBytes = DEFAULT_MAX_CONFIG_BYTES,
  progress?: SliceProgress,
): Promise<EnvoyConfig> {
  let built = 0;
  let left = maxBytes;
  const files = await envoyConfigFiles(path);
  for (const [i, file] of files.entries()) {
    const limit = i === 0 ? undefined : `the ${left} bytes left of the limit of ${maxBytes} for all envoy config files`;
    const text = await readConfigText("envoy config", file, left, limit);
    left -= Buffer.byteLength(text, "utf8");
    // Large files are parsed on a worker thread: the event loop keeps answering meanwhile.
    const docs = await parseDocumentsOffThread(text);
    const before = built;
    built += await runSliced(counted(documentSteps(builder, docs, file)), (done) => progress?.(before + done));
    if (i < files.length - 1) await new Promise((resolve) => setImmediate(resolve));
  }
  return builder.config;
}
