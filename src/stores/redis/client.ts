/**
 * Client adapters. sluice needs a handful of commands (EVALSHA, EVAL, DEL, PUBLISH, and a
 * subscription for the deny cache), so it accepts any client that can send them: ioredis
 * (`Redis` or `Cluster`) or node-redis (`createClient` or `createCluster`), told apart once, at
 * construction. Each adapter also says which node serves a Cluster slot (for per-node
 * breakers) and which of the client's options could deliver a command late.
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

type Send = (...args: unknown[]) => Promise<unknown>;
type Listener = (...args: unknown[]) => void;
interface Emitter {
  on(event: string, listener: Listener): unknown;
}
type Options = Record<string, unknown> | undefined;

/**
 * On any of `events` (trouble somewhere in a cluster subscriber), the link is reported lost and,
 * shortly after, `resubscribe()` is run; once it succeeds the link is reported live again.
 * Messages may have been missed in between, which is why the cache clears on both reports.
 */
function relinkOn(
  events: Emitter,
  names: string[],
  onLink: LinkListener,
  resubscribe: () => Promise<unknown>,
): () => void {
  let scheduled = false;
  let stopped = false;
  const schedule = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    setTimeout(attempt, RELINK_DELAY_MS).unref();
  };
  const attempt = () => {
    scheduled = false;
    if (stopped) return;
    resubscribe().then(() => {
      if (!stopped) onLink(true);
    }, schedule);
  };
  for (const name of names) {
    events.on(name, () => {
      onLink(false);
      schedule();
    });
  }
  return () => {
    stopped = true;
  };
}

/** Pause before re-subscribing after cluster trouble (lets the client settle on a new node). */
const RELINK_DELAY_MS = 100;

/** Resolves when an ioredis connection is ready; rejects when it ends or errors first. */
function readyOrFailure(events: Emitter & { once?: (event: string, l: Listener) => unknown }): Promise<void> {
  return new Promise((resolve, reject) => {
    const once = (events.once ?? events.on).bind(events);
    once("ready", () => resolve());
    once("end", () => reject(new Error("the subscriber connection ended")));
    once("error", (error: unknown) => reject(error));
  });
}

function describeClient(c: unknown): string {
  if (c === null) return "null";
  if (typeof c !== "object") return typeof c;
  return (c as { constructor?: { name?: string } }).constructor?.name ?? "object";
}

/** Wraps `client`, or throws ArgumentError naming what was received. */
export function adaptClient(client: unknown): RedisCommands {
  const c = client as Record<string, unknown> | null;
  if (typeof c === "object" && c !== null && typeof c.sendCommand === "function" && typeof c.evalSha === "function") {
    return nodeRedis(c);
  }
  if (typeof c === "object" && c !== null && typeof c.evalsha === "function" && typeof c.del === "function") {
    return ioredis(c);
  }
  throw new ArgumentError(
    `\`client\` must be an ioredis Redis/Cluster or a node-redis client/cluster (got ${describeClient(c)})`,
  );
}

function nodeRedis(c: Record<string, unknown>): RedisCommands {
  const send = (c.sendCommand as Send).bind(c);
  // node-redis: a cluster routes by an explicit first key; a client takes the arguments only.
  const cluster = "masters" in c;
  const run = cluster
    ? (args: string[], first: string | undefined) => send(first, false, args)
    : (args: string[]) => send(args);
  const options = (): Options =>
    cluster
      ? ((c._options as Options)?.defaults as Options)
      : ((c as { options?: Options }).options ?? (c._options as Options));
  return {
    cluster,
    evalsha: (sha, keys, args) => run(["EVALSHA", sha, String(keys.length), ...keys, ...args], keys[0]),
    eval: (source, keys, args) => run(["EVAL", source, String(keys.length), ...keys, ...args], keys[0]),
    del: (keys) => run(["DEL", ...keys], keys[0]),
    publish: (channel, message) => run(["PUBLISH", channel, message], channel),
    subscribe: async (channel, onMessage, onLink) => {
      const sub = (c.duplicate as () => Record<string, unknown>)();
      const events = sub as unknown as Emitter;
      let stop = () => {};
      if (!cluster) {
        // A reconnecting client re-subscribes by itself before it is ready again.
        events.on("error", () => onLink(false));
        events.on("reconnecting", () => onLink(false));
        events.on("end", () => onLink(false));
        events.on("ready", () => onLink(true));
      } else {
        type Listen = (ch: string, l: (m: string) => void) => Promise<unknown>;
        stop = relinkOn(
          events,
          ["error", "node-error", "node-reconnecting", "node-disconnect", "disconnect"],
          onLink,
          async () => {
            await (sub.unsubscribe as Listen)(channel, onMessage).catch(() => undefined);
            await (sub.subscribe as Listen)(channel, onMessage);
          },
        );
      }
      const close = async () => {
        stop();
        const end = (sub.close ?? sub.destroy) as (() => Promise<unknown> | undefined) | undefined;
        await Promise.resolve(end?.call(sub)).catch(() => undefined);
      };
      try {
        await (sub.connect as () => Promise<unknown>)();
        await (sub.subscribe as (ch: string, l: (m: string) => void) => Promise<unknown>)(channel, onMessage);
      } catch (error) {
        await close();
        throw error;
      }
      return { close };
    },
    nodeOf: (slot) => {
      const slots = c.slots as Array<{ master?: { address?: string } } | undefined> | undefined;
      return slots?.[slot]?.master?.address ?? "";
    },
    lateOptions: () => {
      const late: string[] = [];
      if (options()?.disableOfflineQueue !== true) {
        late.push(`${cluster ? "defaults." : ""}disableOfflineQueue: ${String(options()?.disableOfflineQueue)}`);
      }
      return late;
    },
  };
}

