/**
 * Per-request client address resolution for the engine: the socket address, walked back
 * through trusted proxies (`trustProxy`), as bytes (for allow/deny lists) and as the default
 * key (IPv6 grouped by `ipv6Subnet`). Misconfigurations are reported once as warnings.
 */

import { describeValue } from "../core/describe-value.ts";
import { ConfigError } from "../core/errors.ts";
import { warn } from "../core/warn.ts";
import {
  addressKey,
  forwardedFor,
  type ProxyHeader,
  parseSubnet,
  parseTrust,
  resolveClient,
  storeKey,
  type Trust,
} from "./client-key.ts";
import type { IpBytes } from "./ip-address.ts";
import type { RateLimitOptions } from "./options.ts";

const CACHE_SIZE = 4096;

/**
 * Private and loopback peers: a forwarding header from one usually means a proxy in front that
 * is not trusted, so every client shares the proxy's bucket (warned once).
 */
const LOCAL_PEER = /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|::ffff:(127|10|192\.168)\.|f[cd])/i;

/**
 * The address a reader gives for a peer on a Unix domain socket (`listen("/run/app.sock")`),
 * which has none. Such a peer is a local proxy by definition: with `trustProxy` the client
 * comes from the forwarding header it adds (nginx `proxy_pass http://unix:/run/app.sock`).
 */
export const UNIX_SOCKET_PEER = "unix:";

/** What a Node socket's peer address is for rate limiting: its IP, {@link UNIX_SOCKET_PEER}, or undefined. */
export function socketPeer(
  socket: { remoteAddress?: string | undefined; server?: { address?: () => unknown } | null } | undefined,
): string | undefined {
  if (socket === undefined) return undefined;
  const address = socket.remoteAddress;
  if (address !== undefined) return address;
  // A Unix-socket server's address() is its path; a TCP socket that closed early (whose client
  // could otherwise forge the header) still belongs to a server whose address() is an object.
  return typeof socket.server?.address?.() === "string" ? UNIX_SOCKET_PEER : undefined;
}

/** How an adapter reads a request: the socket's address and a (lower-case) header. */
export interface RequestReader<Req> {
  /** The socket's peer address, if the request has one. */
  address(request: Req): string | undefined;
  /** A header's value by its lower-case name. */
  header(request: Req, name: string): string | undefined;
  /**
   * The connection the request came on (a Node socket), if the adapter has one: without
   * `trustProxy` a connection's client never changes, so it is resolved once per connection.
   */
  connection?(request: Req): object | undefined;
}

/** The client as far as `trustProxy` allows: its address bytes (if an IP) and its default key. */
export interface Client {
  readonly bytes: IpBytes | undefined;
  /** The address key (`203.0.113.5`, `2001:db8::/56`), as logs show it. */
  readonly key: string;
  /** The key in the store's address namespace; kept so a hot client reuses one string (its hash is cached). */
  readonly storeKey: string;
}

/** The client of a request whose peer address is unknown: every such request shares one bucket. */
export const UNKNOWN_CLIENT: Client = { bytes: undefined, key: "unknown", storeKey: storeKey("unknown", true) };

/** Warns once per code, as a process warning (console elsewhere). */
export type Warn = (code: string, message: string) => void;

/** What a socket address resolves to (`trustProxy: false`): its client, and whether the peer is private or loopback. */
interface Peer {
  readonly client: Client;
  readonly socket: string;
  readonly local: boolean;
}

/** Reports each kind of misconfiguration once per middleware, as a process warning. */
export function warner(): Warn {
  const seen = new Set<string>();
  return (code, message) => {
    if (seen.has(code)) return;
    seen.add(code);
    warn(message, code);
  };
}

/** Resolves the client of each request for one middleware. */
export class ClientAddresses<Req> {
  readonly #reader: RequestReader<Req>;
  readonly #trust: Trust;
  readonly #proxyHeader: ProxyHeader;
  readonly #subnet: number;
  readonly #warn: Warn;
  /** Socket address → peer, for `trustProxy: false` (the client depends on the address alone). */
  readonly #cache = new Map<string, Peer>();
  /** Whether SLUICE_UNTRUSTED_FORWARDED was given (then the header is not read any more). */
  #forwardedWarned = false;
  /**
   * Connection → client, for `trustProxy: false` and a reader that tells connections: a kept-alive
   * connection's later requests skip the socket's address getter and the two lookups by address
   * string (the per-request cost of the address path on a loopback benchmark). Weak: a closed
   * connection's entry goes with it.
   */
  readonly #byConnection = new WeakMap<object, Peer>();
  readonly #connection: ((request: Req) => object | undefined) | undefined;

  constructor(
    options: Pick<RateLimitOptions<Req>, "trustProxy" | "proxyHeader" | "ipv6Subnet">,
    reader: RequestReader<Req>,
    warn: Warn,
  ) {
    this.#reader = reader;
    this.#warn = warn;
    this.#trust = parseTrust(options.trustProxy);
    // Only the `trustProxy: false` client is a function of the connection alone.
    this.#connection = this.#trust.kind === "none" ? reader.connection : undefined;
    const proxyHeader = options.proxyHeader ?? "x-forwarded-for";
    if (proxyHeader !== "x-forwarded-for" && proxyHeader !== "forwarded") {
      throw new ConfigError(
        "proxyHeader",
        `\`proxyHeader\` must be "x-forwarded-for" or "forwarded" (got ${describeValue(proxyHeader)})`,
        proxyHeader,
      );
    }
    this.#proxyHeader = proxyHeader;
    this.#subnet = parseSubnet(options.ipv6Subnet);
  }

