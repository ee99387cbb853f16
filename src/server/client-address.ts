/**
 * The client address of a forwarded request (forward-auth without `key`): the socket peer, or,
 * with `--trust-proxy`, the address the trusted proxies wrote into one configured header. Only
 * one header is read: falling back to another would let a client pick a header its proxy does
 * not overwrite and so choose its own key.
 */
import type { IncomingMessage } from "node:http";
import { addressKey, forwardedFor, resolveClient, type Trust } from "../http/client-key.ts";

/** Headers a proxy may carry the client address in. */
export type ClientHeader = "x-forwarded-for" | "forwarded" | "x-real-ip";

/** The accepted `--proxy-header` values. */
export const CLIENT_HEADERS: readonly ClientHeader[] = ["x-forwarded-for", "forwarded", "x-real-ip"];

/** How the service finds a forwarded request's client. */
export interface ClientAddressOptions {
  trust: Trust;
  header: ClientHeader;
  /** IPv6 clients are grouped by this prefix length (as the middleware does). */
  ipv6Subnet: number;
}

/** Resolves the key of `req`'s client; `warn` is told (once per kind, by the caller) about likely misconfiguration. */
export function clientAddress(
  req: IncomingMessage,
  options: ClientAddressOptions,
  warn: (kind: "untrusted" | "missing", socket: string) => void,
): string | undefined {
  const socket = req.socket.remoteAddress;
  if (socket === undefined) return undefined;
  const raw = req.headers[options.header];
  const value = Array.isArray(raw) ? raw.join(", ") : raw;
  if (options.trust.kind === "none") {
    if (value !== undefined) warn("untrusted", socket);
  } else if (value === undefined) {
    warn("missing", socket);
  }
  const chain =
    options.trust.kind === "none" || value === undefined
      ? []
      : options.header === "forwarded"
        ? forwardedFor(value)
        : value.split(",").map((s) => s.trim());
  const bytes = resolveClient(socket, chain, options.trust);
  return bytes === undefined ? socket : addressKey(bytes, options.ipv6Subnet);
}
