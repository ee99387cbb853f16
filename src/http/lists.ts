/**
 * `allowList` / `denyList`: client addresses and CIDR ranges (IPv4 and IPv6, IPv4-mapped IPv6
 * equal to IPv4), matched against the client address as `trustProxy` resolved it — never
 * against a raw forwarded header a client could write.
 */

import { describeValue } from "../core/describe-value.ts";
import { ConfigError } from "../core/errors.ts";
import { type IpBytes, type IpRange, inRange, parseRanges } from "./ip-address.ts";

/** A compiled address list. */
export interface AddressList {
  /** True when `bytes` lies in one of the list's ranges. */
  has(bytes: IpBytes): boolean;
}

/** Compiles option `field` (an array of addresses / CIDRs), or undefined when not given or empty. */
export function compileList(field: "allowList" | "denyList", value: unknown): AddressList | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    throw new ConfigError(
      field,
      `\`${field}\` must be an array of IP addresses or CIDR ranges (got ${describeValue(value)})`,
      value,
    );
  }
  const ranges: IpRange[] = [];
  for (const entry of value as unknown[]) {
    const parsed = typeof entry === "string" ? parseRanges(entry.trim()) : undefined;
    if (parsed === undefined) {
      throw new ConfigError(
        field,
        `\`${field}\` entries must be IP addresses or CIDR ranges such as "10.0.0.0/8" or "2001:db8::/32" (got ${describeValue(entry)})`,
        entry,
      );
    }
    ranges.push(...parsed);
  }
  if (ranges.length === 0) return undefined;
  return { has: (bytes) => ranges.some((range) => inRange(bytes, range)) };
}
