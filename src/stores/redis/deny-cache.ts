/**
 * The deny cache (SPEC §12). A denial is exact until its `retryAfterMs`: only time, a reset or
 * a rule change can free capacity, and other nodes' traffic only spends more. So a repeat of a
 * denied request (same rule binding, key and cost) is answered here, without Redis, until then.
 *
 * Never longer than Redis would deny:
 * - with an injected clock, the entry lasts until `now + retryAfterMs` on that clock, and a
 *   repeat is answered only when its own `now` is earlier;
 * - under Redis TIME, the local timer starts when the request was SENT (local monotonic ms):
 *   the script ran no earlier, so `sentAt + retryAfterMs` is at or before the instant Redis
 *   would allow it. Erring early only costs a round trip; erring late would be a false denial.
 *
 * Resets, rule releases (updateRule, reloads, close) and refunds are published on
 * `<prefix>invalidate` and drop the matching entries in every store subscribed to it. The
 * cache is used only while that subscription is live (it is cleared when the link drops and
 * when it comes back, since messages may have been missed), and a denial whose request was
 * sent before the latest invalidation this store heard of is not cached (its reply may predate
 * the reset it raced with). A remote reset reaches this cache after one pub/sub delivery.
 * Memory is bounded: at most `maxEntries` entries, least recently used dropped first.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { ArgumentError } from "../../core/errors.ts";
import { localMs } from "../remote/with-timeout.ts";

/** Deny cache settings (`RedisStoreOptions.denyCache`). */
export interface DenyCacheOptions {
  /** Most denials held at once (default 10,000); the least recently used go first. */
  maxEntries?: number;
}

/** Default `maxEntries`. */
export const DEFAULT_DENY_CACHE_ENTRIES = 10_000;

/** One cached denial. */
interface Entry {
  /** The binding that saw it (two bindings of one rule id in a process are kept apart). */
  readonly owner: object;
  readonly cost: number;
  /** Whether `until`/`at` are on the injected clock (else local monotonic ms). */
  readonly injected: boolean;
  /** When it was decided and when its retryAfterMs ends, on that clock. */
  readonly at: number;
  readonly retryAt: number;
  /**
   * Until when it holds: 1 ms before `retryAt`, since retryAfterMs is rounded up and the
   * request may pass up to 1 ms earlier.
   */
  readonly until: number;
  readonly decision: Decision;
}

/** An invalidation as published: the rule id, and the key or null for every key of the rule. */
type Message = [string, string | null];

/** Checks the `denyCache` option, returning the entry cap (0: off). */
export function checkDenyCache(value: unknown): number {
  if (value === undefined || value === true) return DEFAULT_DENY_CACHE_ENTRIES;
  if (value === false) return 0;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ArgumentError(`\`denyCache\` must be true, false or { maxEntries } (got ${String(value)})`);
  }
  for (const key of Object.keys(value)) {
    if (key !== "maxEntries") throw new ArgumentError(`unknown \`denyCache\` option \`${key}\` (expected maxEntries)`);
  }
  const { maxEntries } = value as DenyCacheOptions;
  if (maxEntries === undefined) return DEFAULT_DENY_CACHE_ENTRIES;
  if (typeof maxEntries !== "number" || !Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new ArgumentError(`\`denyCache.maxEntries\` must be a positive integer (got ${String(maxEntries)})`);
  }
  return maxEntries;
}

/** Shifts a denial's durations to `elapsed` ms after it was decided. */
function aged(d: Decision, retryAfterMs: number, elapsed: number): Decision {
  const resetMs = Math.max(0, Math.ceil(d.resetMs - elapsed));
  const out: Decision = { ...d, retryAfterMs, resetMs };
  if (d.parts !== undefined) {
    out.parts = d.parts.map((p) => ({
      ...p,
      retryAfterMs: p.allowed ? 0 : Math.max(0, Math.ceil(p.retryAfterMs - elapsed)),
      resetMs: Math.max(0, Math.ceil(p.resetMs - elapsed)),
    }));
  }
  return out;
}

/** The cache of one store. */
export class DenyCache {
  readonly #max: number;
  readonly #entries = new Map<string, Entry>();
  /** True while the invalidation subscription is live; nothing is cached or answered otherwise. */
  #live = false;
  /** Local ms of the latest invalidation heard; denials sent before it are not cached. */
  #invalidatedAt = Number.NEGATIVE_INFINITY;

  constructor(maxEntries: number) {
    this.#max = maxEntries;
  }

  /** Checks answered from the cache so far. */
  hits = 0;

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether the cache is answering (its invalidation subscription is live). */
  get live(): boolean {
    return this.#live;
  }

  /** The subscription came up (clear: messages may have been missed) or went down. */
  link(live: boolean): void {
    this.#entries.clear();
    this.#invalidatedAt = localMs();
    this.#live = live;
  }

  /** Records a denial Redis made for a request sent at local `sentAt` (with injected `now`, if any). */
  remember(
    owner: object,
    id: string,
    key: string,
    cost: number,
    now: number | undefined,
    sentAt: number,
    d: Decision,
  ): void {
    if (!this.#live || d.failure !== undefined || !(d.retryAfterMs > 0) || sentAt <= this.#invalidatedAt) return;
    const injected = now !== undefined;
    const at = injected ? now : sentAt;
    const name = `${id}\u0000${key}`;
    this.#entries.delete(name);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    const retryAt = at + d.retryAfterMs;
    this.#entries.set(name, { owner, cost, injected, at, retryAt, until: retryAt - 1, decision: d });
  }

  /** The cached denial for this request, aged to its time, or undefined (ask Redis). */
  lookup(owner: object, id: string, key: string, cost: number, now: number | undefined): Decision | undefined {
    // Empty (the usual case for well-behaved traffic): no key text is built.
    if (!this.#live || this.#entries.size === 0) return undefined;
    const name = `${id}\u0000${key}`;
    const entry = this.#entries.get(name);
    if (entry === undefined || entry.owner !== owner || entry.cost !== cost) return undefined;
    const injected = now !== undefined;
    if (entry.injected !== injected) return undefined;
    const t = injected ? now : localMs();
    if (!(t < entry.until)) {
      this.#entries.delete(name);
      return undefined;
    }
    // Most recently used last.
    this.#entries.delete(name);
    this.#entries.set(name, entry);
    const elapsed = Math.max(0, t - entry.at);
    this.hits++;
    return aged(entry.decision, Math.max(1, Math.ceil(entry.retryAt - t)), elapsed);
  }

  /** Drops `key` of rule `id` (every key when null), and stops caching replies to requests already sent. */
  invalidate(id: string, key: string | null): void {
    this.#invalidatedAt = localMs();
    if (key !== null) {
      this.#entries.delete(`${id}\u0000${key}`);
      return;
    }
    const head = `${id}\u0000`;
    for (const name of this.#entries.keys()) if (name.startsWith(head)) this.#entries.delete(name);
  }

  /** Encodes an invalidation for the channel. */
  static message(id: string, key: string | null): string {
    return JSON.stringify([id, key] satisfies Message);
  }

  /** Applies a message heard on the channel (malformed ones clear everything: never risk a stale denial). */
  receive(text: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      typeof parsed[0] === "string" &&
      (typeof parsed[1] === "string" || parsed[1] === null)
    ) {
      this.invalidate(parsed[0], parsed[1]);
      return;
    }
    this.#invalidatedAt = localMs();
    this.#entries.clear();
  }
}
