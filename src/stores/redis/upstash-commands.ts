/**
 * The `@upstash/redis` adapter: Redis over HTTP (one POST per command, `{ result }` or
 * `{ error }` back), the client edge runtimes (Vercel Edge, Cloudflare Workers, Deno, Bun)
 * reach Redis with. It sends the same Lua through EVALSHA (EVAL on NOSCRIPT, as every adapter)
 * through the client's own requester (`redis.client.request`), which carries its URL, token,
 * encoding and read-your-writes token, and bypasses two things the `Redis` object would add:
 * auto-pipelining (a check must go out at once, under sluice's own deadline) and automatic
 * JSON deserialization (which would turn the script's exact "%.17g" figures into numbers it
 * rounded). There is no subscription: a REST call cannot hold one, so the deny cache is off for
 * this client (see `subscribes`); resets are still published, for nodes on other clients.
 */
import type { RedisCommands } from "./client.ts";

/** What `@upstash/redis` sends and receives (its `Requester`, the part sluice calls). */
export interface UpstashRequester {
  /** Sends one command as a REST request. */
  request(req: { body: unknown[] }): Promise<{ result?: unknown; error?: string }>;
}

/** An `@upstash/redis` `Redis` (only the requester sluice calls through). */
export interface UpstashLike {
  readonly client: UpstashRequester;
}

/** True for an `@upstash/redis` `Redis` (or anything with the same requester). */
export function isUpstash(c: Record<string, unknown>): boolean {
  const requester = c.client as Record<string, unknown> | null | undefined;
  return typeof requester === "object" && requester !== null && typeof requester.request === "function";
}

/** Wraps an `@upstash/redis` `Redis`. */
export function upstashCommands(c: Record<string, unknown>): RedisCommands {
  const requester = c.client as UpstashRequester;
  const send = async (body: string[]): Promise<unknown> => {
    const { result, error } = await requester.request({ body });
    // Redis's own error text first (NOSCRIPT, WRONGTYPE...), as the other clients report it.
    if (error !== undefined && error !== null) throw new Error(String(error));
    return result;
  };
  return {
    // Upstash serves a database behind one endpoint; its keys need not share a slot.
    cluster: false,
    subscribes: false,
    noSubscription: "@upstash/redis (REST) cannot",
    evalsha: (sha, keys, args) => send(["EVALSHA", sha, String(keys.length), ...keys, ...args]),
    eval: (source, keys, args) => send(["EVAL", source, String(keys.length), ...keys, ...args]),
    del: (keys) => send(["DEL", ...keys]),
    publish: (channel, message) => send(["PUBLISH", channel, message]),
    subscribe: () =>
      Promise.reject(new Error("@upstash/redis cannot hold a subscription over REST; the deny cache stays off")),
    nodeOf: () => "",
    // The client retries a fetch that failed (default 5 times); a retried check that arrives
    // after its deadline is refused by the script's guard, so no late call can count. No
    // warning is emitted: `process.emitWarning` does not exist on every edge runtime.
    lateOptions: () => [],
  };
}
