/**
 * The valkey-glide adapter (`GlideClient`, `GlideClusterClient` from `@valkey/valkey-glide`,
 * Valkey's own client: a Rust core under a Node binding). Every command goes through
 * `customCommand`, which glide routes by its keys in a cluster (EVALSHA and EVAL by their first
 * key; sluice's keys of one call share a slot) and follows MOVED and ASK itself. Server errors
 * arrive as glide's own words (`... - NoScriptError: No matching script`); they are turned back
 * into Redis's codes (`NOSCRIPT …`, `TRYAGAIN …`), which the store reads to re-send by EVAL or
 * to split a batch. A client cannot be duplicated from its object, so a subscription (the
 * throttle's fleet queue: its owner channel) is made on the client's own connection
 * (glide-pubsub.ts); the deny cache stays off for this client (see `subscribes`): resets are
 * still published, for nodes on other clients. glide bounds each command by its own
 * `requestTimeout` (default 250 ms) and has no offline queue to deliver one late.
 */
import type { RedisCommands } from "./client.ts";
import { glideSubscribe } from "./glide-pubsub.ts";

/** A `GlideClient` or `GlideClusterClient` (only the calls sluice makes). */
export interface GlideLike {
  /** Sends one command as its arguments. */
  customCommand(args: string[]): Promise<unknown>;
  /** The client's pub/sub subscriptions (only used to tell a glide client apart). */
  getSubscriptions(): Promise<unknown>;
}

/** True for a valkey-glide client (standalone or cluster). */
export function isGlide(c: Record<string, unknown>): boolean {
  return typeof c.customCommand === "function" && typeof c.getSubscriptions === "function";
}

/** glide's names for the server errors the store acts on, and Redis's codes for them. */
const CODES: Readonly<Record<string, string>> = {
  NoScriptError: "NOSCRIPT",
  TryAgain: "TRYAGAIN",
  Moved: "MOVED",
  Ask: "ASK",
  ClusterDown: "CLUSTERDOWN",
};
const GLIDE_ERROR = /- (NoScriptError|TryAgain|Moved|Ask|ClusterDown):?\s*(.*)$/s;

/** Redis's code first (`NOSCRIPT No matching script…`), as the other clients report it; other errors as they are. */
export function redisError(error: unknown): unknown {
  const text = error instanceof Error ? error.message : String(error);
  const match = GLIDE_ERROR.exec(text);
  if (match === null) return error;
  const converted = new Error(`${CODES[match[1] as string]} ${match[2]}`, { cause: error });
  return converted;
}

/** Wraps a `GlideClient` or `GlideClusterClient`. */
export function glideCommands(c: Record<string, unknown>): RedisCommands {
  const client = c as unknown as GlideLike;
  // Cluster clients alone route scripts explicitly (`invokeScriptWithRoute`).
  const cluster = typeof c.invokeScriptWithRoute === "function";
  const send = (args: string[]): Promise<unknown> =>
    client.customCommand(args).catch((error: unknown) => {
      throw redisError(error);
    });
  return {
    cluster,
    subscribes: false,
    noSubscription:
      "a valkey-glide client cannot (sluice cannot duplicate it; its own connection subscribes only for the throttle's fleet queue)",
    evalsha: (sha, keys, args) => send(["EVALSHA", sha, String(keys.length), ...keys, ...args]),
    eval: (source, keys, args) => send(["EVAL", source, String(keys.length), ...keys, ...args]),
    ...(cluster ? {} : { command: send }),
    del: (keys) => send(["DEL", ...keys]),
    publish: (channel, message) => send(["PUBLISH", channel, message]),
    // On the client's own connection (glide-pubsub.ts), which ends with it.
    subscribe: (channel, onMessage, onLink, onEnd) => glideSubscribe(c, channel, onMessage, onLink, onEnd),
    // glide keeps its slot map inside its core: per-node breakers see one node.
    nodeOf: () => "",
    lateOptions: () => [],
  };
}
