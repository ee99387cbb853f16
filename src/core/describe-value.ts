/** How error messages show a value the caller passed: one format for every error in sluice. */

/** Formats a received value for an error message: strings quoted, everything else as written. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "an object";
  return String(value);
}
