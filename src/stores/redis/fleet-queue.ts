/**
 * The throttle's fleet queue on Redis (SPEC §16): every call is one EVALSHA of queue.lua, which
 * keeps the key's tickets and grants them with the limiter's own rule code; grants and wake-ups
 * for other processes are PUBLISHed by the script on each owner's channel, which this process
 * hears on one dedicated subscriber connection. A key's queue, its rate record (the rate
 * limiter's own, so a fleet pause's block holds it) and its concurrency record share one hash
 * tag: one Cluster slot.
 */
import { hex, sha1 } from "../../core/digest.ts";
import { StoreError } from "../../core/errors.ts";
import {
  type FleetGrant,
  type FleetQueue,
  type FleetQueueConfig,
  type FleetTicket,
  type Restamped,
  restampedOf,
  slackOf,
} from "../../core/fleet-queue.ts";
import { compileRule } from "../../core/rule.ts";
import type { AlgorithmSpec } from "../../core/spec.ts";
import { boundedCall } from "../remote/exchange.ts";
import { RedisBoundRule, type StoreParts } from "./bound-rule.ts";
import type { Subscription } from "./client.ts";
import { hashTag, recordKeyOf, ruleDigest, slotOf, tagSeed } from "./keys.ts";
import { ALGORITHMS, GUARD_HEAD, GUARD_TAIL, HEAD, lazyAlgorithm, luaText } from "./script.ts";

let loaded: { source: string; sha: string } | undefined;

/** The queue script: the check script's rule code with queue.lua as its entry point. */
export function queueScript(): { source: string; sha: string } {
  if (loaded === undefined) {
    const parts = [...HEAD, ...ALGORITHMS, "ban.lua", "rule.lua", "decide-rule.lua", "record-io.lua", "queue.lua"];
    const body = parts.map((p, i) =>
      (ALGORITHMS as readonly string[]).includes(p) ? lazyAlgorithm(p as (typeof ALGORITHMS)[number], i) : luaText(p),
    );
    const source = GUARD_HEAD + body.join("\n") + GUARD_TAIL;
    loaded = { source, sha: hex(sha1(source)) };
  }
  return loaded;
}

/** One rule's script descriptor and record infix, as the limiter's binding computes them. */
function ruleParts(parts: StoreParts, id: string, specs: readonly AlgorithmSpec[]): { text: string; infix: string } {
  const bound = new RedisBoundRule(parts, { id, rule: compileRule([...specs]) });
  return { text: bound.descriptor.join(" "), infix: bound.infixes[0] as string };
}

/** Lone surrogates and NUL: what a key cannot carry through Redis's UTF-8 unchanged. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the escape character, so it is escaped too
const ODD = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A key as the script sends it back in messages: unchanged when it is well-formed UTF-16 without
 * NUL; else each lone surrogate as NUL and its 4 hex digits and a NUL as two (UTF-8 would turn a
 * lone surrogate into U+FFFD, and the grant would name no key of this process).
 */
