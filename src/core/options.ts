/** Options objects are checked where they enter: an unknown key is a typo, never ignored. */

import { describeValue } from "./describe-value.ts";
import { ArgumentError } from "./errors.ts";

/**
 * Throws ArgumentError naming the first key of `options` that is not in `known` (`where`
 * names the function or class, e.g. "MemoryStore"). `options` must be a plain object.
 */
export function checkOptions(options: unknown, where: string, known: readonly string[]): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ArgumentError(`${where} options must be an object (got ${describeValue(options)})`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new ArgumentError(`${where}: unknown option \`${key}\` (expected ${known.join(", ")})`);
    }
  }
}
