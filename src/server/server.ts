/**
 * `sluice serve` as a library: starts the HTTP service on a rules file and a store, with hot
 * reload and a graceful close that answers every request already received.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, Server as NetServer } from "node:net";
import { describeRule } from "../config/describe.ts";
import { DEFAULT_MAX_CONFIG_BYTES, loadRulesFile, type RulesConfig } from "../config/rules-file.ts";
import type { TrustProxy } from "../http/client-key.ts";
import { type Clock, RateLimiterService, systemClock } from "../index.ts";
import { type ClientHeader, clientAddressOf } from "./client-address.ts";
import type { ServerContext } from "./context.ts";
import { type CallBounds, DEFAULT_CALL_BOUNDS } from "./envoy/call-bounds.ts";
import { EnvoyService } from "./envoy/envoy-service.ts";
import type { GrpcTls } from "./envoy/grpc-server.ts";
import { DEFAULT_MAX_DESCRIPTORS, DEFAULT_MAX_ENTRIES, DEFAULT_MAX_MESSAGE_BYTES } from "./envoy/request-bound.ts";
import { DEFAULT_MAX_KEY_LENGTH } from "./key-length.ts";
import { Metrics } from "./metrics.ts";
import { Reloader } from "./reload.ts";
import { route, routeOf } from "./router.ts";
import { applyConfig } from "./rules-state.ts";
import { type ServeShedOptions, ServiceShedder } from "./shed.ts";
import { openStore, type StoreOptions } from "./store.ts";
import { DEFAULT_MAX_SERIES } from "./top-series.ts";

/** Options of {@link startServer}. */
export interface ServeOptions extends StoreOptions {
  /** Rules file (YAML or JSON); optional when the Envoy API has its own config. */
  config?: string;
  /** `--grpc-port`: serve Envoy's RateLimitService on this port (0 picks one). */
  grpcPort?: number;
  /** `--envoy-config`: envoyproxy/ratelimit config, a file or a directory. */
  envoyConfig?: string;
  /** `--grpc-tls-cert/-key/-ca`: PEM for TLS on the gRPC listener (with a CA: mTLS). */
  grpcTls?: GrpcTls;
  /** Most descriptors in one ShouldRateLimit (default {@link DEFAULT_MAX_DESCRIPTORS}). */
  maxDescriptors?: number;
  /** Most entries in one descriptor (default {@link DEFAULT_MAX_ENTRIES}). */
  maxEntries?: number;
  /** Largest gRPC message received, in bytes (default {@link DEFAULT_MAX_MESSAGE_BYTES}). */
  maxGrpcMessageBytes?: number;
  /** gRPC call deadline, open calls per connection and in total, request bytes held (defaults: {@link DEFAULT_CALL_BOUNDS}). */
  grpcBounds?: Partial<CallBounds>;
  /** Most Envoy limit-override rules alive at once (tests lower it; default 1000). */
  maxOverrideRules?: number;
  /** `--envoy-response-headers`: RateLimit-Limit/Remaining/Reset in `response_headers_to_add`. */
  envoyResponseHeaders?: boolean;
  /** Time source for every decision (tests inject a ManualClock); default: the store's. */
  clock?: Clock;
  port: number;
  host: string;
  token?: string;
  maxBodyBytes: number;
  maxBatch: number;
  /** Longest key accepted, in UTF-8 bytes (default {@link DEFAULT_MAX_KEY_LENGTH}). */
  maxKeyLength?: number;
  /** Largest rules file read, at start and on reload (default {@link DEFAULT_MAX_CONFIG_BYTES}). */
  maxConfigBytes?: number;
  /** Most rules, and most Envoy descriptor paths, with /metrics series of their own (default {@link DEFAULT_MAX_SERIES}). */
  maxMetricSeries?: number;
  /** Proxies trusted to name the client of a forward-auth request (default: none). */
  trustProxy?: TrustProxy;
  /** The header trusted proxies write the client address to (default x-forwarded-for). */
  proxyHeader?: ClientHeader;
  /** Origins allowed to call the API from browsers (default: none, no CORS headers). */
  corsOrigins?: readonly string[];
  /** Reload on file change (SIGHUP reloads regardless). */
  watch: boolean;
  /** Longest a graceful close waits for in-flight requests before cutting connections (ms). */
  shutdownTimeoutMs: number;
  /** Most HTTP connections open at once; more are closed on arrival (default {@link DEFAULT_MAX_CONNECTIONS}). */
  maxConnections?: number;
  /** The service's own load shedding over both doors (`--shed-limit`, `--shed-max-delay`); default none. */
  shed?: ServeShedOptions;
  log: (line: string) => void;
}

