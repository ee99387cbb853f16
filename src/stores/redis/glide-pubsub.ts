/**
 * Subscriptions on a valkey-glide client (the fleet queue's owner channel). glide cannot be
 * duplicated from its object, but since 2.x it subscribes the client's own connection at run
 * time (`subscribe()`; RESP3 carries pushes beside replies on one connection). Messages then go
 * to the callback given when the client was created or, without one, to the client's one
 * message queue (`getPubSubMessage()`). So one reader per client drains that queue and hands
 * each message to the subscriptions of its channel: several throttles on one client must not
 * race for each other's messages. The subscription lives on the user's own connection: when its
 * owner closes the client, the reader's pending read fails with glide's ClosingError and every
 * subscription ends, keeping nothing alive (no duplicate connection to follow).
 *
 * glide gives no event when its connection drops: it reconnects and subscribes again on its own
 * (its reconciliation), silently, and whatever was published meanwhile is lost (a grant the
 * fleet queue published to a waiting owner: the owner would wait for nothing). So while any
 * subscription lives, the hub looks every LINK_CHECK_MS: whether the server holds its channels
 * (`getSubscriptions()`, answered by glide's core from its own state) and, on a standalone
 * client, whether the connection is still the one it saw last (CLIENT INFO: one cheap round
 * trip; a restart glide mended between two looks shows only there). No answer, a channel
 * missing or a new connection is a lost link (`onLink(false)`); all back a live one
 * (`onLink(true)`: the fleet queue then sends its tickets again and pumps). The timer is unref'd.
 */
import type { LinkListener, Subscription } from "./client.ts";

/** The pub/sub calls of a valkey-glide 2.x client. */
interface GlidePubSub {
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  getPubSubMessage(): Promise<{ channel: unknown; message: unknown }>;
  /** glide ≥ 2.2: the channels wanted and those the server holds, by mode (0: exact names). */
  getSubscriptions?(): Promise<{ actualSubscriptions: Partial<Record<number, Set<unknown>>> }>;
  customCommand?(args: string[]): Promise<unknown>;
  /** Only on a cluster client (sharded pub/sub). */
  ssubscribe?: unknown;
}

/** One subscription's callbacks. */
interface Entry {
  readonly onMessage: (message: string) => void;
  readonly onLink: LinkListener;
  readonly onEnd: () => void;
}

/** How often a hub asks glide whether its channels are still subscribed on the server. */
export const LINK_CHECK_MS = 250;

/** glide's PubSubChannelModes.Exact. */
const EXACT = 0;

/** How long a SUBSCRIBE waits for the server's confirmation. */
const SUBSCRIBE_TIMEOUT_MS = 5_000;

/** glide's RESP2 (`ProtocolVersion.RESP2`): a subscribed RESP2 connection refuses every other command. */
const RESP2 = 1;

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString("utf8");
  return String(value);
}

/** Why `client` cannot hold a subscription, or undefined when it can. */
export function glideRefusal(client: Record<string, unknown>): string | undefined {
  if (typeof client.subscribe !== "function" || typeof client.getPubSubMessage !== "function") {
    return "this valkey-glide client has no run-time `subscribe()` (valkey-glide 2.x has it)";
  }
  // `config` is the options the client was created with (kept by glide, not typed as public).
  const config = client.config as { protocol?: number; pubsubSubscriptions?: { callback?: unknown } } | undefined;
  if (config?.protocol === RESP2) {
    return "a valkey-glide client on RESP2 cannot subscribe without blocking its other commands (create it with RESP3, the default)";
  }
  if (typeof config?.pubsubSubscriptions?.callback === "function") {
    return "this valkey-glide client delivers pub/sub messages to the callback it was created with, which sluice cannot hear (create the store's client without `pubsubSubscriptions.callback`)";
  }
  if (client.isClosed === true) return "the valkey-glide client is closed";
  return undefined;
}

/** The subscriptions of one glide client and the reader of its message queue. */
class GlideHub {
  readonly #client: GlidePubSub;
  readonly #channels = new Map<string, Set<Entry>>();
  #reading = false;
  /** Channels whose SUBSCRIBE the server confirmed (only those are looked for in the check). */
  readonly #confirmed = new Set<string>();
  /** Whether every channel was held by the server at the last check. */
  #live = true;
  #watch: ReturnType<typeof setInterval> | undefined;
  /** The connection seen at the last look (CLIENT INFO's id and age), standalone only. */
  #seen: { id: string; age: number } | undefined;

  constructor(client: GlidePubSub) {
    this.#client = client;
  }

