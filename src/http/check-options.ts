/**
 * Construction-time checks of middleware options: a typo such as `trustproxy` or `windowMS`
 * must fail when the app starts, not silently leave the middleware on its defaults.
 */

import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError } from "../core/errors.ts";
// Spec fields, so a misplaced one (`burst`, `windowMs`) gets a hint to move it into `spec`.
import { SPEC_FIELDS } from "../core/spec.ts";
import { ENGINE_OPTION_KEYS } from "./options.ts";

/** Throws ArgumentError naming the first key of `options` neither the engine nor the adapter reads. */
export function checkOptionKeys(options: object, adapterKeys: readonly string[]): void {
  const known = [...ENGINE_OPTION_KEYS, ...adapterKeys];
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const lower = key.toLowerCase();
    const option = known.find((k) => k.toLowerCase() === lower);
    const field = SPEC_FIELDS.find((k) => k.toLowerCase() === lower);
    const hint =
      option !== undefined
        ? ` (did you mean \`${option}\`?)`
        : field !== undefined
          ? ` (\`${field}\` belongs inside \`spec\`)`
          : "";
    throw new ArgumentError(`unknown rateLimit option \`${key}\`${hint}`);
  }
}

/** Throws ConfigError unless `options[name]` is undefined or a function. */
export function checkFunction(options: object, name: string): void {
  const value = (options as Record<string, unknown>)[name];
  if (value !== undefined && typeof value !== "function") {
    throw new ConfigError(name, `\`${name}\` must be a function (got ${describeValue(value)})`, value);
  }
}

/** Returns `options[name]` if it is one of `allowed` (or its default when undefined); else ConfigError. */
export function checkChoice<T extends string | boolean>(
  options: object,
  name: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return fallback;
  if (!allowed.includes(value as T)) {
    const list = allowed.map((a) => (typeof a === "string" ? `"${a}"` : String(a))).join(", ");
    throw new ConfigError(name, `\`${name}\` must be one of ${list} (got ${describeValue(value)})`, value);
  }
  return value as T;
}
