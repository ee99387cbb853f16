/**
 * The node-redis adapter (`createClient` and `createCluster`): commands, the deny cache's
 * subscription on a duplicate, the node serving a slot, and the options that could send a
 * command late.
 */
import type { Emitter, Options, RedisCommands, Send } from "./client.ts";
import { onParentEnd } from "./parent-end.ts";
import { relinkOn } from "./relink.ts";

/** Wraps a node-redis client or cluster. */
export function nodeRedisCommands(c: Record<string, unknown>): RedisCommands {
  const send = (c.sendCommand as Send).bind(c);
  // node-redis: a cluster routes by an explicit first key; a client takes the arguments only.
  const cluster = "masters" in c;
  const direct = cluster
    ? (args: string[], first: string | undefined) => send(first, false, args)
    : (args: string[]) => send(args);
  // node-redis refuses every command until `connect()`. A client never connected (the usual
  // slip: a forgotten `await client.connect()`) is connected here, once, on its first command;
  // one seen open and later closed is its owner's choice and stays closed.
  let seenOpen = c.isOpen !== false;
  let connecting: Promise<unknown> | undefined;
  const run = (args: string[], first: string | undefined): Promise<unknown> => {
    if (seenOpen || c.isOpen !== false) {
      seenOpen = true;
      return direct(args, first);
    }
    if (connecting === undefined) {
      // Its connection errors are reported through checks (decision.failure and the store's
      // warning); without a listener node-redis would throw them as uncaught 'error' events.
      const emitter = c as unknown as Emitter & { listenerCount?(event: string): number };
      if ((emitter.listenerCount?.("error") ?? 0) === 0) emitter.on("error", () => undefined);
      connecting = (c.connect as () => Promise<unknown>).call(c);
    }
    return connecting.then(() => direct(args, first));
  };
  const options = (): Options =>
    cluster
      ? ((c._options as Options)?.defaults as Options)
      : ((c as { options?: Options }).options ?? (c._options as Options));
  return {
    cluster,
    evalsha: (sha, keys, args) => run(["EVALSHA", sha, String(keys.length), ...keys, ...args], keys[0]),
    eval: (source, keys, args) => run(["EVAL", source, String(keys.length), ...keys, ...args], keys[0]),
    ...(cluster ? {} : { command: (args: string[]) => run(args, undefined) }),
    del: (keys) => run(["DEL", ...keys], keys[0]),
    publish: (channel, message) => run(["PUBLISH", channel, message], channel),
    subscribe: async (channel, onMessage, onLink, onEnd) => {
      // A client closed by its owner gets no new connection that would outlive it.
      if (seenOpen && c.isOpen === false) throw new Error("the client is closed: no subscription");
      const sub = (c.duplicate as () => Record<string, unknown>)();
      const events = sub as unknown as Emitter;
      let stop = () => {};
      let subscribed = false;
      if (!cluster) {
        // A reconnecting client re-subscribes by itself before it is ready again. The first
        // "ready" comes before our SUBSCRIBE is confirmed: the caller reports that one live
        // itself once it is, so a cache never answers before messages can reach it.
        events.on("error", () => onLink(false));
        events.on("reconnecting", () => onLink(false));
        events.on("end", () => onLink(false));
        events.on("ready", () => {
          if (subscribed) onLink(true);
        });
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
      // A client sends 'end' when its socket is closed for good (close/quit/destroy, or its
      // reconnectStrategy gave up); a cluster sends 'disconnect' when closed (and isOpen is
      // then false).
      const unfollow = onParentEnd(
        c as unknown as Emitter,
        cluster ? ["disconnect"] : ["end"],
        () => c.isOpen === false,
        () => {
          void close();
          onLink(false);
          onEnd();
        },
      );
      const close = async () => {
        stop();
        unfollow();
        const end = (sub.close ?? sub.destroy) as (() => Promise<unknown> | undefined) | undefined;
        await Promise.resolve(end?.call(sub)).catch(() => undefined);
      };
      try {
        await (sub.connect as () => Promise<unknown>)();
        await (sub.subscribe as (ch: string, l: (m: string) => void) => Promise<unknown>)(channel, onMessage);
        subscribed = true;
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