  /** The request's client, or undefined when the adapter could not tell the peer address. */
  of(request: Req): Client | undefined {
    const connection = this.#connection?.(request);
    if (connection === undefined) return this.#bySocket(request);
    let peer = this.#byConnection.get(connection);
    if (peer === undefined) {
      const socket = this.#reader.address(request);
      // No address, or a Unix socket (warned, shared bucket): resolved per request as before.
      if (socket === undefined || socket === UNIX_SOCKET_PEER) return this.#bySocket(request);
      // (The address's own entry: a connection per request, as inject() makes, allocates nothing.)
      peer = this.#cached(socket);
      this.#byConnection.set(connection, peer);
    }
    if (peer.local) this.#checkForwarded(request, peer.socket);
    return peer.client;
  }

  #bySocket(request: Req): Client | undefined {
    const socket = this.#reader.address(request);
    if (socket === undefined) {
      this.#warn(
        "SLUICE_NO_CLIENT_ADDRESS",
        "sluice rateLimit: the request has no client address, so clients share one bucket; pass the address (or a `key` function)",
      );
      return undefined;
    }
    if (socket === UNIX_SOCKET_PEER) return this.#unixPeer(this.#reader.header(request, this.#proxyHeader));
    if (this.#trust.kind === "none") {
      const peer = this.#cached(socket);
      if (peer.local) this.#checkForwarded(request, socket);
      return peer.client;
    }
    const raw = this.#reader.header(request, this.#proxyHeader);
    if (raw === undefined) {
      this.#warn(
        "SLUICE_TRUST_PROXY_NO_HEADER",
        `sluice rateLimit: \`trustProxy\` is set but a request from ${socket} carried no ${this.#proxyHeader} header; every client behind that proxy shares one bucket. Check the proxy adds it, or the \`proxyHeader\` option.`,
      );
    }
    const chain = raw === undefined ? [] : this.#proxyHeader === "forwarded" ? forwardedFor(raw) : raw.split(",");
    return this.#client(socket, chain);
  }

  /** The `trustProxy: false` client of a socket address, from the cache by address. */
  #cached(socket: string): Peer {
    let peer = this.#cache.get(socket);
    if (peer === undefined) {
      // Private and loopback peers: only their forwarding header is worth a warning.
      peer = { client: this.#client(socket, []), socket, local: LOCAL_PEER.test(socket) };
      // Bounded: a flood of distinct peers only costs a re-parse once the cache is full.
      if (this.#cache.size >= CACHE_SIZE) this.#cache.clear();
      this.#cache.set(socket, peer);
    }
    return peer;
  }

  /**
   * Without trust the header decides nothing; it is read (which makes Node build the request's
   * headers object) only from a local peer, and only while it could still be worth its one warning.
   */
  #checkForwarded(request: Req, socket: string): void {
    if (
      !this.#forwardedWarned &&
      this.#proxyHeader === "x-forwarded-for" &&
      this.#reader.header(request, "x-forwarded-for") !== undefined
    ) {
      this.#warnForwarded(socket);
    }
  }

  /**
   * A request from a Unix-socket peer: that peer is the first trusted proxy, so the last entry
   * of its forwarding header is the client it saw (then walked back as any other trusted chain,
   * one hop fewer). Without `trustProxy`, or without a usable header, every such request shares
   * one bucket, with a warning naming the fix.
   */
  #unixPeer(raw: string | undefined): Client | undefined {
    if (this.#trust.kind === "none") {
      this.#warn(
        "SLUICE_UNIX_SOCKET_NO_TRUST",
        "sluice rateLimit: the request came over a Unix socket (no client address), so clients share one bucket; set `trustProxy` (e.g. 1) so the client comes from the proxy's forwarding header",
      );
      return undefined;
    }
    const chain = raw === undefined ? [] : this.#proxyHeader === "forwarded" ? forwardedFor(raw) : raw.split(",");
    const seen = chain.at(-1)?.trim() ?? "";
    const trust = this.#trust;
    const rest: Trust =
      trust.kind === "hops" ? (trust.hops > 1 ? { kind: "hops", hops: trust.hops - 1 } : { kind: "none" }) : trust;
    const bytes = resolveClient(seen, chain.slice(0, -1), rest);
    if (bytes === undefined) {
      this.#warn(
        "SLUICE_TRUST_PROXY_NO_HEADER",
        `sluice rateLimit: \`trustProxy\` is set but a request over a Unix socket carried no usable ${this.#proxyHeader} header; every client behind that proxy shares one bucket. Check the proxy adds it, or the \`proxyHeader\` option.`,
      );
      return undefined;
    }
    const key = addressKey(bytes, this.#subnet);
    return { bytes, key, storeKey: storeKey(key, true) };
  }

  #client(socket: string, chain: readonly string[]): Client {
    const bytes = resolveClient(socket, chain, this.#trust);
    const key = bytes === undefined ? socket : addressKey(bytes, this.#subnet);
    return { bytes, key, storeKey: storeKey(key, true) };
  }

  #warnForwarded(socket: string): void {
    this.#forwardedWarned = true;
    this.#warn(
      "SLUICE_UNTRUSTED_FORWARDED",
      `sluice rateLimit: a request from ${socket} carried X-Forwarded-For but \`trustProxy\` is off, so it was keyed by ${socket}. If a proxy is in front, set \`trustProxy\` to its hop count or addresses.`,
    );
  }
}
