/**
 * `sluice serve` as a library: starts the HTTP service on a rules file and a store, with hot
 * reload and a graceful close that answers every request already received.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describeRule } from "../config/describe.ts";
import { loadRulesFile, type RulesConfig } from "../config/rules-file.ts";
import { type Clock, RateLimiterService, systemClock } from "../index.ts";
import type { ServerContext } from "./context.ts";
import { EnvoyService } from "./envoy/envoy-service.ts";
import { Metrics } from "./metrics.ts";
import { Reloader } from "./reload.ts";
import { route, routeOf } from "./router.ts";
import { applyConfig } from "./rules-state.ts";
import { openStore, type StoreOptions } from "./store.ts";

/** Options of {@link startServer}. */
export interface ServeOptions extends StoreOptions {
  /** Rules file (YAML or JSON); optional when the Envoy API has its own config. */
  config?: string;
  /** `--grpc-port`: serve Envoy's RateLimitService on this port (0 picks one). */
  grpcPort?: number;
  /** `--envoy-config`: envoyproxy/ratelimit config, a file or a directory. */
  envoyConfig?: string;
  /** Time source for every decision (tests inject a ManualClock); default: the store's. */
  clock?: Clock;
  port: number;
  host: string;
  token?: string;
  maxBodyBytes: number;
  maxBatch: number;
  /** Reload on file change (SIGHUP reloads regardless). */
  watch: boolean;
  /** Longest a graceful close waits for in-flight requests before cutting connections (ms). */
  shutdownTimeoutMs: number;
  log: (line: string) => void;
}

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
  const initial: RulesConfig =
    options.config === undefined ? { rules: [], domains: [] } : await loadRulesFile(options.config);
  const store = await openStore(options);
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  const service = new RateLimiterService({ store: store.store, ...clock });
  const metrics = new Metrics();
  const context: ServerContext = {
    service,
    store,
    metrics,
    reloader: undefined,
    maxBodyBytes: options.maxBodyBytes,
    maxBatch: options.maxBatch,
    startedAt: systemClock.now(),
    token: options.token,
    rules: new Map(),
    envoy: undefined,
  };
  const apply = (config: Parameters<typeof applyConfig>[1]) => {
    const result = applyConfig(service, config);
    context.rules = new Map(service.rules().map((info) => [info.name, { ...info, summary: describeRule(info.specs) }]));
    metrics.activity.retain(context.rules.keys());
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
      });
    } catch (error) {
      await store.close();
      throw error;
    }
    context.envoy = envoy;
  }
  const prepare = envoy === undefined ? undefined : (config: RulesConfig) => envoy.prepare(domains(config));
  const reloader =
    options.config === undefined ? undefined : new Reloader(options.config, apply, metrics, options.log, prepare);
  context.reloader = reloader;

  let served = 0;
  let draining = false;
  const server = createServer((req, res) => {
    const started = performance.now();
    if (draining) res.setHeader("connection", "close");
    res.on("close", () => {
      served++;
      const r = routeOf(req);
      metrics.request(r, res.statusCode);
      if (r === "/v1/check") metrics.latency((performance.now() - started) / 1000);
    });
    void route(req, res, context, options.log);
  });
  server.keepAliveTimeout = 5000;
  // A slow client may not hold a socket for Node's default 5 minutes: checks are tiny.
  server.headersTimeout = 10_000;
  server.requestTimeout = 15_000;
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
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle keep-alive connections hold no request: close them now; busy ones close after
      // their response (draining sets `Connection: close`).
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), options.shutdownTimeoutMs);
      await closed;
      clearTimeout(force);
      await grpcClosed;
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
