/**
 * The deny caches' link between nodes: every store publishes its resets and rule releases on
 * `<prefix>invalidate` (with or without a cache of its own, since others may have one), and a
 * store with a cache hears everyone's (its own included) through a subscription on a
 * duplicate of the client. The subscription is made on the first denial worth caching, so
 * stores that never deny open no extra connection; `close()` ends it, and so does the end of the
 * client it duplicates (a process that quit its client without `close()` must still exit). A
 * later denial (the client was connected again) subscribes again.
 */
import { withTimeout } from "../remote/with-timeout.ts";
import type { RedisCommands, Subscription } from "./client.ts";
import { DenyCache } from "./deny-cache.ts";

/** Publishes invalidations and keeps one store's cache subscribed to them. */
export class Invalidation {
  readonly #commands: RedisCommands;
  readonly #channel: string;
  readonly #cache: DenyCache | undefined;
  readonly #timeoutMs: number;
  #subscription: Promise<Subscription | undefined> | undefined;
  #closed = false;

  constructor(commands: RedisCommands, prefix: string, cache: DenyCache | undefined, timeoutMs: number) {
    this.#commands = commands;
    this.#channel = `${prefix}invalidate`;
    this.#cache = cache;
    this.#timeoutMs = timeoutMs;
  }

  /** Starts the subscription unless it is running (the cache answers once it is live). */
  start(): void {
    const cache = this.#cache;
    if (cache === undefined || this.#subscription !== undefined || this.#closed) return;
    const attempt: Promise<Subscription | undefined> = this.#commands
      .subscribe(
        this.#channel,
        (message) => cache.receive(message),
        (live) => cache.link(live && !this.#closed),
        () => {
          // The client ended and the duplicate with it: no cache until a later denial relinks.
          cache.link(false);
          if (this.#subscription === attempt) this.#subscription = undefined;
        },
      )
      .then(
        (subscription) => {
          if (this.#closed) {
            void subscription.close();
            return undefined;
          }
          // (Unless the client ended meanwhile: then this attempt is no longer the current one.)
          if (this.#subscription === attempt) cache.link(true);
          return subscription;
        },
        () => {
          // No subscription, no cache: checks keep asking Redis. Try again on a later denial.
          if (this.#subscription === attempt) this.#subscription = undefined;
          return undefined;
        },
      );
    this.#subscription = attempt;
  }

  /** Tells every node (this one first, at once) that `key` of rule `id` (all keys: null) may be free again. */
  async publish(id: string, key: string | null): Promise<void> {
    this.#cache?.invalidate(id, key);
    await withTimeout(this.#commands.publish(this.#channel, DenyCache.message(id, key)), this.#timeoutMs, () => {
      throw new Error(`Redis did not answer PUBLISH within timeoutMs (${this.#timeoutMs} ms)`);
    });
  }

  /** Ends the subscription; the cache stops answering. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cache?.link(false);
    const subscription = await this.#subscription;
    this.#subscription = undefined;
    await subscription?.close();
  }
}
