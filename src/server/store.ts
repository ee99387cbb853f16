/**
 * The store behind `sluice serve`: in-process by default; `--redis URL` (or a comma-separated
 * Cluster seed list) loads ioredis and `sluice/redis` lazily, so the in-process path never
 * needs either installed.
 */
import { identityText } from "../core/identity.ts";
import { MemoryStore as Memory, type MemoryStore, type MemoryStoreStats, type RuleKeys, type Store } from "../index.ts";

import { DEFAULT_PREFIX } from "../stores/redis/defaults.ts";
import { DEFAULT_POLICY, type FixedPolicy } from "../stores/remote/failure-policy.ts";
import { DEFAULT_TIMEOUT_MS, withTimeout } from "../stores/remote/with-timeout.ts";
import { loadState, restoreLines, startStateSaver } from "./state-file.ts";

/** What the server needs from its store. */
export interface ServiceStore {
  store: Store;
  /** `memory`, `redis` or `redis-cluster`. */
  kind: string;
  /** Where it is, for the banner and /healthz (credentials removed). */
  where: string;
  /** Gauges for /metrics. */
  stats(): Record<string, number>;
  /**
   * The keys the store holds for one service rule tier (`tier` undefined: the rule's own spec), or
   * null where the store cannot know it cheaply (Redis: only a scan of the whole keyspace could
   * count them, and record keys carry a digest of the rule, not its name).
   */
  keysOf(rule: string, tier: string | undefined): RuleKeys | null;
  /** Resolves when the store answers (Redis PING); rejects otherwise. */
  ping(): Promise<void>;
  /** Releases connections. */
  close(): Promise<void>;
  /** Log lines on what the state file's restore did, to be read once the rules are bound (none without `--state`). */
  restored(): string[];
}

/** Failure policy for the Redis store (see RedisStore `onError`): one of the fixed policies. */
export type StoreFailurePolicy = FixedPolicy;

/** Options of {@link openStore}. */
export interface StoreOptions {
  redis?: string;
  /** Treat a single seed as a Cluster. */
  cluster?: boolean;
  prefix?: string;
  timeoutMs?: number;
  onError?: StoreFailurePolicy;
  maxKeys?: number;
  /** Longest start-up waits for the first Redis connection before starting on the failure policy (ms, default 5000). */
  connectTimeoutMs?: number;
  /** In-process store: the file its counts are kept in across restarts. */
  state?: string;
  /** How often the state file is written (ms, default 5000). */
  stateIntervalMs?: number;
  /** Where start-up progress and state-file lines go (what it waits for, and why it gave up). */
  log?: (line: string) => void;
}

function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}

function seed(text: string): { host: string; port: number } {
  const url = new URL(text.includes("://") ? text : `redis://${text}`);
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 6379) };
}

/** What each of {@link storeGauges} means, for /metrics' HELP lines. */
export const STORE_GAUGE_HELP: Record<string, string> = {
  sluice_store_keys: "Keys held exactly in the in-process store's Map tier.",
  sluice_store_max_keys: "The Map tier's cap (--max-keys; 0: none).",
  sluice_store_keys_fill: "The Map tier's fill: keys ÷ --max-keys (0..1; 0 without a cap).",
  sluice_store_compact_fill: "The compact tier's fill: its keys ÷ its slots (0..1).",
  sluice_store_bytes_fill:
    "The budget past --max-keys in use: compact tier, filter and summaries ÷ their budget (0..1).",
  sluice_store_max_bytes: "The budget of the compact tier, filter and summaries, in bytes (0: none).",
  sluice_store_summary_error_bound:
    "The summary's error bound: the chance that a key never pushed out reads as summarised, and so may be over-counted (0..1).",
};

/** A fill: held ÷ room, 0 while there is no room yet (a tier not yet needed) or no cap. */
const fill = (held: number, room: number) => (room > 0 && Number.isFinite(room) ? held / room : 0);

/**
 * The in-process store's gauges for /metrics and the status page: each tier's occupancy, its
 * room and its fill (0..1), evictions, decisions made from summarised state, and the summary's
 * error bound (the chance that a key never summarised reads as summarised, and so may be
 * over-counted): saturation shows here before users feel it.
 */
