/**
 * The Envoy side of `sluice serve`: the config (from `--envoy-config` files and the rules
 * file's `domains:`), its rules in a RateLimiterService of their own on the server's store
 * (rule names start with `envoy:`, which user rule names may not), hot reload, and the gRPC
 * listener. An invalid config never replaces the running one.
 */
import { type FSWatcher, watch } from "node:fs";
import { stat } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { loadEnvoyConfig } from "../../config/envoy/load.ts";
import { type EnvoyConfig, limitedNodes } from "../../config/envoy/model.ts";
import { EnvoyConfigBuilder } from "../../config/envoy/parse.ts";
import { counted, runSliced, type SliceProgress } from "../../config/envoy/sliced.ts";
import type { RuleDefinition } from "../../config/rules-file.ts";
import type { Clock } from "../../core/clock.ts";
import type { Store } from "../../core/store.ts";
import { RateLimiterService } from "../../service.ts";
import { type ApplyResult, type ApplyStep, applySteps } from "../rules-state.ts";
import type { EnvoyState } from "./decide.ts";
import type { GrpcOptions, RunningGrpc } from "./grpc-server.ts";
import { EnvoyMetrics } from "./metrics.ts";
import { DEFAULT_MAX_OVERRIDE_RULES, OVERRIDE_PREFIX, OverridePool } from "./override.ts";

/** Options of {@link EnvoyService.start}. */
export interface EnvoyOptions {
  /** `--envoy-config`: a file or a directory of YAML files. */
  path: string | undefined;
  /** `domains:` documents of the rules file, and that file's name for errors. */
  domains: { docs: unknown[]; file: string };
  store: Store;
  clock: Clock | undefined;
  host: string;
  port: number;
  watch: boolean;
  log: (line: string) => void;
  /** How the gRPC listener guards itself: token, TLS, bounds, response headers. */
  guard: Omit<GrpcOptions, "host" | "port" | "log" | "healthy">;
  /** `--max-config-bytes`: the most bytes read from the envoy config files together. */
  maxConfigBytes?: number;
  /** Most Envoy limit-override rules alive at once (default {@link DEFAULT_MAX_OVERRIDE_RULES}). */
  maxOverrideRules?: number;
  /** Most descriptor paths with /metrics series of their own (`--max-metric-series`). */
  maxMetricSeries?: number;
  /** Whether the store answers and the rules file loaded (the health service adds the envoy config). */
  healthy: () => Promise<boolean>;
}

/**
 * Builds one config from the rules file's domains and the envoy config files (they merge), in
 * slices of descriptors (`progress` hears how many are built).
 */
export async function buildEnvoyConfig(
  path: string | undefined,
  domains: EnvoyOptions["domains"],
  maxBytes?: number,
  progress?: SliceProgress,
): Promise<EnvoyConfig> {
  const builder = new EnvoyConfigBuilder();
  let built = 0;
  for (const doc of domains.docs) {
    const before = built;
    built += await runSliced(counted(builder.steps(doc, domains.file)), (done) => progress?.(before + done));
  }
  if (path !== undefined) await loadEnvoyConfig(path, builder, maxBytes, (done) => progress?.(built + done));
  return builder.config;
}

/** A reload in progress, as `/v1/status` shows it: building the descriptors, or applying their rules; how many so far. */
export interface ReloadProgress {
  phase: "building" | "applying";
  done: number;
}

/** The running Envoy API. */
export class EnvoyService {
  readonly state: EnvoyState;
  readonly grpc: RunningGrpc;
  readonly #options: EnvoyOptions;
  #watcher: FSWatcher | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The last reload error, or undefined. */
  lastError: string | undefined;
  /** The reload in progress (built and applied in slices while calls keep being answered), or undefined. */
  reloading: ReloadProgress | undefined;
  /** Reloads and commits, one at a time: two slicing at once would interleave their rules. */
  #chain: Promise<unknown> = Promise.resolve();

  private constructor(options: EnvoyOptions, state: EnvoyState, grpc: RunningGrpc) {
    this.#options = options;
    this.state = state;
    this.grpc = grpc;
  }

