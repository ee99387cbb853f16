/**
 * Client adapters. sluice needs three commands (EVALSHA, EVAL, DEL), so it accepts any client
 * that can send them: ioredis (`Redis` or `Cluster`) or node-redis (`createClient` or
 * `createCluster`), told apart once, at construction.
 */
import { ArgumentError } from "../../errors.ts";

/** An ioredis `Redis` or `Cluster` (only the methods sluice calls). */
export interface IoredisLike {
  evalsha(...args: never[]): Promise<unknown>;
  eval(...args: never[]): Promise<unknown>;
  del(...args: never[]): Promise<unknown>;
  /** `true` on an ioredis `Cluster`. */
  readonly isCluster?: boolean;
}

/** A node-redis client or cluster (only `sendCommand`, whose signature differs between the two). */
export interface NodeRedisLike {
  sendCommand(...args: never[]): Promise<unknown>;
}

/** Any client `RedisStore` accepts. */
export type RedisClientLike = IoredisLike | NodeRedisLike;

/** The commands the store sends, the same for every client. */
export interface RedisCommands {
  /** Whether keys live on several nodes (a script may only touch keys of one slot). */
  readonly cluster: boolean;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(source: string, keys: string[], args: string[]): Promise<unknown>;
  del(keys: string[]): Promise<unknown>;
}

type Send = (...args: unknown[]) => Promise<unknown>;

/** Wraps `client`, or throws ArgumentError naming what was received. */
export function adaptClient(client: unknown): RedisCommands {
  const c = client as Record<string, unknown> | null;
  if (typeof c === "object" && c !== null && typeof c.sendCommand === "function" && typeof c.evalSha === "function") {
    const send = (c.sendCommand as Send).bind(c);
    // node-redis: a cluster routes by an explicit first key; a client takes the arguments only.
    const cluster = "masters" in c;
    const run = cluster
      ? (args: string[], first: string | undefined) => send(first, false, args)
      : (args: string[]) => send(args);
    return {
      cluster,
      evalsha: (sha, keys, args) => run(["EVALSHA", sha, String(keys.length), ...keys, ...args], keys[0]),
      eval: (source, keys, args) => run(["EVAL", source, String(keys.length), ...keys, ...args], keys[0]),
      del: (keys) => run(["DEL", ...keys], keys[0]),
    };
  }
  if (typeof c === "object" && c !== null && typeof c.evalsha === "function" && typeof c.del === "function") {
    const evalsha = (c.evalsha as Send).bind(c);
    const evalScript = (c.eval as Send).bind(c);
    const del = (c.del as Send).bind(c);
    return {
      cluster: c.isCluster === true,
      // ioredis flattens array arguments one level (v5 and v6), so nothing is spread here.
      evalsha: (sha, keys, args) => evalsha(sha, keys.length, keys, args),
      eval: (source, keys, args) => evalScript(source, keys.length, keys, args),
      del: (keys) => del(...keys),
    };
  }
  throw new ArgumentError(
    `\`client\` must be an ioredis Redis/Cluster or a node-redis client/cluster (got ${
      c === null ? "null" : typeof c === "object" ? (c.constructor?.name ?? "object") : typeof c
    })`,
  );
}