export function storeGauges(s: MemoryStoreStats): Record<string, number> {
  const summaryBytes = s.compactBytes + s.sketchBytes + s.filterBytes;
  return {
    sluice_store_keys: s.keys,
    sluice_store_max_keys: Number.isFinite(s.maxKeys) ? s.maxKeys : 0,
    sluice_store_keys_fill: fill(s.keys, s.maxKeys),
    sluice_store_evicted_total: s.evicted,
    sluice_store_refused_total: s.refused,
    sluice_store_compact_keys: s.compactKeys,
    sluice_store_compact_capacity: s.compactCapacity,
    sluice_store_compact_fill: fill(s.compactKeys, s.compactCapacity),
    sluice_store_compact_evicted_total: s.compactEvicted,
    sluice_store_summarised_total: s.summarised,
    sluice_store_approximate_total: s.approximate,
    sluice_store_summary_bytes: s.sketchBytes,
    sluice_store_filter_bytes: s.filterBytes,
    sluice_store_filter_keys: s.filterKeys,
    sluice_store_max_bytes: Number.isFinite(s.maxBytes) ? s.maxBytes : 0,
    sluice_store_bytes_fill: fill(summaryBytes, s.maxBytes),
    sluice_store_summary_error_bound: s.summaryErrorBound,
    sluice_store_pins: s.pins,
  };
}

/** Opens the store the options describe. */
export async function openStore(options: StoreOptions): Promise<ServiceStore> {
  if (options.redis === undefined) {
    const memory: MemoryStore = new Memory(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys });
    const log = options.log ?? (() => undefined);
    let saver: { stop(): Promise<void> } | undefined;
    if (options.state !== undefined) {
      // Read before any rule is bound: records are adopted as their rules bind.
      log(await loadState(memory, options.state));
      saver = startStateSaver(memory, options.state, options.stateIntervalMs ?? 5000, log);
    }
    return {
      store: memory,
      kind: "memory",
      where: "in-process",
      stats: () => storeGauges(memory.stats()),
      keysOf: (rule, tier) => memory.keysOf(identityText({ kind: "rule", name: rule, tier })),
      ping: async () => undefined,
      close: async () => {
        await saver?.stop();
      },
      restored: () => (options.state === undefined ? [] : restoreLines(memory, options.state)),
    };
  }
  const seeds = options.redis
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const isCluster = seeds.length > 1 || options.cluster === true;
  const { Redis, Cluster } = await import("ioredis");
  // A variable specifier keeps the Redis store out of the in-process path (and out of its type
  // graph); the build rewrites the .ts extension at runtime.
  const redisModule = "../stores/redis/index.ts";
  const { RedisStore } = (await import(redisModule)) as typeof import("../stores/redis/index.ts");
  // No offline queue and no resend after a reconnect: a check the store already answered by its
  // failure policy (timeout) must not be counted later when Redis comes back.
  const client = isCluster
    ? new Cluster(seeds.map(seed), {
        lazyConnect: false,
        enableOfflineQueue: false,
        // TRYAGAIN (a slot migrating) goes back to the store at once, which splits the batch.
        retryDelayOnTryAgain: 0,
        redisOptions: { autoResendUnfulfilledCommands: false },
      })
    : new Redis(seeds[0] as string, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
      });
  let lastError: string | undefined;
  // Failures surface per check through the store's policy; the last one explains a slow start.
  client.on("error", (error: Error) => {
    lastError = error.message;
  });
  // Without an offline queue, checks sent before the first connection would fail: wait for it
  // (bounded, so a Redis that is down at start-up still lets the service start on its policy).
  const where = seeds.map(redact).join(",");
  const waitMs = options.connectTimeoutMs ?? 5000;
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), waitMs);
    const notice = setTimeout(
      () => options.log?.(`waiting up to ${waitMs / 1000}s for Redis at ${where}${lastError ? ` (${lastError})` : ""}`),
      250,
    );
    client.once("ready", () => {
      clearTimeout(timer);
      clearTimeout(notice);
      resolve(true);
    });
  });
  if (!ready) {
    options.log?.(
      `error: Redis at ${where} did not answer within ${waitMs / 1000}s (${lastError ?? "no connection"}); starting anyway: until it answers, checks are answered by --on-store-error ${options.onError ?? DEFAULT_POLICY}`,
    );
  }
  const store = new RedisStore({
    client,
    prefix: options.prefix ?? DEFAULT_PREFIX,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    onError: options.onError ?? DEFAULT_POLICY,
  });
  return {
    store,
    kind: isCluster ? "redis-cluster" : "redis",
    where,
    stats: () => ({}),
    keysOf: () => null,
    ping: async () => {
      // Bounded like every check: a health probe must not hang on a silent Redis.
      await withTimeout(client.ping(), store.timeoutMs, () => {
        throw new Error("Redis did not answer PING in time");
      });
    },
    close: async () => {
      await store.close();
      await client.quit().catch(() => client.disconnect());
    },
    restored: () => [],
  };
}