export function wireKey(key: string): string {
  return key.replace(ODD, (c) =>
    c === "\u0000" ? "\u0000\u0000" : `\u0000${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The key `wireKey` encoded. */
export function keyOfWire(wire: string): string {
  if (!wire.includes("\u0000")) return wire;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is the escape character
  return wire.replace(/\u0000(\u0000|[0-9a-f]{4})/g, (_, m: string) =>
    m === "\u0000" ? "\u0000" : String.fromCharCode(Number.parseInt(m, 16)),
  );
}

/** A script reply: `status|wait|grants`. */
function parseReply(reply: unknown): { status: string; wait: number | undefined; grants: FleetGrant[] } {
  const text = Array.isArray(reply) ? reply[0] : reply;
  if (Array.isArray(reply) && reply[0] === "late") throw new StoreError("Redis queue call arrived late");
  if (typeof text !== "string") throw new StoreError(`unexpected reply from the sluice queue script: ${String(text)}`);
  const [status = "", wait = "", grants = ""] = text.split("|");
  return { status, wait: wait === "" ? undefined : Number(wait), grants: parseGrants(grants) };
}

function parseGrants(text: string): FleetGrant[] {
  if (text === "") return [];
  return text.split(";").map((g) => {
    const [id = "", leaseAt = "-", delay = "0", at = "0", flag, slack] = g.split(",");
    let grant: FleetGrant = { id, leased: leaseAt !== "-", delayMs: Number(delay), at: Number(at) };
    // Granted during a cool-down: held until released (queue.lua, 'cg').
    if (flag === "c") grant = { ...grant, cooling: true };
    // Its bucket units' slot starts this much past `at` (a script that sends none: no slack).
    const slackMs = slackOf(slack);
    return slackMs === undefined ? grant : { ...grant, slackMs };
  });
}

/** Backoff before subscribing again after the subscriber connection failed to open. */
const RESUBSCRIBE_MS = 250;

/**
 * Opens a fleet queue on a RedisStore's connection (see {@link RedisFleetQueue}). Where owners
 * are alive by subscription, it resolves at once and subscribes meanwhile (F2: a process's
 * first jobs reached the queue only once its subscriber connection opened, 100-130 ms after
 * `schedule`, so later jobs of processes already open went first); elsewhere (a Cluster, alive
 * by heartbeats, where a PUBLISH to a channel nobody hears yet is lost) once subscribed.
 */
export async function openRedisFleetQueue(parts: StoreParts, config: FleetQueueConfig): Promise<FleetQueue> {
  const queue = new RedisFleetQueue(parts, config);
  if (config.liveness !== "subscription" || parts.commands.cluster) await queue.start();
  // Begun once the first call has gone out (its caller's continuation runs first): the new
  // connection's setup does not delay it. (Given up only when closed or its client ended.)
  else setImmediate(() => void queue.start().catch(() => {}));
  return queue;
}

/** A throttle's queue in Redis, as one process (its owner) sees it. */
export class RedisFleetQueue implements FleetQueue {
  readonly owner = globalThis.crypto.randomUUID().replace(/-/g, "").slice(0, 16);
  readonly #parts: StoreParts;
  readonly #config: FleetQueueConfig;
  readonly #seed: number;
  readonly #rate: { text: string; infix: string } | undefined;
  readonly #slots: { text: string; infix: string } | undefined;
  readonly #queueInfix: string;
  readonly #channel: string;
  #subscription: Subscription | undefined;
  /** The subscription under way (its connection opening), until it is live. */
  #subscribing: Promise<void> | undefined;
  /** True once this owner's channel is heard (calls before it say so: queue.lua keeps their grants). */
  #heard = false;
  #closed = false;
  /**
   * Tickets enqueued before the channel was heard and not yet seen granted, by key (full id →
   * the enqueue's args): sent again as 'a' once it is heard, which hands back their grants kept
   * meanwhile and this owner's wake-up.
   */
  readonly #unheard = new Map<string, Map<string, [string, string, string]>>();
  /** Calls made before the channel was heard, still under way (their replies' grants are heard). */
  readonly #early = new Set<Promise<unknown>>();
  #lost = false;
  #ended = false;
  /** Owners are alive while subscribed (a standalone server, asked for it) ... */
  readonly #bySubscription: boolean;

  constructor(parts: StoreParts, config: FleetQueueConfig) {
    this.#parts = parts;
    this.#config = config;
    const { rate, concurrency } = config;
    const tagId = rate?.id ?? concurrency?.id ?? "";
    this.#seed = tagSeed(tagId);
    this.#rate = rate === undefined ? undefined : ruleParts(parts, rate.id, rate.specs);
    this.#slots = concurrency === undefined ? undefined : ruleParts(parts, concurrency.id, [concurrency.spec]);
    this.#queueInfix = ruleDigest(`queue:${tagId}`, "");
    this.#channel = `${parts.prefix}queue:`;
    // PUBSUB NUMSUB sees one node's subscribers: a Cluster keeps heartbeats.
    this.#bySubscription = config.liveness === "subscription" && !parts.commands.cluster;
  }

  /**
   * Owners are alive while subscribed (a standalone server, asked for it): no heartbeats. False
   * while the subscription opens: alive by the deadline each call sets meanwhile (queue.lua 'p').
   */
  get heartbeatless(): boolean {
    return this.#bySubscription && this.#heard;
  }

  /** True once the client this store was given has ended for good (its subscription closed with it). */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Subscribes to this owner's channel: grants and wake-ups made by other processes' calls. Where
   * owners are alive by subscription, a failed attempt is tried again (calls go on meanwhile);
   * resolves once it is live (or, there, once it was given up: closed, the client ended).
   */
  start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#subscribing ??= this.#subscribe().finally(() => {
      this.#subscribing = undefined;
    });
    return this.#subscribing;
  }

  async #subscribe(): Promise<void> {
    for (;;) {
      try {
        const s = await this.#open();
        if (this.#closed) {
          await s.close();
          return;
        }
        this.#subscription = s;
        break;
      } catch (error) {
        if (!this.#bySubscription) throw error;
        if (this.#closed || this.#ended) return;
        await new Promise((r) => setTimeout(r, RESUBSCRIBE_MS).unref());
        if (this.#closed || this.#ended) return;
      }
    }
    this.#heard = true;
    // What was enqueued before: grants kept meanwhile, and this owner's wake-up, come back now,
    // once the calls made before have answered (a grant in their reply is heard: not asked for).
    await Promise.allSettled([...this.#early]);
    const unheard = [...this.#unheard];
    this.#unheard.clear();
    for (const [key, tickets] of unheard) {
      const args = [...tickets.values()].flat();
      if (args.length > 0) this.#call(key, "a", args).catch(() => this.#config.listener.relinked());
    }
  }

  #open(): Promise<Subscription> {
    const listener = this.#config.listener;
    return this.#parts.commands.subscribe(
      this.#channel + this.owner,
      (message) => {
        let m: { k: string; g?: string; w?: number; z?: number; u?: number; f?: number };
        try {
          m = JSON.parse(message) as typeof m;
        } catch {
          return;
        }
        const key = keyOfWire(m.k);
        if (m.z !== undefined && m.u !== undefined) listener.paused?.(key, m.z, m.u);
        if (m.g !== undefined) listener.granted(key, this.#mine(parseGrants(m.g), key));
        if (m.w !== undefined) listener.wake(key, m.w);
        // The cool-down's job ended: a late start refused during it asks again now (queue.lua, 'cw').
        if (m.f !== undefined) listener.coolFreed?.(key);
      },
      (live) => {
        if (!live) this.#lost = true;
        else if (this.#lost) {
          this.#lost = false;
          listener.relinked();
        }
      },
      () => {
        this.#ended = true;
      },
    );
  }

  #keys(key: string): string[] {
    const head = `${this.#parts.prefix}{${hashTag(this.#seed, key)}}`;
    const q = head + this.#queueInfix;
    // The user key as every record key ends (keys.ts): the rate and concurrency records are the
    // limiters' own, by the same name, and distinct keys keep distinct queues.
    const tail = recordKeyOf(key);
    return [
      `${q}Q${tail}`,
      `${q}H${tail}`,
      // No rate: a key of the queue's own that nothing writes (the script needs four keys).
      this.#rate === undefined ? `${q}R${tail}` : head + this.#rate.infix + tail,
      this.#slots === undefined ? `${q}C${tail}` : head + this.#slots.infix + tail,
      `${q}P${tail}`,
    ];
  }

  /** One call of the queue script; grants for this owner and its wake-up go to the listener. */
  async #call(key: string, op: string, args: string[]): Promise<string> {
    const { commands } = this.#parts;
    const keys = this.#keys(key);
    const argv = [
      "",
      "0",
      op,
      this.#channel,
      this.owner,
      `${this.#config.ownerTtlMs}${this.#bySubscription ? (this.#heard ? "s" : "p") : ""}`,
      this.#rate?.text ?? "",
      this.#slots?.text ?? "",
      wireKey(key),
      String(this.#config.lookaheadMs ?? 0),
      ...args,
    ];
    const script = queueScript();
    const send = async (): Promise<unknown> => {
      try {
        return await commands.evalsha(script.sha, keys, argv);
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith("NOSCRIPT"))) throw error;
        return await commands.eval(script.source, keys, argv);
      }
    };
    // Bounded like every other call to Redis, by the same wrapper and the store's `timeoutMs`
    // (../remote/exchange.ts): a client may never answer a command that was in flight when its
    // connection dropped (ioredis with autoResendUnfulfilledCommands: false and
    // maxRetriesPerRequest: null drops it unsettled on reconnect), and a call that never
    // settles would leave its job's release, its ticket's retry or its key's wake-up pending
    // forever (close() never resolving; a key nobody pumps). Every op may be sent again (a
    // ticket keeps its place or its grant), so a call that ran after all is harmless.
    const sent = boundedCall(send(), this.#parts.timeoutMs, "Redis (fleet queue)");
    if (!this.#heard && this.#bySubscription) {
      this.#early.add(sent);
      const done = () => this.#early.delete(sent);
      sent.then(done, done);
    }
    const reply = await sent;
    const { status, wait, grants } = parseReply(reply);
    const listener = this.#config.listener;
    if (grants.length > 0) listener.granted(key, this.#mine(grants, key));
    if (wait !== undefined) listener.wake(key, wait);
    else listener.unwake?.(key);
    return status;
  }

  /** A ticket's id in the store: unique in the fleet. */
  #full(id: string): string {
    return `${this.owner}.${id}`;
  }

  /** Grants with the owner's part of their ids taken off (no longer sent again as 'a'). */
  #mine(grants: FleetGrant[], key: string): FleetGrant[] {
    const cut = this.owner.length + 1;
    const unheard = this.#unheard.get(key);
    if (unheard !== undefined) {
      for (const g of grants) unheard.delete(g.id);
      if (unheard.size === 0) this.#unheard.delete(key);
    }
    return grants.map((g) => ({ ...g, id: g.id.slice(cut) }));
  }

  async enqueue(key: string, tickets: readonly FleetTicket[], resent = false): Promise<boolean> {
    const args: string[] = [];
    for (const t of tickets) {
      const cost = t.penalty === undefined || t.penalty <= 0 ? String(t.cost) : `${t.cost}+${t.penalty}`;
      const ticket: [string, string, string] = [this.#full(t.id), `${t.priority}${t.front === true ? "f" : ""}`, cost];
      args.push(...ticket);
      if (!this.#heard && this.#bySubscription) {
        let unheard = this.#unheard.get(key);
        if (unheard === undefined) this.#unheard.set(key, (unheard = new Map()));
        unheard.set(ticket[0], ticket);
      }
    }
    return (await this.#call(key, resent ? "E" : "e", args)) === "1";
  }

  async cancel(key: string, id: string): Promise<"removed" | "returned" | "unknown"> {
    this.#unheard.get(key)?.delete(this.#full(id));
    const status = await this.#call(key, "c", [this.#full(id)]);
    return status === "1" ? "removed" : status === "2" ? "returned" : "unknown";
  }

  async release(key: string, id: string, refund: boolean): Promise<void> {
    await this.#call(key, "r", [this.#full(id), refund ? "1" : "0"]);
  }

  async renew(key: string, id: string): Promise<boolean> {
    return (await this.#call(key, "n", [this.#full(id)])) === "1";
  }

  async restamp(key: string, id: string, cost: number, at: number | undefined): Promise<Restamped> {
    return restampedOf(await this.#call(key, "m", [this.#full(id), String(cost), at === undefined ? "-" : String(at)]));
  }

  async heartbeat(key: string): Promise<boolean> {
    return (await this.#call(key, "h", [])) === "1";
  }

  async pump(key: string): Promise<void> {
    await this.#call(key, "p", []);
  }

  async pause(key: string, ms: number): Promise<{ until: number; already: boolean }> {
    const [until = "", already] = (await this.#call(key, "z", [String(Math.ceil(ms))])).split(",");
    return { until: Number(until), already: already === "1" };
  }

  async leave(key: string): Promise<void> {
    await this.#call(key, "l", []);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unheard.clear();
    await this.#subscribing?.catch(() => {});
    const s = this.#subscription;
    this.#subscription = undefined;
    await s?.close();
  }

  /** @internal The Cluster slot of `key`'s queue (all its keys share it). */
  slotOf(key: string): number {
    return slotOf(hashTag(this.#seed, key));
  }
}
