/**
 * The client address of a forwarded request (forward-auth without `key`): the socket peer, or,
 * with `--trust-proxy`, the address the trusted proxies wrote into one configured header. Only
 * one header is read: falling back to another would let a client pick a header its proxy does
 * not overwrite and so choose its own key.
 */
import type { IncomingMessage } from "node:http";
import {
  addressKey,
  forwardedFor,
  parseTrust,
  resolveClient,
  type Trust,
  type TrustProxy,
} from "../http/client-key.ts";

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

/**
 * The service's resolver: `--trust-proxy` and `--proxy-header` applied, IPv6 grouped by /56, and
 * each likely misconfiguration logged once (not per request: a proxy sends thousands).
 */
export function clientAddressOf(
  trustProxy: TrustProxy,
  header: ClientHeader,
  log: (line: string) => void,
): (req: IncomingMessage) => string | undefined {
  const options: ClientAddressOptions = { trust: parseTrust(trustProxy), header, ipv6Subnet: 56 };
  const warned = new Set<string>();
  const warn = (kind: "untrusted" | "missing", socket: string) => {
    if (warned.has(kind)) return;
    warned.add(kind);
    log(
      kind === "untrusted"
        ? `forward-auth: a request from ${socket} carried ${header} but --trust-proxy is not set, so it was keyed by ${socket} (every client behind that proxy shares one key); set --trust-proxy to the proxy's hop count or address`
        : `forward-auth: --trust-proxy is set but a request from ${socket} carried no ${header} header, so it was keyed by ${socket}; make the proxy send it, or see --proxy-header`,
    );
  };
  return (req) => clientAddress(req, options, warn);
}