  async add(channel: string, entry: Entry): Promise<Subscription> {
    let entries = this.#channels.get(channel);
    if (entries === undefined) {
      entries = new Set();
      this.#channels.set(channel, entries);
    }
    entries.add(entry);
    this.#read();
    this.#watchLink();
    try {
      // Idempotent: a channel already subscribed is confirmed again.
      await this.#client.subscribe([channel], SUBSCRIBE_TIMEOUT_MS);
      if (this.#channels.has(channel)) this.#confirmed.add(channel);
      // The connection the subscription lives on, seen now: a new one at a later look is a drop.
      if (this.#seen === undefined) await this.#connection();
    } catch (error) {
      this.#remove(channel, entry);
      throw error;
    }
    return { close: async () => this.#remove(channel, entry) };
  }

  #remove(channel: string, entry: Entry): void {
    const entries = this.#channels.get(channel);
    if (entries === undefined || !entries.delete(entry) || entries.size > 0) return;
    this.#channels.delete(channel);
    this.#confirmed.delete(channel);
    this.#watchLink();
    // Best effort: on a closed client there is nothing left to unsubscribe.
    this.#client.unsubscribe([channel], SUBSCRIBE_TIMEOUT_MS).catch(() => {});
  }

  /** Reads the client's message queue while any subscription lives; a closed client ends them all. */
  #read(): void {
    if (this.#reading) return;
    this.#reading = true;
    const next = (): void => {
      if (this.#channels.size === 0) {
        this.#reading = false;
        return;
      }
      this.#client.getPubSubMessage().then(
        (m) => {
          const entries = this.#channels.get(text(m.channel));
          // Copied: a handler may close its subscription.
          if (entries !== undefined) for (const e of [...entries]) e.onMessage(text(m.message));
          next();
        },
        () => {
          // glide rejects pending reads only when the client closes (ClosingError): for good.
          this.#reading = false;
          const all = [...this.#channels.values()].flatMap((s) => [...s]);
          this.#channels.clear();
          this.#confirmed.clear();
          this.#watchLink();
          for (const e of all) {
            e.onLink(false);
            e.onEnd();
          }
        },
      );
    };
    next();
  }

  /** Runs the link check while any subscription lives (on a glide that can tell). */
  #watchLink(): void {
    const want = this.#channels.size > 0 && typeof this.#client.getSubscriptions === "function";
    if (want === (this.#watch !== undefined)) return;
    if (!want) {
      clearInterval(this.#watch);
      this.#watch = undefined;
      this.#live = true;
      this.#seen = undefined;
      return;
    }
    let asking = false;
    this.#watch = setInterval(() => {
      if (asking) return;
      asking = true;
      const subscriptions = (this.#client.getSubscriptions as NonNullable<GlidePubSub["getSubscriptions"]>)();
      const connection = this.#connection();
      Promise.all([subscriptions, connection]).then(
        ([state, fresh]) => {
          asking = false;
          const held = new Set([...(state.actualSubscriptions[EXACT] ?? [])].map(text));
          // A new connection since the last look (a restart or a drop glide mended between two
          // looks): whatever was published in between is lost, so the link was lost.
          if (fresh !== false) this.#linked(false);
          this.#linked(fresh !== undefined && [...this.#confirmed].every((c) => held.has(c)));
        },
        () => {
          // A closing client: the reader ends every subscription.
          asking = false;
        },
      );
    }, LINK_CHECK_MS);
    (this.#watch as { unref?: () => void }).unref?.();
  }

  /**
   * Whether the connection is a new one since the last look: CLIENT INFO's id (new for every
   * connection a server accepts) or its age (a restarted server may give the same id again, never
   * an age that ran back). Undefined: no answer (the server is down). Always false on a cluster
   * client (CLIENT INFO reaches any node) or one without `customCommand`.
   */
  async #connection(): Promise<boolean | undefined> {
    const c = this.#client;
    if (typeof c.customCommand !== "function" || typeof c.ssubscribe === "function") return false;
    let info: string;
    try {
      info = text(await c.customCommand(["CLIENT", "INFO"]));
    } catch {
      return undefined;
    }
    const id = /\bid=(\d+)/.exec(info)?.[1] ?? "";
    const age = Number(/\bage=(\d+)/.exec(info)?.[1] ?? 0);
    const last = this.#seen;
    this.#seen = { id, age };
    return last !== undefined && (last.id !== id || age < last.age);
  }

  /** Tells every subscription when the link changed (lost: a channel the server no longer holds). */
  #linked(live: boolean): void {
    if (live === this.#live) return;
    this.#live = live;
    for (const e of [...this.#channels.values()].flatMap((s) => [...s])) e.onLink(live);
  }
}

const hubs = new WeakMap<object, GlideHub>();

/** Subscribes `client`'s own connection to `channel` (rejects, saying why, where it cannot). */
export function glideSubscribe(
  client: Record<string, unknown>,
  channel: string,
  onMessage: (message: string) => void,
  onLink: LinkListener,
  onEnd: () => void,
): Promise<Subscription> {
  const refusal = glideRefusal(client);
  if (refusal !== undefined) return Promise.reject(new Error(refusal));
  let hub = hubs.get(client);
  if (hub === undefined) {
    hub = new GlideHub(client as unknown as GlidePubSub);
    hubs.set(client, hub);
  }
  return hub.add(channel, { onMessage, onLink, onEnd });
}
