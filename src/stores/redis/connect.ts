/**
 * `RedisStore.connect`: builds the ioredis client itself, with the options sluice needs, so
 * the settings the docs recommend are the default instead of a table to copy:
 * - no offline queue and no resend after a reconnect (a check already answered by its failure
 *   policy must not be counted later when Redis comes back);
 * - Cluster: TRYAGAIN handed back at once (`retryDelayOnTryAgain: 0`), so sluice splits the batch;
 * - Sentinel: reconnects quickly, so checks resume soon after a failover;
 * - connected before it resolves (never `lazyConnect`), so the first check does not fail.
 * The store owns that client: `store.close()` closes it.
 */
import { ArgumentError, StoreError } from "../../core/errors.ts";
import type { RedisStoreOptions } from "./redis-store.ts";

/** Where {@link RedisStore.connect} connects: one of `url`, `cluster` or `sentinels`, and the store's options. */
export interface RedisConnectOptions extends Omit<RedisStoreOptions, "client"> {
  /** Standalone Redis/Valkey: a `redis://` or `rediss://` URL (the default: redis://127.0.0.1:6379). */
  url?: string;
  /** Redis Cluster: seed nodes, as `host:port` or URLs. */
  cluster?: string[];
  /** Redis Sentinel: the sentinels, as `host:port` or URLs; `name` is the monitored master's. */
  sentinels?: string[];
  /** The master's name under Sentinel (e.g. "mymaster"). */
  name?: string;
  /**
   * More ioredis options (password, username, db, tls, connectTimeout, ...). On a Cluster they
   * apply to every node (`redisOptions`). The settings listed above always win.
   */
  clientOptions?: Record<string, unknown>;
  /** Longest the first connection may take, in ms (default 10,000); then `connect` rejects. */
  connectTimeoutMs?: number;
}

const CONNECT_KEYS = ["url", "cluster", "sentinels", "name", "clientOptions", "connectTimeoutMs"];

/** A client built by {@link connectClient}, ready, and how to close it. */
export interface ConnectedClient {
  client: unknown;
  /** Where it is connected (credentials removed), for messages. */
  where: string;
  close(): Promise<void>;
}

function address(text: string, what: string): { host: string; port: number } {
  let url: URL;
  try {
    url = new URL(text.includes("://") ? text : `redis://${text}`);
  } catch {
    throw new ArgumentError(`\`${what}\` entries must be host:port or redis:// URLs (got ${JSON.stringify(text)})`);
  }
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port || (what === "sentinels" ? 26379 : 6379)),
  };
}

function list(value: unknown, what: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === "string")) {
    throw new ArgumentError(
      `\`${what}\` must be a non-empty array of host:port strings (got ${JSON.stringify(value)})`,
    );
  }
  return value as string[];
}

/** Splits `RedisStore.connect`'s argument into what builds the client and the store's options. */
export function splitConnectOptions(target: string | RedisConnectOptions): {
  connect: RedisConnectOptions;
  store: Omit<RedisStoreOptions, "client">;
} {
  const options: RedisConnectOptions = typeof target === "string" ? { url: target } : target;
  if (typeof options !== "object" || options === null) {
    throw new ArgumentError(
      `RedisStore.connect takes a redis:// URL or { url | cluster | sentinels, ... } (got ${String(target)})`,
    );
  }
  const connect: Record<string, unknown> = {};
  const store: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (key === "client") {
      throw new ArgumentError(
        "RedisStore.connect builds its own client: pass your client to `new RedisStore({ client })` instead",
      );
    }
    (CONNECT_KEYS.includes(key) ? connect : store)[key] = value;
  }
  const kinds = ["url", "cluster", "sentinels"].filter((k) => connect[k] !== undefined);
  if (kinds.length > 1)
    throw new ArgumentError(`RedisStore.connect: give one of url, cluster, sentinels (got ${kinds.join(", ")})`);
  if (connect.sentinels !== undefined && typeof connect.name !== "string") {
    throw new ArgumentError(
      'RedisStore.connect: `sentinels` needs `name`, the monitored master\'s name (e.g. "mymaster")',
    );
  }
  return { connect: connect as RedisConnectOptions, store: store as Omit<RedisStoreOptions, "client"> };
}

/** Builds the ioredis client `options` describe and waits until it is ready. */
export async function connectClient(options: RedisConnectOptions): Promise<ConnectedClient> {
  const ioredis = await import("ioredis").catch((error: unknown) => {
    throw new ArgumentError(
      "RedisStore.connect builds an ioredis client, and ioredis is not installed: `npm install ioredis` (or pass a node-redis client to `new RedisStore({ client })`)",
      { cause: error },
    );
  });
  const extra = options.clientOptions ?? {};
  if (typeof extra !== "object" || extra === null) {
    throw new ArgumentError(`\`clientOptions\` must be an object of ioredis options (got ${String(extra)})`);
  }
  const waitMs = options.connectTimeoutMs ?? 10_000;
  if (typeof waitMs !== "number" || !(waitMs > 0)) {
    throw new ArgumentError(`\`connectTimeoutMs\` must be a positive number of ms (got ${String(waitMs)})`);
  }
  const safe = { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, lazyConnect: false };
  let client: import("ioredis").Redis | import("ioredis").Cluster;
  let where: string;
  if (options.cluster !== undefined) {
    const seeds = list(options.cluster, "cluster").map((s) => address(s, "cluster"));
    where = seeds.map((s) => `${s.host}:${s.port}`).join(",");
    client = new ioredis.Cluster(seeds, {
      enableOfflineQueue: false,
      lazyConnect: false,
      retryDelayOnTryAgain: 0,
      redisOptions: { ...extra, autoResendUnfulfilledCommands: false },
    });
  } else if (options.sentinels !== undefined) {
    const sentinels = list(options.sentinels, "sentinels").map((s) => address(s, "sentinels"));
    where = `${options.name} via ${sentinels.map((s) => `${s.host}:${s.port}`).join(",")}`;
    client = new ioredis.Redis({
      // While there is no master, retry soon: checks are answered by policy meanwhile.
      retryStrategy: (times: number) => Math.min(50 * times, 500),
      maxRetriesPerRequest: null,
      ...extra,
      ...safe,
      sentinels,
      name: options.name as string,
    });
  } else {
    const url = options.url ?? "redis://127.0.0.1:6379";
    if (typeof url !== "string" || !/^rediss?:\/\//.test(url)) {
      throw new ArgumentError(`\`url\` must be a redis:// or rediss:// URL (got ${JSON.stringify(url)})`);
    }
    where = url.replace(/\/\/[^@/]*@/, "//***@");
    client = new ioredis.Redis(url, { maxRetriesPerRequest: 1, ...extra, ...safe });
  }
  const close = async () => {
    await client.quit().then(
      () => undefined,
      () => client.disconnect(),
    );
  };
  let lastError: string | undefined;
  // Connection errors reach every check through the store's policy (and its warning); an
  // 'error' event without a listener would crash the process instead.
  client.on("error", (error: Error) => {
    lastError = error.message;
  });
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), waitMs);
    client.once("ready", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  if (!ready) {
    client.disconnect();
    throw new StoreError(
      `RedisStore.connect: Redis at ${where} was not ready within ${waitMs} ms (${lastError ?? "no connection"})`,
    );
  }
  return { client, where, close };
}