/** How often slow requests are looked for: a slow body is closed at most this long after `requestTimeout`. */
const SLOW_CHECK_MS = 1000;

/** Default most HTTP connections open at once (`--max-connections`). */
export const DEFAULT_MAX_CONNECTIONS = 10_000;

/**
 * Longest a connection may be silent, request or not: a socket that never sends a byte is closed
 * too. Under headersTimeout (10 s) on purpose: Node's check of that bound, on a socket that sent
 * nothing, restarts the socket's own timer, so a longer one never fired (measured on Node 20).
 */
const SOCKET_IDLE_MS = 9_000;

/** How long idle keep-alive sockets stay open after SIGTERM, so requests already on the wire are answered. */
const IDLE_GRACE_MS = 1000;

/** A running service. */
export interface RunningServer {
  url: string;
  server: Server;
  context: ServerContext;
  /** Reloads the rules file and the envoy config now; resolves whether both were applied. */
  reload(reason: string): Promise<boolean>;
  /** Stops accepting, answers what was received, closes the store; resolves with requests served. */
  close(): Promise<number>;
}

/** Loads the rules (a bad file throws ConfigError), opens the store and listens. */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const maxConfigBytes = options.maxConfigBytes ?? DEFAULT_MAX_CONFIG_BYTES;
  const initial: RulesConfig =
    options.config === undefined
      ? { rules: [], domains: [] }
      : await loadRulesFile(options.config, { maxBytes: maxConfigBytes });
  const store = await openStore(options);
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  const service = new RateLimiterService({ store: store.store, ...clock });
  const metrics = new Metrics(systemClock, options.maxMetricSeries ?? DEFAULT_MAX_SERIES);
  const shed =
    options.shed === undefined || (options.shed.limit === undefined && options.shed.maxEventLoopDelayMs === undefined)
      ? undefined
      : new ServiceShedder(options.shed);
  const context: ServerContext = {
    service,
    store,
    metrics,
    reloader: undefined,
    maxBodyBytes: options.maxBodyBytes,
    maxBatch: options.maxBatch,
    maxKeyLength: options.maxKeyLength ?? DEFAULT_MAX_KEY_LENGTH,
    clientAddress: clientAddressOf(options.trustProxy ?? false, options.proxyHeader ?? "x-forwarded-for", options.log),
    corsOrigins: options.corsOrigins ?? [],
    startedAt: systemClock.now(),
    token: options.token,
    rules: new Map(),
    envoy: undefined,
    shed,
  };
  const apply = (config: Parameters<typeof applyConfig>[1]) => {
    const result = applyConfig(service, config);
    context.rules = new Map(service.rules().map((info) => [info.name, { ...info, summary: describeRule(info.specs) }]));
    metrics.activity.retain(context.rules.values());
    return result;
  };
  apply(initial);
  metrics.lastReloadAt = Math.floor(systemClock.now() / 1000);
  const domains = (config: RulesConfig) => ({ docs: config.domains, file: options.config ?? "" });
  let envoy: EnvoyService | undefined;
  if (options.grpcPort !== undefined) {
    try {
      envoy = await EnvoyService.start({
        path: options.envoyConfig,
        domains: domains(initial),
        store: store.store,
        clock: options.clock,
        host: options.host,
        port: options.grpcPort,
        watch: options.watch,
        log: options.log,
        guard: {
          token: options.token,
          tls: options.grpcTls,
          maxDescriptors: options.maxDescriptors ?? DEFAULT_MAX_DESCRIPTORS,
          maxEntries: options.maxEntries ?? DEFAULT_MAX_ENTRIES,
          maxValueBytes: options.maxKeyLength ?? DEFAULT_MAX_KEY_LENGTH,
          maxMessageBytes: options.maxGrpcMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
          bounds: { ...DEFAULT_CALL_BOUNDS, ...options.grpcBounds },
          responseHeaders: options.envoyResponseHeaders === true,
          shed,
        },
        ...(options.maxOverrideRules === undefined ? {} : { maxOverrideRules: options.maxOverrideRules }),
        maxMetricSeries: options.maxMetricSeries ?? DEFAULT_MAX_SERIES,
        maxConfigBytes,
        healthy: async () => {
          if (context.reloader?.lastError !== undefined) return false;
          await store.ping();
          return true;
        },
      });
    } catch (error) {
      shed?.close();
      await store.close();
      throw error;
    }
    context.envoy = envoy;
  }
  // The rules are bound now: what the state file's records became (adopted, summarised, or
  // waiting for a rule whose window changed), never "restored" for counts that were dropped.
  for (const line of store.restored()) options.log(line);
  const prepare = envoy === undefined ? undefined : (config: RulesConfig) => envoy.prepare(domains(config));
  const reloader =
    options.config === undefined
      ? undefined
      : new Reloader(options.config, apply, metrics, options.log, prepare, maxConfigBytes);
  context.reloader = reloader;

  let served = 0;
  let draining = false;
  /** Responses not yet sent: on close each still unsent gets `Connection: close`. */
  const pending = new Set<ServerResponse>();
  // Node checks headersTimeout/requestTimeout only every connectionsCheckingInterval (default
  // 30 s), so a slow body lived up to 45 s, not the 15 s documented: check every second.
  const server = createServer({ connectionsCheckingInterval: SLOW_CHECK_MS }, (req, res) => {
    const started = performance.now();
    if (draining) res.setHeader("connection", "close");
    else pending.add(res);
    res.on("close", () => {
      pending.delete(res);
      served++;
      const r = routeOf(req);
      metrics.request(r, res.statusCode);
      if (r === "/v1/check") metrics.latency((performance.now() - started) / 1000);
    });
    if (shed !== undefined && !shed.admitHttp(routeOf(req), res)) return;
    void route(req, res, context, options.log);
  });
  server.keepAliveTimeout = 5000;
  // A slow client may not hold a socket for Node's default 5 minutes: checks are tiny.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
  // headersTimeout counts from a request's first byte: a connection that never sends one lived
  // forever. Silent past SOCKET_IDLE_MS, any socket is closed (Node destroys it: no 'timeout'
  // listener); keep-alive sockets close sooner, at keepAliveTimeout.
  server.timeout = SOCKET_IDLE_MS;
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    // The gRPC listener and the store are already up: release them so the process can exit.
    shed?.close();
    await envoy?.close(0);
    await store.close();
    throw error;
  }
  if (options.watch) reloader?.watch();
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;

  let closing: Promise<number> | undefined;
  const close = () => {
    closing ??= (async () => {
      draining = true;
      reloader?.close();
      const grpcClosed = envoy?.close(options.shutdownTimeoutMs);
      for (const res of pending) if (!res.headersSent) res.setHeader("connection", "close");
      pending.clear();
      // Stop accepting, but do not yet close idle keep-alive sockets as http's close() would: a
      // client may have just sent its next request on one, and a reset would lose it. Requests
      // arriving now are answered with `Connection: close`, which ends their sockets; sockets
      // still idle after the grace period are closed (any request there is then not yet sent).
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
      const grace = setTimeout(() => server.closeIdleConnections(), Math.min(IDLE_GRACE_MS, options.shutdownTimeoutMs));
      const force = setTimeout(() => server.closeAllConnections(), options.shutdownTimeoutMs);
      await closed;
      clearTimeout(grace);
      clearTimeout(force);
      await grpcClosed;
      shed?.close();
      await store.close();
      return served;
    })();
    return closing;
  };
  return {
    url: `http://${host}:${address.port}`,
    server,
    context,
    reload: async (reason) => {
      const results = await Promise.all([reloader?.reload(reason) ?? true, envoy?.reload(reason) ?? true]);
      return results.every(Boolean);
    },
    close,
  };
}
