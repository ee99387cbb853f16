/**
 * Optional peer dependencies loaded on first use, so an entry point built on one (`sluice/nest`,
 * `sluice/otel`) can be imported where the peer is not installed (SPEC §14), and says which
 * package to install when it is actually used.
 */
import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/** The peer `name`, or `undefined` when it is not installed (any other load error is thrown). */
export function optionalPeer<T>(name: string): T | undefined {
  try {
    return load(name) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") return undefined;
    throw error;
  }
}

/** The peer `name`; when it is missing, throws an error naming it and the entry point `entry` that needs it. */
export function requirePeer<T>(name: string, entry: string): T {
  const peer = optionalPeer<T>(name);
  if (peer !== undefined) return peer;
  const error = new Error(`\`${entry}\` needs the package \`${name}\`, which is not installed (npm install ${name})`);
  (error as Error & { code: string }).code = "ERR_MODULE_NOT_FOUND";
  throw error;
}
