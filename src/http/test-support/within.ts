// Test support for the address tables (not built into the package: tsconfig.build.json leaves
// test-support folders out).
import { inRange, parseIp, parseRanges } from "../ip-address.ts";

/** Whether `address` falls in `range` (a CIDR, an address or a named range); throws on bad input. */
export function within(address: string, range: string): boolean {
  const bytes = parseIp(address);
  const ranges = parseRanges(range);
  if (bytes === undefined || ranges === undefined) throw new Error(`bad input ${address} ${range}`);
  return ranges.some((r) => inRange(bytes, r));
}
