/** `sluice serve`: the rate-limit service over HTTP (see src/server/). */
import { readFileSync } from "node:fs";
import type { Writable } from "node:stream";
import { parseBytes, parseDuration } from "../config/units.ts";
import { parseTrust, type TrustProxy } from "../http/client-key.ts";
import { CLIENT_HEADERS, type ClientHeader } from "../server/client-address.ts";
import {
  DEFAULT_MAX_CALLS,
  DEFAULT_MAX_CALLS_PER_CONNECTION,
  DEFAULT_MAX_CONNECTIONS,
} from "../server/envoy/call-bounds.ts";
import type { GrpcTls } from "../server/envoy/grpc-server.ts";
import { DEFAULT_MAX_KEY_LENGTH } from "../server/key-length.ts";
import { DEFAULT_MAX_CONNECTIONS as DEFAULT_MAX_HTTP_CONNECTIONS, startServer } from "../server/server.ts";
import type { ServeShedOptions } from "../server/shed.ts";
import { DEFAULT_MAX_SERIES } from "../server/top-series.ts";
import { DEFAULT_POLICY, FIXED_POLICIES, isFixedPolicy } from "../stores/remote/failure-policy.ts";
import { DEFAULT_TIMEOUT_MS } from "../stores/remote/with-timeout.ts";
import { InputError, num, parseFlags, str, UsageError } from "./args.ts";
import { heapAdviceHere } from "./heap-fit.ts";

/** Help text of `sluice serve`. */
export const SERVE_HELP = `Usage: sluice serve --config FILE [options]
       sluice serve --grpc-port N --envoy-config PATH [options]

Runs the rate-limit service: POST /v1/check, /v1/peek, /v1/reset, /v1/refund, /v1/release
and /v1/renew (leases of concurrency rules), GET /v1/forward-auth (for reverse proxies),
GET /v1/rules, /healthz, /metrics, /openapi.json, and a status page at GET /. The rules file is reloaded when it changes and on SIGHUP; an invalid file is refused
and the last good rules stay. SIGTERM / SIGINT close gracefully.

Options:
  --config FILE          rules file, YAML or JSON (required unless --envoy-config is given)
  --grpc-port N          also serve Envoy's rate limit service (envoy.service.ratelimit.v3,
                         ShouldRateLimit) over gRPC on port N (0 picks a free one)
  --envoy-config PATH    envoyproxy/ratelimit config: a YAML file or a directory of them
                         (reloaded like the rules file; needs --grpc-port)
  --grpc-tls-cert FILE   serve gRPC over TLS with this PEM certificate (chain)
  --grpc-tls-key FILE    ... and this PEM private key (both needed for TLS)
  --grpc-tls-ca FILE     mTLS: only clients with a certificate signed by this PEM CA
  --max-descriptors N    most descriptors in one ShouldRateLimit (default 1000); more are
                         refused with RESOURCE_EXHAUSTED before any work
  --max-entries N        most entries in one descriptor (default 64)
  --grpc-max-message S   largest gRPC message received, e.g. 1mb (default 1mb)
  --grpc-call-timeout D  longest a gRPC call may take from arrival to answer; later ones get
                         DEADLINE_EXCEEDED and are closed (default 15s)
  --grpc-max-calls N     most gRPC calls open at once, in total (default 1000); past it,
                         RESOURCE_EXHAUSTED before the message is read
  --grpc-max-calls-per-connection N
                         most gRPC calls open at once on one connection (default 100)
  --grpc-max-buffered S  most request bytes held at once over all gRPC calls still
                         arriving, e.g. 32mb (default 32mb)
  --grpc-idle-timeout D  close a gRPC connection with no call open for this long (default
                         5m; HTTP/2 PINGs do not keep it open)
  --grpc-max-connections N
                         most gRPC connections open at once (default 1000); more are
                         closed on arrival
  --envoy-response-headers
                         send RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset in
                         response_headers_to_add (as envoyproxy/ratelimit's
                         LIMIT_RESPONSE_HEADERS_ENABLED)
  --port N               port (default 8080; 0 picks a free one)
  --host HOST            interface (default 127.0.0.1)
  --redis URL            keep state in Redis/Valkey, e.g. redis://127.0.0.1:6379; a comma-
                         separated list of host:port seeds means a Redis Cluster
  --cluster              treat a single --redis seed as a Cluster
  --prefix P             Redis key prefix (default "sluice:")
  --store-timeout MS     longest a check waits for Redis (default 1000)
  --on-store-error P     deny | allow | throw (503) when Redis fails (default deny)
  --max-keys N           in-process store: hard cap on exact key records (past it, a fixed-size
                         summary that can only over-count; see README "Memory and floods")
  --state FILE           in-process store: keep counts across restarts in FILE (read at start,
                         written atomically every --state-interval and on SIGTERM/SIGINT)
  --state-interval D     how often --state is written (default 5s)
  --token T              require "Authorization: Bearer T" on /v1/* and /metrics, and as
                         "authorization: Bearer T" metadata on gRPC ShouldRateLimit
                         (default: the SLUICE_TOKEN environment variable, if set)
  --max-body SIZE        largest request body, e.g. 64kb, 1mb (default 64kb)
  --max-batch N          most checks in one batch (default 1000)
  --max-key-length N     longest key in UTF-8 bytes; longer ones get 400 (default 512)
  --max-config-bytes S   largest rules file read, at start and on reload (default 1mb)
  --max-metric-series N  most rules, and most Envoy descriptor paths, with /metrics series of
                         their own: the busiest; the rest count in one "(other)" series
                         (default 500)
  --trust-proxy T        forward-auth without key: trust this many proxy hops (e.g. 1), or
                         these proxy addresses/CIDRs (e.g. 127.0.0.1,10.0.0.0/8), to name
                         the client (default: none, the peer address is the key)
  --proxy-header H       x-forwarded-for | forwarded | x-real-ip: where trusted proxies
                         write the client address (default x-forwarded-for)
  --cors-origin O        allow browsers from these origins (comma-separated, or *) to call
                         the API (default: none, no CORS headers)
  --no-watch             reload only on SIGHUP, not on file change
  --shutdown-timeout D   longest a graceful close waits for in-flight requests (default 10s)
  --max-connections N    most HTTP connections open at once (default 10000); more are closed
                         on arrival
  --shed-limit N|adaptive
                         shed load past N calls in flight over both doors (or a limit that
                         follows measured latency): least critical first (status page, then
                         decisions; /metrics keeps a reserve, health probes are never shed),
                         answered 503 + Retry-After (gRPC: UNAVAILABLE)
  --shed-max-delay D     shed, least critical first, while the event loop's mean delay
                         passes D, e.g. 100ms
  -h, --help             this help

Example:
  sluice serve --config examples/rules.yaml --port 8080
  curl -s localhost:8080/v1/check --json '{"rule":"api","key":"alice"}'
`;

