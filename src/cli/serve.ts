/** `sluice serve`: the rate-limit service over HTTP (see src/server/). */
import type { Writable } from "node:stream";
import { parseBytes, parseDuration } from "../config/units.ts";
import { startServer } from "../server/server.ts";
import type { StoreFailurePolicy } from "../server/store.ts";
import { num, parseFlags, str, UsageError } from "./args.ts";

/** Help text of `sluice serve`. */
export const SERVE_HELP = `Usage: sluice serve --config FILE [options]
       sluice serve --grpc-port N --envoy-config PATH [options]

Runs the rate-limit service: POST /v1/check, GET /v1/rules, GET /healthz, GET /metrics, and a
status page at GET /. The rules file is reloaded when it changes and on SIGHUP; an invalid
file is refused and the last good rules stay. SIGTERM / SIGINT close gracefully.

Options:
  --config FILE          rules file, YAML or JSON (required unless --envoy-config is given)
  --grpc-port N          also serve Envoy's rate limit service (envoy.service.ratelimit.v3,
                         ShouldRateLimit) over gRPC on port N (0 picks a free one)
  --envoy-config PATH    envoyproxy/ratelimit config: a YAML file or a directory of them
                         (reloaded like the rules file; needs --grpc-port)
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
  --token T              require "Authorization: Bearer T" on /v1/* and /metrics
                         (default: the SLUICE_TOKEN environment variable, if set)
  --max-body SIZE        largest request body, e.g. 64kb, 1mb (default 64kb)
  --max-batch N          most checks in one batch (default 1000)
  --no-watch             reload only on SIGHUP, not on file change
  --shutdown-timeout D   longest a graceful close waits for in-flight requests (default 10s)
  -h, --help             this help

Example:
  sluice serve --config examples/rules.yaml --port 8080
  curl -s localhost:8080/v1/check -d '{"rule":"api","key":"alice"}'
`;

const POLICIES = ["deny", "allow", "throw"];

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
  const policy = str(parsed, "on-store-error") ?? "deny";
  if (!POLICIES.includes(policy))
    throw new UsageError(`--on-store-error must be one of deny, allow, throw (got ${JSON.stringify(policy)})`);
  const shutdownText = str(parsed, "shutdown-timeout") ?? "10s";
  const shutdownTimeoutMs = parseDuration(shutdownText);
  if (shutdownTimeoutMs === undefined)
    throw new UsageError(`--shutdown-timeout must be a duration like 10s (got ${JSON.stringify(shutdownText)})`);
  const state = str(parsed, "state");
  if (state !== undefined && str(parsed, "redis") !== undefined)
    throw new UsageError("--state keeps the in-process store's counts; with --redis they already live in Redis");
  const stateIntervalText = str(parsed, "state-interval") ?? "5s";
  const stateIntervalMs = parseDuration(stateIntervalText);
  if (stateIntervalMs === undefined || stateIntervalMs < 1)
    throw new UsageError(`--state-interval must be a duration like 5s (got ${JSON.stringify(stateIntervalText)})`);
  const token = str(parsed, "token") ?? (process.env.SLUICE_TOKEN || undefined);
  const log = (line: string) => io.stderr.write(`sluice: ${line}\n`);

  const running = await startServer({
    ...(config === undefined ? {} : { config }),
    ...(grpcPort === undefined ? {} : { grpcPort }),
    ...(envoyConfig === undefined ? {} : { envoyConfig }),
    port,
    host: str(parsed, "host") ?? "127.0.0.1",
    ...(token === undefined ? {} : { token }),
    maxBodyBytes,
    maxBatch: num(parsed, "max-batch", 1000),
    watch: parsed.values["no-watch"] !== true,
    shutdownTimeoutMs,
    log,
    ...(str(parsed, "redis") === undefined ? {} : { redis: str(parsed, "redis") as string }),
    cluster: parsed.values.cluster === true,
    ...(str(parsed, "prefix") === undefined ? {} : { prefix: str(parsed, "prefix") as string }),
    timeoutMs: num(parsed, "store-timeout", 1000),
    onError: policy as StoreFailurePolicy,
    ...(str(parsed, "max-keys") === undefined ? {} : { maxKeys: num(parsed, "max-keys", 1) }),
    ...(state === undefined ? {} : { state, stateIntervalMs }),
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
        : `  check         curl -s${auth} ${url}/v1/check -d '{"rule":"${first}","key":"alice"}'\n` +
          `  batch         curl -s${auth} ${url}/v1/check -d '[{"rule":"${first}","key":"alice"},{"rule":"${first}","key":"bob","cost":2}]'\n`) +
      `  rules         curl -s${auth} ${url}/v1/rules\n` +
      `  metrics       curl -s${auth} ${url}/metrics\n`,
  );

  return exit;
}
