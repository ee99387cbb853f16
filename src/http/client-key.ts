/**
 * The default client key: the peer's IP address, read from proxy headers only as far as
 * `trustProxy` allows, IPv4-mapped IPv6 folded to IPv4, IPv6 grouped by `ipv6Subnet` (one
 * customer usually holds a whole /56, so keying single /128s would let them rotate
 * addresses past any limit).
 */

import { describeValue } from "../core/describe-value.ts";
import { base64url, sha256 } from "../core/digest.ts";
import { ConfigError } from "../core/errors.ts";
import { hashedKey } from "../core/key-bound.ts";
import { formatIp, type IpBytes, type IpRange, inRange, isV4, maskIp, parseIp, parseRanges } from "./ip-address.ts";

/** `false` (default): the socket only; a number of proxy hops; or the proxies' addresses / CIDRs. */
export type TrustProxy = false | number | readonly string[];

/** Which header trusted proxies write the client chain to. */
export type ProxyHeader = "x-forwarded-for" | "forwarded";

/** A validated `trustProxy`. */
export type Trust = { kind: "none" } | { kind: "hops"; hops: number } | { kind: "list"; ranges: IpRange[] };

/** Validates `trustProxy`; `true` is refused because trusting every hop lets any client pick its own key. */
export function parseTrust(value: unknown): Trust {
  if (value === undefined || value === false) return { kind: "none" };
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new ConfigError(
        "trustProxy",
        `\`trustProxy\` must be a non-negative integer of hops (got ${value})`,
        value,
      );
    }
    return value === 0 ? { kind: "none" } : { kind: "hops", hops: value };
  }
  if (Array.isArray(value)) {
    const ranges = value.flatMap((entry: unknown) => {
      const parsed = typeof entry === "string" ? parseRanges(entry.trim()) : undefined;
      if (parsed === undefined) {
        throw new ConfigError(
          "trustProxy",
          `\`trustProxy\` entries must be IP addresses, CIDR ranges or "loopback" / "linklocal" / "uniquelocal" (got ${describeValue(entry)})`,
          entry,
        );
      }
      return parsed;
    });
    return ranges.length === 0 ? { kind: "none" } : { kind: "list", ranges };
  }
  throw new ConfigError(
    "trustProxy",
    `\`trustProxy\` must be false, a number of proxy hops, or a list of proxy addresses/CIDRs (got ${describeValue(value)}); \`true\` would let any client choose its own key`,
    value,
  );
}

/** Validates `ipv6Subnet`: the prefix length IPv6 clients are grouped by (1–128; 128 = no grouping). */
export function parseSubnet(value: unknown): number {
  if (value === undefined) return 56;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > 128) {
    throw new ConfigError(
      "ipv6Subnet",
      `\`ipv6Subnet\` must be an integer prefix length from 1 to 128 (got ${describeValue(value)})`,
      value,
    );
  }
  return value;
}

/** The `for=` addresses of an RFC 7239 `Forwarded` header, left (client side) to right. */
export function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === "for") out.push(pair.slice(eq + 1).trim());
    }
  }
  return out;
}

/**
 * The client's address: walks the chain `[...forwarded, socket]` from the right, past trusted
 * hops, and stops at the first address not trusted (the rightmost untrusted one: everything
 * left of it was written by the client and may be forged). Returns undefined without a socket
 * address.
 */
export function resolveClient(
  socket: string | undefined,
  forwarded: readonly string[],
  trust: Trust,
): IpBytes | undefined {
  const self = socket === undefined ? undefined : parseIp(socket);
  if (trust.kind === "none" || self === undefined || forwarded.length === 0) return self;
  let current = self;
  let hops = 0;
  for (let i = forwarded.length - 1; i >= 0; i--) {
    const trusted = trust.kind === "hops" ? hops < trust.hops : trust.ranges.some((r) => inRange(current, r));
    if (!trusted) break;
    // An unparsable entry where the trusted proxy's client should be: keep the last proxy we
    // trust rather than a string anyone could vary to get fresh buckets.
    const next = parseIp(forwarded[i] as string);
    if (next === undefined) break;
    current = next;
    hops++;
  }
  return current;
}

/** The key for an address: IPv4 as dotted quad, IPv6 masked to `subnet` bits as `prefix/subnet`. */
export function addressKey(bytes: IpBytes, subnet: number): string {
  if (isV4(bytes)) return formatIp(bytes);
  if (subnet >= 128) return formatIp(bytes);
  return `${formatIp(maskIp(bytes, subnet))}/${subnet}`;
}

/** Keys longer than this are hashed: a client-chosen key must not cost unbounded store memory. */
export const MAX_KEY_LENGTH = 200;

/** Returns `key`, or `sha256:<base64url>` of it when longer than {@link MAX_KEY_LENGTH} (the form logs show). */
export function boundKey(key: string): string {
  if (key.length <= MAX_KEY_LENGTH) return key;
  return hashedKey(key);
}

/**
 * The key the store sees. Addresses, plain keys and hashed keys each get their own marker
 * (`a:`, `k:`, `h:`), so no text a client can choose as its key — not `sha256:<victim's hash>`,
 * not a victim's address — reaches another client's state.
 */
export function storeKey(key: string, isAddress: boolean): string {
  if (isAddress) return `a:${key}`;
  if (key.length <= MAX_KEY_LENGTH) return `k:${key}`;
  return `h:${base64url(sha256(key))}`;
}

/** Options of {@link clientKey}. */
export interface ClientKeyOptions {
  /** See `rateLimit`'s `trustProxy` (default false). */
  trustProxy?: TrustProxy;
  /** See `rateLimit`'s `proxyHeader` (default "x-forwarded-for"). */
  proxyHeader?: ProxyHeader;
  /** See `rateLimit`'s `ipv6Subnet` (default 56). */
  ipv6Subnet?: number;
}

/**
 * The default client key for a peer `address` and the value of the proxy header (if any), for
 * servers sluice has no adapter for. Returns undefined when `address` is not an IP address.
 *
 * @example clientKey("10.0.0.5", "203.0.113.9", { trustProxy: 1 }) // "203.0.113.9"
 */
export function clientKey(
  address: string,
  forwarded: string | undefined,
  options: ClientKeyOptions = {},
): string | undefined {
  const trust = parseTrust(options.trustProxy);
  const chain =
    forwarded === undefined ? [] : options.proxyHeader === "forwarded" ? forwardedFor(forwarded) : forwarded.split(",");
  const bytes = resolveClient(address, chain, trust);
  return bytes === undefined ? undefined : addressKey(bytes, parseSubnet(options.ipv6Subnet));
}