/** `--grpc-tls-cert/-key/-ca` read now, so a missing file is a one-line error at start. */
function readTls(cert: string | undefined, key: string | undefined, ca: string | undefined): GrpcTls | undefined {
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (cert === undefined || key === undefined)
    throw new UsageError("gRPC TLS needs both --grpc-tls-cert FILE and --grpc-tls-key FILE (--grpc-tls-ca adds mTLS)");
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new InputError(`${flag}: cannot read ${JSON.stringify(file)}: ${(error as Error).message}`);
    }
  };
  return {
    cert: read("--grpc-tls-cert", cert),
    key: read("--grpc-tls-key", key),
    ...(ca === undefined ? {} : { ca: read("--grpc-tls-ca", ca) }),
  };
}

/** `--trust-proxy`: a hop count, or a comma-separated list of addresses / CIDRs / named ranges. */
function parseTrustFlag(text: string | undefined): TrustProxy {
  if (text === undefined) return false;
  const value: TrustProxy = /^\d+$/.test(text.trim())
    ? Number(text.trim())
    : text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
  try {
    parseTrust(value);
  } catch (error) {
    throw new UsageError(
      `--trust-proxy must be a hop count or a comma-separated list of proxy addresses/CIDRs (got ${JSON.stringify(text)}): ${(error as Error).message}`,
    );
  }
  return value;
}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: "the port is already in use",
  EACCES: "permission denied (ports below 1024 need privileges)",
  EADDRNOTAVAIL: "that address is not on this machine",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "the host name could not be resolved",
};

