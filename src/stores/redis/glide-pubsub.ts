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
 * subscription lives, the hub asks glide every LINK_CHECK_MS whether the server holds its channels
 * (`getSubscriptions()`: answered by glide's core from its own state, no server round trip): a
 * channel missing is a lost link (`onLink(false)`), all back a live one (`onLink(true)`: the
 * fleet queue then sends its tickets again and pumps). The timer is unref'd.
 */
import type { LinkListener, Subscription } from "./client.ts";

/** The pub/sub calls of a valkey-glide 2.x client. */
interface GlidePubSub {
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  getPubSubMessage(): Promise<{ channel: unknown; message: unknown }>;
  /** glide ≥ 2.2: the channels wanted and those the server holds, by mode (0: exact names). */
  getSubscriptions?(): Promise<{ actualSubscriptions: Partial<Record<number, Set<unknown>>> }>;
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
      return;
    }
    let asking = false;
    this.#watch = setInterval(() => {
      if (asking) return;
      asking = true;
      (this.#client.getSubscriptions as NonNullable<GlidePubSub["getSubscriptions"]>)().then(
        (state) => {
          asking = false;
          const held = new Set([...(state.actualSubscriptions[EXACT] ?? [])].map(text));
          this.#linked([...this.#confirmed].every((c) => held.has(c)));
        },
        () => {
          // A closing client: the reader ends every subscription.
          asking = false;
        },
      );
    }, LINK_CHECK_MS);
    (this.#watch as { unref?: () => void }).unref?.();
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
