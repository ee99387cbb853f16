/**
 * The ioredis adapter (`Redis` and `Cluster`): commands, the deny cache's subscription on a
 * duplicate connection, the node serving a slot, and the options that could send a command late.
 */
import type { Emitter, Options, RedisCommands, Send } from "./client.ts";
import { onParentEnd } from "./parent-end.ts";
import { relinkOn } from "./relink.ts";

/** Resolves when an ioredis connection is ready; rejects when it ends or errors first. */
function readyOrFailure(events: Emitter): Promise<void> {
  return new Promise((resolve, reject) => {
    const once = (events.once ?? events.on).bind(events);
    once("ready", () => resolve());
    once("end", () => reject(new Error("the subscriber connection ended")));
    once("error", (error: unknown) => reject(error));
  });
}

/** Wraps an ioredis `Redis` or `Cluster`. */
export function ioredisCommands(c: Record<string, unknown>): RedisCommands {
  const cluster = c.isCluster === true;
  const options = (c.options as Options) ?? {};
  // A `lazyConnect` client never connected is in status "wait": ioredis connects it on its
  // first command, but without an offline queue it refuses that command (and the next ones)
  // until the connection is up. So the first commands wait for it, once; afterwards (and during
  // reconnects) commands go straight out and fail fast, as configured.
  let connecting: Promise<unknown> | undefined;
  let waited = false;
  const connected = <A extends unknown[]>(send: Send) => {
    const direct = send.bind(c) as (...args: A) => Promise<unknown>;
    return (...args: A): Promise<unknown> => {
      if (waited || (connecting === undefined && c.status !== "wait")) return direct(...args);
      connecting ??= (c.connect as () => Promise<unknown>)
        .call(c)
        .catch(() => undefined)
        .then(() => {
          waited = true;
        });
      return connecting.then(() => direct(...args));
    };
  };
  const evalsha = connected(c.evalsha as Send);
  const evalScript = connected(c.eval as Send);
  const del = connected(c.del as Send);
  const publish = connected(c.publish as Send);
  const raw = connected(c.call as Send);
  return {
    cluster,
    // ioredis flattens array arguments one level (v5 and v6), so nothing is spread here.
    evalsha: (sha, keys, args) => evalsha(sha, keys.length, keys, args),
    eval: (source, keys, args) => evalScript(source, keys.length, keys, args),
    ...(cluster || typeof c.call !== "function" ? {} : { command: (args: string[]) => raw(...args) }),
    del: (keys) => del(...keys),
    publish: (channel, message) => publish(channel, message),
    subscribe: async (channel, onMessage, onLink, onEnd) => {
      // A client already ended (quit by its owner) gets no new connection that would outlive it.
      if (c.status === "end") throw new Error("the client has ended: no subscription");
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
      // ioredis sends 'end' (Redis and Cluster) once no reconnection will follow: after
      // quit()/disconnect(), or when its retryStrategy gave up.
      const unfollow = onParentEnd(
        c as unknown as Emitter,
        ["end"],
        () => c.status === "end",
        () => {
          void close();
          onLink(false);
          onEnd();
        },
      );
      const close = async () => {
        stop();
        unfollow();
        (sub.disconnect as () => void)();
      };
      try {
        // `duplicate()` copies the parent's options, `lazyConnect` included: a lazy duplicate
        // would wait for a first command that never comes, and the cache would never go live.
        // Without an offline queue a command sent before the connection is up fails: wait for it.
        const ready = sub.status === "ready" ? undefined : readyOrFailure(events);
        if (sub.status === "wait") (sub.connect as () => Promise<unknown>)().catch(() => undefined);
        await ready;
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