  /** Loads the config (a bad one throws ConfigError) and listens. */
  static async start(options: EnvoyOptions): Promise<EnvoyService> {
    const config = await buildEnvoyConfig(options.path, options.domains, options.maxConfigBytes);
    const service = new RateLimiterService<Store>({
      store: options.store,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
    const state: EnvoyState = {
      config,
      service,
      clock: options.clock ?? { now: () => Date.now() },
      metrics: new EnvoyMetrics(undefined, options.maxMetricSeries),
      overrides: new OverridePool(() => state, options.maxOverrideRules ?? DEFAULT_MAX_OVERRIDE_RULES),
    };
    await applyRules(state, config);
    // Loaded here, not at the top: gRPC is needed only with --grpc-port, and importing the
    // library or running any other command must never load it (SPEC §14).
    const { startGrpcServer } = await import("./grpc-server.ts");
    let envoy: EnvoyService | undefined;
    const grpc = await startGrpcServer(() => state, {
      ...options.guard,
      host: options.host,
      port: options.port,
      log: options.log,
      healthy: async () => envoy?.lastError === undefined && (await options.healthy()),
    });
    envoy = new EnvoyService(options, state, grpc);
    if (options.watch && options.path !== undefined) await envoy.#watch(options.path);
    return envoy;
  }

  /** Checks a new rules-file `domains:` part against the envoy files; throws ConfigError, changes nothing. */
  async prepare(domains: EnvoyOptions["domains"]): Promise<() => Promise<void>> {
    const config = await this.#inTurn(() => this.#build(domains));
    return () =>
      this.#inTurn(async () => {
        this.#options.domains = domains;
        await this.#swap(config);
      });
  }

  /** Reloads the envoy config files; resolves whether the new config was applied. */
  reload(reason: string): Promise<boolean> {
    return this.#inTurn(async () => {
      try {
        await this.#swap(await this.#build(this.#options.domains));
        this.lastError = undefined;
        this.#options.log(`envoy config reloaded (${reason}): ${this.state.config.domains.size} domains`);
        return true;
      } catch (error) {
        this.lastError = (error as Error).message;
        this.#options.log(`envoy config reload failed (${reason}): ${this.lastError}; keeping the last good config`);
        return false;
      }
    });
  }

  #inTurn<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#chain.then(run);
    this.#chain = result.catch(() => undefined);
    return result;
  }

  async #build(domains: EnvoyOptions["domains"]): Promise<EnvoyConfig> {
    this.reloading = { phase: "building", done: 0 };
    const progress = (done: number) => {
      this.reloading = { phase: "building", done };
    };
    try {
      return await buildEnvoyConfig(this.#options.path, domains, this.#options.maxConfigBytes, progress);
    } finally {
      this.reloading = undefined;
    }
  }

  async #swap(config: EnvoyConfig): Promise<void> {
    this.reloading = { phase: "applying", done: 0 };
    try {
      await applyRules(this.state, config, (done) => {
        this.reloading = { phase: "applying", done };
      });
    } finally {
      this.reloading = undefined;
    }
  }

  async #watch(path: string): Promise<void> {
    const isDir = (await stat(path)).isDirectory();
    const name = basename(path);
    this.#watcher = watch(isDir ? path : dirname(path), (_event, file) => {
      if (!isDir && file !== null && file !== name) return;
      clearTimeout(this.#timer);
      this.#timer = setTimeout(() => void this.reload("file changed"), 100);
    });
    this.#watcher.on("error", (error) => this.#options.log(`envoy config watch stopped: ${error.message}`));
  }

  /** Stops watching and closes the listener (calls in flight finish first, up to `timeoutMs`). */
  async close(timeoutMs: number): Promise<void> {
    clearTimeout(this.#timer);
    this.#watcher?.close();
    await this.grpc.close(timeoutMs);
  }
}

/**
 * Makes the service's `envoy:` rules fit `config`, and `config` the one answering: rules are
 * registered on first use (decide.ts), so only the rules in use are looked at; each is updated
 * to its descriptor's new spec (state that still fits is kept) or removed when `config` no longer
 * has it. In slices of rules: updates first, then the switch to `config`, then removals.
 */
async function applyRules(state: EnvoyState, config: EnvoyConfig, progress?: SliceProgress): Promise<void> {
  const rules: RuleDefinition[] = [];
  for (const node of limitedNodes(config)) {
    const spec = node.limit?.spec;
    const name = node.limit?.rule as string;
    if (spec !== undefined && state.service.hasRule(name)) rules.push({ name, spec, tiers: {} });
  }
  for (const info of state.service.rules()) {
    // Overrides are added on first use; keep them (and their counts) across reloads.
    if (info.name.startsWith(OVERRIDE_PREFIX))
      rules.push({ name: info.name, spec: info.specs[0] as RuleDefinition["spec"], tiers: {} });
  }
  await runSliced(
    switching(applySteps(state.service, { rules, domains: [] }), () => {
      state.config = config;
    }),
    progress,
  );
  state.overrides.retain((rule) => state.service.hasRule(rule));
}

/** The steps of an apply, calling `swap` where the new rules are in and the old not yet out. */
function* switching(
  steps: Generator<ApplyStep, ApplyResult, undefined>,
  swap: () => void,
): Generator<void, ApplyResult, undefined> {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    if (next.value === "removing") swap();
    yield;
  }
}