/** A listen failure as one line (exit 1, no stack); other errors pass through unchanged. */
function listenError(error: unknown, host: string, port: number): unknown {
  const e = error as NodeJS.ErrnoException;
  const reason = e?.code === undefined ? undefined : LISTEN_REASONS[e.code];
  if (reason === undefined && e?.syscall !== "listen") return error;
  return new InputError(
    `cannot listen on ${JSON.stringify(host)} port ${port}: ${reason ?? e.message} (${e.code ?? "error"}); see --host and --port`,
  );
}

/** Runs `sluice serve` until SIGTERM/SIGINT; returns the exit status. */
export async function serveCommand(argv: string[], io: { stdout: Writable; stderr: Writable }): Promise<number> {
  const parsed = parseFlags(argv, {
    config: { type: "string", short: "c" },
    "grpc-port": { type: "string" },
    "envoy-config": { type: "string" },
    port: { type: "string", short: "p" },
    host: { type: "string" },
    redis: { type: "string" },
    cluster: { type: "boolean" },
    prefix: { type: "string" },
    "store-timeout": { type: "string" },
    "on-store-error": { type: "string" },
    "max-keys": { type: "string" },
    state: { type: "string" },
    "state-interval": { type: "string" },
    token: { type: "string" },
    "max-body": { type: "string" },
    "max-batch": { type: "string" },
    "no-watch": { type: "boolean" },
    "shutdown-timeout": { type: "string" },
    "max-connections": { type: "string" },
    "shed-limit": { type: "string" },
    "shed-max-delay": { type: "string" },
    "max-key-length": { type: "string" },
    "max-config-bytes": { type: "string" },
    "max-metric-series": { type: "string" },
    "trust-proxy": { type: "string" },
    "proxy-header": { type: "string" },
    "cors-origin": { type: "string" },
    "grpc-tls-cert": { type: "string" },
    "grpc-tls-key": { type: "string" },
    "grpc-tls-ca": { type: "string" },
    "max-descriptors": { type: "string" },
    "max-entries": { type: "string" },
    "grpc-max-message": { type: "string" },
    "grpc-call-timeout": { type: "string" },
    "grpc-max-calls": { type: "string" },
    "grpc-max-calls-per-connection": { type: "string" },
    "grpc-max-buffered": { type: "string" },
    "grpc-idle-timeout": { type: "string" },
    "grpc-max-connections": { type: "string" },
    "envoy-response-headers": { type: "boolean" },
  });
  if (parsed.values.help) {
    io.stdout.write(SERVE_HELP);
    return 0;
  }
  const config = str(parsed, "config");
  const envoyConfig = str(parsed, "envoy-config");
  const grpcText = str(parsed, "grpc-port");
  const grpcPort = grpcText === undefined ? undefined : Number(grpcText);
  if (grpcPort !== undefined && (!Number.isInteger(grpcPort) || grpcPort < 0 || grpcPort > 65535))
    throw new UsageError(`--grpc-port must be 0..65535 (got ${JSON.stringify(grpcText)})`);
  if (envoyConfig !== undefined && grpcPort === undefined)
    throw new UsageError("--envoy-config needs --grpc-port N (the port Envoy's rate limit filter calls)");
  if (config === undefined && envoyConfig === undefined)
    throw new UsageError("serve needs --config FILE (or --grpc-port N --envoy-config PATH)");
  const portText = str(parsed, "port") ?? "8080";
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535 (got ${JSON.stringify(portText)})`);
  const bodyText = str(parsed, "max-body") ?? "64kb";
  const maxBodyBytes = parseBytes(bodyText);
  if (maxBodyBytes === undefined || maxBodyBytes < 1)
    throw new UsageError(`--max-body must be a size like 64kb or 1mb (got ${JSON.stringify(bodyText)})`);
  const policy = str(parsed, "on-store-error") ?? DEFAULT_POLICY;
  if (!isFixedPolicy(policy))
    throw new UsageError(
      `--on-store-error must be one of ${FIXED_POLICIES.join(", ")} (got ${JSON.stringify(policy)})`,
    );
  const shutdownText = str(parsed, "shutdown-timeout") ?? "10s";
  const shutdownTimeoutMs = parseDuration(shutdownText);
  if (shutdownTimeoutMs === undefined)
    throw new UsageError(`--shutdown-timeout must be a duration like 10s (got ${JSON.stringify(shutdownText)})`);
  const configText = str(parsed, "max-config-bytes") ?? "1mb";
  const maxConfigBytes = parseBytes(configText);
  if (maxConfigBytes === undefined || maxConfigBytes < 1)
    throw new UsageError(`--max-config-bytes must be a size like 1mb (got ${JSON.stringify(configText)})`);
  const proxyHeader = str(parsed, "proxy-header") ?? "x-forwarded-for";
  if (!(CLIENT_HEADERS as readonly string[]).includes(proxyHeader))
    throw new UsageError(
      `--proxy-header must be one of ${CLIENT_HEADERS.join(", ")} (got ${JSON.stringify(proxyHeader)})`,
    );
  const trustProxy = parseTrustFlag(str(parsed, "trust-proxy"));
  const corsOrigins = (str(parsed, "cors-origin") ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter((o) => o !== "");
  const state = str(parsed, "state");
  if (state !== undefined && str(parsed, "redis") !== undefined)
    throw new UsageError("--state keeps the in-process store's counts; with --redis they already live in Redis");
  const stateIntervalText = str(parsed, "state-interval") ?? "5s";
  const stateIntervalMs = parseDuration(stateIntervalText);
  if (stateIntervalMs === undefined || stateIntervalMs < 1)
    throw new UsageError(`--state-interval must be a duration like 5s (got ${JSON.stringify(stateIntervalText)})`);
  const grpcTls = readTls(str(parsed, "grpc-tls-cert"), str(parsed, "grpc-tls-key"), str(parsed, "grpc-tls-ca"));
  if (grpcTls !== undefined && grpcPort === undefined) throw new UsageError("--grpc-tls-* needs --grpc-port N");
  const messageText = str(parsed, "grpc-max-message") ?? "1mb";
  const maxGrpcMessageBytes = parseBytes(messageText);
  if (maxGrpcMessageBytes === undefined || maxGrpcMessageBytes < 1)
    throw new UsageError(`--grpc-max-message must be a size like 1mb (got ${JSON.stringify(messageText)})`);
  const callText = str(parsed, "grpc-call-timeout") ?? "15s";
  const callTimeoutMs = parseDuration(callText);
  if (callTimeoutMs === undefined || callTimeoutMs < 1)
    throw new UsageError(`--grpc-call-timeout must be a duration like 15s (got ${JSON.stringify(callText)})`);
  const bufferedText = str(parsed, "grpc-max-buffered") ?? "32mb";
  const maxBufferedBytes = parseBytes(bufferedText);
  if (maxBufferedBytes === undefined || maxBufferedBytes < 1)
    throw new UsageError(`--grpc-max-buffered must be a size like 32mb (got ${JSON.stringify(bufferedText)})`);
  const idleText = str(parsed, "grpc-idle-timeout") ?? "5m";
  const idleTimeoutMs = parseDuration(idleText);
  if (idleTimeoutMs === undefined || idleTimeoutMs < 1)
    throw new UsageError(`--grpc-idle-timeout must be a duration like 5m (got ${JSON.stringify(idleText)})`);
  const grpcBounds = {
    callTimeoutMs,
    maxCalls: num(parsed, "grpc-max-calls", DEFAULT_MAX_CALLS),
    maxCallsPerConnection: num(parsed, "grpc-max-calls-per-connection", DEFAULT_MAX_CALLS_PER_CONNECTION),
    maxBufferedBytes,
    idleTimeoutMs,
    maxConnections: num(parsed, "grpc-max-connections", DEFAULT_MAX_CONNECTIONS),
  };
  const shed = parseShed(str(parsed, "shed-limit"), str(parsed, "shed-max-delay"));
  const token = str(parsed, "token") ?? (process.env.SLUICE_TOKEN || undefined);
  const log = (line: string) => io.stderr.write(`sluice: ${line}\n`);

  const host = str(parsed, "host") ?? "127.0.0.1";
  const heap = heapAdviceHere();
  if (heap !== undefined) log(heap);
  const running = await startServer({
    ...(config === undefined ? {} : { config }),
    ...(grpcPort === undefined ? {} : { grpcPort }),
    ...(envoyConfig === undefined ? {} : { envoyConfig }),
    port,
    host,
    ...(token === undefined ? {} : { token }),
    maxBodyBytes,
    maxBatch: num(parsed, "max-batch", 1000),
    ...(grpcTls === undefined ? {} : { grpcTls }),
    maxDescriptors: num(parsed, "max-descriptors", 1000),
    maxEntries: num(parsed, "max-entries", 64),
    maxGrpcMessageBytes,
    grpcBounds,
    envoyResponseHeaders: parsed.values["envoy-response-headers"] === true,
    maxKeyLength: num(parsed, "max-key-length", DEFAULT_MAX_KEY_LENGTH),
    maxConfigBytes,
    maxMetricSeries: num(parsed, "max-metric-series", DEFAULT_MAX_SERIES),
    trustProxy,
    proxyHeader: proxyHeader as ClientHeader,
    corsOrigins,
    watch: parsed.values["no-watch"] !== true,
    shutdownTimeoutMs,
    maxConnections: num(parsed, "max-connections", DEFAULT_MAX_HTTP_CONNECTIONS),
    ...(shed === undefined ? {} : { shed }),
    log,
    ...(str(parsed, "redis") === undefined ? {} : { redis: str(parsed, "redis") as string }),
    cluster: parsed.values.cluster === true,
    ...(str(parsed, "prefix") === undefined ? {} : { prefix: str(parsed, "prefix") as string }),
    timeoutMs: num(parsed, "store-timeout", DEFAULT_TIMEOUT_MS),
    onError: policy,
    ...(str(parsed, "max-keys") === undefined ? {} : { maxKeys: num(parsed, "max-keys", 1) }),
    ...(state === undefined ? {} : { state, stateIntervalMs }),
  }).catch((error: unknown) => {
    throw listenError(error, host, port);
  });

  // Signal handlers go in before the address is printed: whoever reads it may signal at once.
  const exit = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log(`${signal}: closing; answering requests already received`);
      running.close().then(
        (served) => {
          log(`closed after serving ${served} requests`);
          resolve(0);
        },
        (error: unknown) => {
          log(`close failed: ${(error as Error).message}`);
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGHUP", () => void running.reload("SIGHUP"));
  });

  const { url, context } = running;
  const envoy = context.envoy;
  const grpcLine =
    envoy === undefined
      ? ""
      : `  envoy grpc    ${url.replace(/^http:\/\//, "").replace(/:\d+$/, "")}:${envoy.grpc.port} (envoy.service.ratelimit.v3.RateLimitService, ${
          envoy.state.config.domains.size
        } domains)\n`;
  const first = [...context.rules.keys()][0] ?? "api";
  const auth = token === undefined ? "" : ` -H "Authorization: Bearer $SLUICE_TOKEN"`;
  io.stdout.write(
    `sluice serve: listening on ${url} (${context.rules.size} rules${config === undefined ? "" : ` from ${config}`}, ${context.store.kind} store${
      context.store.kind === "memory" ? "" : ` at ${context.store.where}`
    }${token === undefined ? "" : ", bearer token required"})\n` +
      grpcLine +
      `  status page   ${url}/\n` +
      (context.rules.size === 0
        ? ""
        : `  check         curl -s${auth} ${url}/v1/check --json '{"rule":"${first}","key":"alice"}'\n` +
          `  batch         curl -s${auth} ${url}/v1/check --json '[{"rule":"${first}","key":"alice"},{"rule":"${first}","key":"bob","cost":2}]'\n` +
          `  forward-auth  curl -si${auth} '${url}/v1/forward-auth?rule=${encodeURIComponent(first)}&key=alice'\n`) +
      `  rules         curl -s${auth} ${url}/v1/rules\n` +
      `  metrics       curl -s${auth} ${url}/metrics\n` +
      `  API           ${url}/openapi.json\n`,
  );

  return exit;
}

/** `--shed-limit` and `--shed-max-delay`, checked; undefined when neither is given. */
function parseShed(limitText: string | undefined, delayText: string | undefined): ServeShedOptions | undefined {
  if (limitText === undefined && delayText === undefined) return undefined;
  const shed: ServeShedOptions = {};
  if (limitText !== undefined) {
    const limit = limitText === "adaptive" ? "adaptive" : Number(limitText);
    if (limit !== "adaptive" && (!Number.isSafeInteger(limit) || limit < 1))
      throw new UsageError(`--shed-limit must be a positive integer or "adaptive" (got ${JSON.stringify(limitText)})`);
    shed.limit = limit;
  }
  if (delayText !== undefined) {
    const ms = parseDuration(delayText);
    if (ms === undefined || !(ms > 0))
      throw new UsageError(`--shed-max-delay must be a duration like 100ms (got ${JSON.stringify(delayText)})`);
    shed.maxEventLoopDelayMs = ms;
  }
  return shed;
}
