/**
 * Client adapters. sluice needs a handful of commands (EVALSHA, EVAL, DEL, PUBLISH, and a
 * subscription for the deny cache), so it accepts any client that can send them: ioredis
 * (`Redis` or `Cluster`; iovalkey is the same), node-redis (`createClient` or `createCluster`),
 * valkey-glide (`GlideClient`, `GlideClusterClient`) or @upstash/redis, told apart once, at
 * construction. Each adapter also says which node serves a Cluster slot (for per-node
 * breakers) and which of the client's options could deliver a command late.
 */
import { ArgumentError } from "../../core/errors.ts";
import { type GlideLike, glideCommands, isGlide } from "./glide-commands.ts";
import { ioredisCommands } from "./ioredis-commands.ts";
import { nodeRedisCommands } from "./node-redis-commands.ts";
import { isUpstash, type UpstashLike, upstashCommands } from "./upstash-commands.ts";

/** An ioredis `Redis` or `Cluster` (only the methods sluice calls). */
export interface IoredisLike {
  /** Runs a loaded script by its SHA1. */
  evalsha(...args: never[]): Promise<unknown>;
  /** Runs (and loads) a script by its text. */
  eval(...args: never[]): Promise<unknown>;
  /** Deletes keys. */
  del(...args: never[]): Promise<unknown>;
  /** `true` on an ioredis `Cluster`. */
  readonly isCluster?: boolean;
}

/** A node-redis client or cluster (only `sendCommand`, whose signature differs between the two). */
export interface NodeRedisLike {
  /** Sends one raw command. */
  sendCommand(...args: never[]): Promise<unknown>;
}

/** Any client `RedisStore` accepts. */
export type RedisClientLike = IoredisLike | NodeRedisLike | UpstashLike | GlideLike;

/** A live subscription to one channel. */
export interface Subscription {
  /** Ends it (and the connection made for it). */
  close(): Promise<void>;
}

/** Called when the subscription is (again) live and able to hear every message, or lost. */
export type LinkListener = (live: boolean) => void;

/** The commands the store sends, the same for every client. */
export interface RedisCommands {
  /** Whether keys live on several nodes (a script may only touch keys of one slot). */
  readonly cluster: boolean;
  /** `false` when the client cannot hold a subscription (REST): the deny cache stays off. */
  readonly subscribes?: boolean;
  /** Why it cannot subscribe (with `subscribes: false`), for the error refusing an explicit `denyCache`. */
  readonly noSubscription?: string;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Sends one raw command to the one server (FUNCTION LOAD, FCALL: check-call.ts); undefined
   * on a Cluster, whose nodes would each need the library, and on REST clients.
   */
  command?(args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  del(keys: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  /**
   * Subscribes a new connection (a duplicate of the client) to `channel`. When the client
   * itself ends for good (quit or closed by its owner), the duplicate closes too and `onEnd`
   * is called: the duplicate must never keep a finished process alive.
   */
  subscribe(
    channel: string,
    onMessage: (message: string) => void,
    onLink: LinkListener,
    onEnd: () => void,
  ): Promise<Subscription>;
  /** `host:port` of the master serving `slot` per the client's slot map ("" when unknown or standalone). */
  nodeOf(slot: number): string;
  /** Client options under which a timed-out command could still be sent late, as `name: value` texts. */
  lateOptions(): string[];
}

/** A client method called untyped (the adapters check what they call). */
export type Send = (...args: unknown[]) => Promise<unknown>;
/** An event listener. */
export type Listener = (...args: unknown[]) => void;
/** The event side of a client. */
export interface Emitter {
  on(event: string, listener: Listener): unknown;
  once?(event: string, listener: Listener): unknown;
  off?(event: string, listener: Listener): unknown;
}
/** A client's options object, as read for warnings. */
export type Options = Record<string, unknown> | undefined;

function describeClient(c: unknown): string {
  if (c === null) return "null";
  if (typeof c !== "object") return typeof c;
  return (c as { constructor?: { name?: string } }).constructor?.name ?? "object";
}

/** What to pass instead, said by every refusal. */
const WHAT_TO_PASS =
  "Pass an ioredis (or iovalkey) `Redis`/`Cluster`, a node-redis `createClient()`/`createCluster()` client or a valkey-glide `GlideClient`/`GlideClusterClient`, or let sluice build one with `await RedisStore.connect(url)`";

/** Wraps `client`, or throws ArgumentError naming what was received and what to pass instead. */
export function adaptClient(client: unknown): RedisCommands {
  const c = client as Record<string, unknown> | null;
  if (typeof c !== "object" || c === null) {
    throw new ArgumentError(`\`client\` must be a Redis client object (got ${describeClient(c)}). ${WHAT_TO_PASS}.`);
  }
  // Before ioredis: an @upstash/redis `Redis` has `evalsha` and `del` too, but speaks REST.
  if (isUpstash(c)) return upstashCommands(c);
  if (isGlide(c)) return glideCommands(c);
  const has = (name: string) => typeof c[name] === "function";
  if (has("sendCommand") && has("evalSha") && has("duplicate") && has("connect")) return nodeRedisCommands(c);
  // ioredis: the commands, plus what the deny cache needs (a duplicate connection, its events).
  if (has("evalsha") && has("del") && has("duplicate") && has("on") && has("publish")) return ioredisCommands(c);
  if (has("evalsha") || has("eval")) {
    // Commands without a connection to duplicate, pub/sub or events (an HTTP client other than @upstash/redis).
    throw new ArgumentError(
      `\`client\` (${describeClient(c)}) sends commands but is neither ioredis nor node-redis: it has no ${
        has("duplicate") ? "event emitter" : "duplicate()"
      }, so it cannot hold the deny cache's subscription or report its connection. ${WHAT_TO_PASS}, or an \`@upstash/redis\` \`Redis\`.`,
    );
  }
  throw new ArgumentError(
    `\`client\` must be an ioredis or node-redis client (got ${describeClient(c)}). ${WHAT_TO_PASS}.`,
  );
}
