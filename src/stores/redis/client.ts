/**
 * Client adapters. sluice needs a handful of commands (EVALSHA, EVAL, DEL, PUBLISH, and a
 * subscription for the deny cache), so it accepts any client that can send them: ioredis
 * (`Redis` or `Cluster`) or node-redis (`createClient` or `createCluster`), told apart once, at
 * construction. Each adapter also says which node serves a Cluster slot (for per-node
 * breakers) and which of the client's options could deliver a command late.
 */
import { ArgumentError } from "../../errors.ts";
import { ioredisCommands } from "./ioredis-commands.ts";
import { nodeRedisCommands } from "./node-redis-commands.ts";

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
export type RedisClientLike = IoredisLike | NodeRedisLike;

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
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  del(keys: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  /** Subscribes a new connection (a duplicate of the client) to `channel`. */
  subscribe(channel: string, onMessage: (message: string) => void, onLink: LinkListener): Promise<Subscription>;
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
}
/** A client's options object, as read for warnings. */
export type Options = Record<string, unknown> | undefined;

function describeClient(c: unknown): string {
  if (c === null) return "null";
  if (typeof c !== "object") return typeof c;
  return (c as { constructor?: { name?: string } }).constructor?.name ?? "object";
}

/** Wraps `client`, or throws ArgumentError naming what was received. */
export function adaptClient(client: unknown): RedisCommands {
  const c = client as Record<string, unknown> | null;
  if (typeof c === "object" && c !== null && typeof c.sendCommand === "function" && typeof c.evalSha === "function") {
    return nodeRedisCommands(c);
  }
  if (typeof c === "object" && c !== null && typeof c.evalsha === "function" && typeof c.del === "function") {
    return ioredisCommands(c);
  }
  throw new ArgumentError(
    `\`client\` must be an ioredis Redis/Cluster or a node-redis client/cluster (got ${describeClient(c)})`,
  );
}