function ioredis(c: Record<string, unknown>): RedisCommands {
  const evalsha = (c.evalsha as Send).bind(c);
  const evalScript = (c.eval as Send).bind(c);
  const del = (c.del as Send).bind(c);
  const cluster = c.isCluster === true;
  const options = (c.options as Options) ?? {};
  return {
    cluster,
    // ioredis flattens array arguments one level (v5 and v6), so nothing is spread here.
    evalsha: (sha, keys, args) => evalsha(sha, keys.length, keys, args),
    eval: (source, keys, args) => evalScript(source, keys.length, keys, args),
    del: (keys) => del(...keys),
    publish: (channel, message) => (c.publish as Send).call(c, channel, message),
    subscribe: async (channel, onMessage, onLink) => {
      const sub = (c.duplicate as () => Record<string, unknown>)();
      const events = sub as unknown as Emitter;
      let lost = false;
      events.on("error", () => {});
      events.on("message", (ch: unknown, message: unknown) => {
        if (ch === channel && typeof message === "string") onMessage(message);
      });
      events.on("close", () => {
        lost = true;
        onLink(false);
      });
      let stop = () => {};
      if (cluster) {
        // The subscription lives on one node; if any node drops out it may have been that one.
        stop = relinkOn(events, ["-node", "node error"], onLink, () =>
          (sub.subscribe as (ch: string) => Promise<unknown>)(channel),
        );
      }
      events.on("ready", () => {
        if (!lost) return;
        lost = false;
        // ioredis re-subscribes on reconnect; subscribing again (idempotent) tells us when it is live.
        (sub.subscribe as (ch: string) => Promise<unknown>)(channel).then(
          () => onLink(true),
          () => onLink(false),
        );
      });
      const close = async () => {
        stop();
        (sub.disconnect as () => void)();
      };
      try {
        // Without an offline queue a command sent before the connection is up fails: wait for it.
        if (sub.status !== "ready") await readyOrFailure(events);
        await (sub.subscribe as (ch: string) => Promise<unknown>)(channel);
      } catch (error) {
        await close();
        throw error;
      }
      return { close };
    },
    nodeOf: (slot) => {
      const slots = c.slots as string[][] | undefined;
      return slots?.[slot]?.[0] ?? "";
    },
    lateOptions: () => {
      const late: string[] = [];
      const node = cluster ? ((options.redisOptions as Options) ?? {}) : options;
      if (options.enableOfflineQueue !== false) late.push(`enableOfflineQueue: ${String(options.enableOfflineQueue)}`);
      if (node.autoResendUnfulfilledCommands !== false) {
        late.push(
          `${cluster ? "redisOptions." : ""}autoResendUnfulfilledCommands: ${String(node.autoResendUnfulfilledCommands)}`,
        );
      }
      if (cluster) {
        // (Node connections keep their offline queue: ioredis opens them lazily, through it.)
        // TRYAGAIN retried inside ioredis hides it from sluice, which would split the batch.
        if (options.retryDelayOnTryAgain !== 0) {
          late.push(`retryDelayOnTryAgain: ${String(options.retryDelayOnTryAgain)}`);
        }
      }
      return late;
    },
  };
}
