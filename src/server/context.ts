/** What every handler can reach: the service, its store, metrics, reloader and limits. */
import type { IncomingMessage } from "node:http";
import type { RateLimiterService, RuleInfo, Store } from "../index.ts";
import type { EnvoyService } from "./envoy/envoy-service.ts";
import type { Metrics } from "./metrics.ts";
import type { Reloader } from "./reload.ts";
import type { ServiceShedder } from "./shed.ts";
import type { ServiceStore } from "./store.ts";

/** Shared state of one running server. */
export interface ServerContext {
  service: RateLimiterService<Store>;
  store: ServiceStore;
  metrics: Metrics;
  reloader: Reloader | undefined;
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number;
  /** Most checks in one batch. */
  maxBatch: number;
  /** Longest key accepted, in UTF-8 bytes: longer keys are refused, never stored. */
  maxKeyLength: number;
  /** The key of a forwarded request's client (forward-auth without `key`), as `--trust-proxy` allows. */
  clientAddress: (req: IncomingMessage) => string | undefined;
  /** Origins allowed to call the API from a browser (`--cors-origin`); empty: no CORS headers at all. */
  corsOrigins: readonly string[];
  /** Epoch ms when the server started. */
  startedAt: number;
  /** When set, API calls need `Authorization: Bearer <token>`. */
  token: string | undefined;
  /** The registered rules by name (refreshed after every config apply). */
  rules: Map<string, RuleInfo & { summary: string }>;
  /** The Envoy API (`--grpc-port`), when running. */
  envoy: EnvoyService | undefined;
  /** The service's own load shedding (`--shed-limit`, `--shed-max-delay`), when set. */
  shed: ServiceShedder | undefined;
}
