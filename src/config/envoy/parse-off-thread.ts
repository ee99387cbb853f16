/**
 * YAML parsing of large envoy config files on a worker thread: `yaml` takes about a second per
 * megabyte on an idle core (many seconds on a loaded one), and a hot reload on the event loop
 * would stop every check and `/healthz` for that long. The worker parses the text into plain
 * values (structured-cloned back); validating them stays here. Small files are parsed in place
 * (a worker costs tens of ms to start), and where no worker can be started (an environment
 * without `import.meta.resolve`, such as a bundler), in place too.
 */
import { Worker } from "node:worker_threads";
import { parseAllDocuments } from "yaml";

/** Files up to this size are parsed on the event loop (a few ms). */
export const OFF_THREAD_BYTES = 64 * 1024;

/** One `---` document: its value, or its first YAML error (then parsing stops). */
export type ParsedDocument = { value: unknown } | { error: string };

// CommonJS, as `eval` workers are; `yaml` is loaded by the URL the main thread resolved.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
import(workerData.yaml).then(({ parseAllDocuments }) => {
  const out = [];
  const docs = parseAllDocuments(workerData.text, { prettyErrors: true });
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const error = doc.errors[0];
    if (error !== undefined) { out.push({ error: error.message.split("\\n")[0] }); break; }
    out.push({ value: doc.toJS() });
  }
  parentPort.postMessage(out);
}, (error) => parentPort.postMessage({ failed: String(error) }));
`;

/** Parses in place. */
export function parseDocuments(text: string): ParsedDocument[] {
  const out: ParsedDocument[] = [];
  const docs = parseAllDocuments(text, { prettyErrors: true });
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    const error = doc.errors[0];
    if (error !== undefined) {
      out.push({ error: error.message.split("\n")[0] as string });
      break;
    }
    out.push({ value: doc.toJS() });
  }
  return out;
}

function yamlUrl(): string | undefined {
  try {
    return typeof import.meta.resolve === "function" ? import.meta.resolve("yaml") : undefined;
  } catch {
    return undefined;
  }
}

/** Parses `text`, on a worker thread when it is large. */
export async function parseDocumentsOffThread(text: string): Promise<ParsedDocument[]> {
  const yaml = text.length > OFF_THREAD_BYTES ? yamlUrl() : undefined;
  if (yaml === undefined) return parseDocuments(text);
  const result = await new Promise<ParsedDocument[] | undefined>((resolve) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { yaml, text } });
    worker.once("message", (message: ParsedDocument[] | { failed: string }) => {
      resolve(Array.isArray(message) ? message : undefined);
      void worker.terminate();
    });
    worker.once("error", () => resolve(undefined));
    worker.once("exit", () => resolve(undefined));
  });
  return result ?? parseDocuments(text);
}
