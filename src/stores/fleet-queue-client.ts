/**
 * An owner's end of a fleet queue kept by a host (fleet-queue-host.ts): each FleetQueue call is
 * one message answered by one reply; grants decided outside this owner's calls arrive pushed.
 * The transport (IPC to the node:cluster primary, a BroadcastChannel between threads) hears
 * messages only while the queue is open or a call waits, so a closed queue's process or thread
 * is free to exit.
 *
 * A transport whose host can change (`rejoins`: ClusterStore's socket host, re-elected after a
 * crash) opens the queue again at the new host when the old one is lost: calls wait for it, the
 * owner reports the grants it still holds (its running jobs' leases, and the rate units of the
 * last rate period), and the throttle is told to send its waiting tickets again (`relinked`).
 */
import { systemClock } from "../core/clock.ts";
import { StoreError } from "../core/errors.ts";
import {
  coolDownEnd,
  type FleetGrant,
  type FleetQueue,
  type FleetQueueConfig,
  type FleetTicket,
  type Restamped,
  rateMemoryMs,
  restampedOf,
} from "../core/fleet-queue.ts";
import {
  type HeldGrant,
  isQueueMessage,
  PAUSE_ARG,
  type PausedKey,
  QUEUE_CHANNEL,
  type QueueCall,
  type QueuePush,
  type QueueReply,
  RESTAMP_ARG,
  type WireGrant,
} from "./fleet-queue-host.ts";

/** Pause between attempts to open the queue again at a new host. */
const REJOIN_RETRY_MS = 100;

/** How an owner reaches its host. */
export interface QueueTransport {
  /** Names the host in error messages. */
  readonly peer: string;
  /** A sequence number unique among the host's callers. */
  sequence(): number;
  /** Sends `call`; `failed` hears why it could not be sent. */
  send(call: QueueCall, failed: (error: StoreError) => void): void;
  /**
   * Starts hearing replies and pushes (`lost`: the host is gone: for good, or until another is
   * reached when `rejoins`); returns what stops it.
   */
  listen(hear: (message: unknown) => void, lost: () => void): () => void;
  /** A lost host may be followed by another (the next call reaches it): open the queue there. */
  readonly rejoins?: boolean;
}

/** A grant this owner holds: what a new host needs to take its slot and units back. */
interface Held {
  readonly leased: boolean;
  readonly cost: number;
  /** Its rate units' instant (undefined: none; moved by a late start's restamp). */
  at: number | undefined;
  /** Its lease's receipt at the host (its last renewal), when the host said. */
  leaseAt?: number | undefined;
}

/** Opens a fleet queue at the transport's host; calls fail after `timeoutMs`. */
export async function openHostedFleetQueue(
  transport: QueueTransport,
  config: FleetQueueConfig,
  timeoutMs: number,
): Promise<FleetQueue> {
  const queue = new HostedFleetQueue(transport, config, timeoutMs);
  await queue.start();
  return queue;
}

/** A throttle's queue kept by a host, as one owner sees it. */
export class HostedFleetQueue implements FleetQueue {
  #owner = "";
  readonly #transport: QueueTransport;
  readonly #config: FleetQueueConfig;
  readonly #timeoutMs: number;
  readonly #waiting = new Map<number, { settle: (r: QueueReply) => void; fail: (e: StoreError) => void }>();
  #open = false;
  /** Stops hearing, while listening. */
  #unlisten: (() => void) | undefined;
  /** Settles once the queue is open at the current host (calls wait for it after a host is lost). */
  #ready: Promise<void> = Promise.resolve();
  /** Counts rejoins (an attempt of an older one stops). */
  #epoch = 0;
  /** With a transport that rejoins: waiting tickets' costs, and the grants held, by key and id. */
  readonly #costs = new Map<string, Map<string, number>>();
  readonly #held = new Map<string, Map<string, Held>>();
  readonly #memoryMs: number;
  /** With a transport that rejoins: the fleet pauses heard, by key: their end and their cool-down's on this clock. */
  readonly #pauses = new Map<string, { end: number; cool: number }>();
  /** With a transport that rejoins: by key, the id of this owner's grant holding the cool-down (granted `cooling`). */
  readonly #cooling = new Map<string, string>();

  constructor(transport: QueueTransport, config: FleetQueueConfig, timeoutMs: number) {
    this.#transport = transport;
    this.#config = config;
    this.#timeoutMs = timeoutMs;
    this.#memoryMs = rateMemoryMs(config.rate?.specs);
  }

  /** This owner's id at the host. */
  get owner(): string {
    return this.#owner;
  }

  /** Registers this owner with the host. */
  async start(): Promise<void> {
    this.#open = true;
    try {
      this.#owner = (await this.#send("o", "", [], this.#rules())).status;
    } catch (error) {
      this.#open = false;
      this.#listen();
      throw error;
    }
  }

  #rules(): NonNullable<QueueCall["rules"]> {
    const { rate, concurrency, ownerTtlMs, lookaheadMs = 0 } = this.#config;
    return {
      rate: rate === undefined ? null : { id: rate.id, specs: rate.specs },
      concurrency: concurrency === undefined ? null : { id: concurrency.id, spec: concurrency.spec },
      ownerTtlMs,
      lookaheadMs,
    };
  }

  /**
   * The host was lost and another may follow: open again there (calls wait meanwhile), bringing
   * the grants still held, then have the throttle send its waiting tickets again.
   */
  #rejoin(): void {
    // A host lost again while rejoining: the newest rejoin alone goes on (one owner per host).
    const epoch = ++this.#epoch;
    this.#ready = new Promise<void>((done) => {
      const attempt = () => {
        if (!this.#open || epoch !== this.#epoch) return done();
        this.#send("o", "", [], this.#rules(), this.#heldList(), this.#pausedList()).then(
          (reply) => {
            if (epoch !== this.#epoch) return done();
            this.#owner = reply.status;
            done();
            this.#config.listener.relinked();
          },
          () => setTimeout(attempt, REJOIN_RETRY_MS),
        );
      };
      attempt();
    });
  }

  /** The grants to bring to a new host (rate-only ones while their units still count). */
  #heldList(): HeldGrant[] {
    const list: HeldGrant[] = [];
    const now = systemClock.now();
    for (const [key, grants] of this.#held) {
      for (const [id, g] of grants) {
        if (!g.leased && (g.at === undefined || g.at + this.#memoryMs <= now)) grants.delete(id);
        else if (g.leased && g.leaseAt !== undefined) list.push([key, id, 1, g.cost, g.at ?? null, g.leaseAt]);
        else list.push([key, id, g.leased ? 1 : 0, g.cost, g.at ?? null]);
      }
      if (grants.size === 0) this.#held.delete(key);
    }
    return list;
  }

  /**
   * A fleet pause heard (made here or pushed): kept to bring it to a new host. `latest`: it
   * replaces a longer one (the host's latest word); its cool-down is only ever extended.
   */
  #pausedFor(key: string, ms: number, latest = false): void {
    if (this.#transport.rejoins !== true) return;
    const now = systemClock.now();
    const p = this.#pauses.get(key);
    const end = latest || p === undefined ? now + ms : Math.max(p.end, now + ms);
    this.#pauses.set(key, { end, cool: Math.max(p?.cool ?? 0, coolDownEnd(now, ms)) });
  }

  /** The pauses and cool-downs still running, for a new host (the lost one's memory of them is gone). */
  #pausedList(): PausedKey[] {
    const now = systemClock.now();
    const list: PausedKey[] = [];
    for (const [key, { end, cool }] of this.#pauses) {
      const coolId = this.#cooling.get(key);
      if (cool <= now) {
        this.#pauses.delete(key);
        this.#cooling.delete(key);
      } else if (coolId !== undefined) list.push([key, Math.max(0, end - now), cool - now, coolId]);
      else list.push([key, Math.max(0, end - now), cool - now]);
    }
    return list;
  }

  /** Grants reach the throttle through here (and are remembered when the host can change). */
  #granted(key: string, grants: readonly FleetGrant[]): void {
    if (this.#transport.rejoins === true) {
      const costs = this.#costs.get(key);
      let held = this.#held.get(key);
      if (held === undefined) this.#held.set(key, (held = new Map()));
      const now = systemClock.now();
      for (const g of grants) {
        // The cool-down's running job: a new host must count it until it is released.
        if (g.cooling === true) this.#cooling.set(key, g.id);
        const cost = costs?.get(g.id) ?? 1;
        costs?.delete(g.id);
        // A rate-only grant is never released: it is kept while its units count (pruned as others come).
        const rated = this.#config.rate !== undefined;
        const leaseAt = (g as WireGrant).leaseAt;
        if (g.leased || rated) held.set(g.id, { leased: g.leased, cost, at: rated ? g.at : undefined, leaseAt });
      }
      if (costs?.size === 0) this.#costs.delete(key);
      for (const [id, g] of held) {
        if (held.size <= 64) break;
        if (!g.leased && (g.at === undefined || g.at + this.#memoryMs <= now)) held.delete(id);
      }
    }
    this.#config.listener.granted(key, grants);
  }

  /**
   * A grant given back (`refund`: with its rate units): a new host need not know it; without
   * the refund its rate units still count while the rate remembers them.
   */
  #forget(key: string, id: string, refund = true): void {
    if (this.#cooling.get(key) === id) this.#cooling.delete(key);
    const held = this.#held.get(key);
    const g = held?.get(id);
    if (!refund && g !== undefined && g.at !== undefined) held?.set(id, { leased: false, cost: g.cost, at: g.at });
    else if (held?.delete(id) && held.size === 0) this.#held.delete(key);
    const costs = this.#costs.get(key);
    if (costs?.delete(id) && costs.size === 0) this.#costs.delete(key);
  }

  readonly #hear = (message: unknown): void => {
    if (isQueueMessage<QueueReply>(message, "queue-reply")) {
      const w = this.#waiting.get(message.seq);
      if (w === undefined) return; // another owner's, or answered after its timeout
      this.#waiting.delete(message.seq);
      this.#listen();
      if (message.error !== undefined) w.fail(new StoreError(`${this.#transport.peer}: ${message.error}`));
      else w.settle(message);
    } else if (isQueueMessage<QueuePush>(message, "queue-push") && message.owner === this.#owner) {
      if (message.pause !== undefined) {
        this.#pausedFor(message.key, message.pause.ms);
        this.#config.listener.paused?.(message.key, message.pause.ms, message.pause.until);
      }
      if (message.grants.length > 0) this.#granted(message.key, message.grants);
      if (message.coolFree === true) this.#config.listener.coolFreed?.(message.key);
    }
  };

  readonly #lost = (): void => {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    const rejoin = this.#transport.rejoins === true && this.#open;
    if (!rejoin) this.#open = false;
    this.#listen();
    for (const w of all) w.fail(new StoreError(`${this.#transport.peer} is gone`));
    if (rejoin) this.#rejoin();
  };

  /** Hears messages while the queue is open or a call waits. */
  #listen(): void {
    const want = this.#open || this.#waiting.size > 0;
    if (want === (this.#unlisten !== undefined)) return;
    if (want) this.#unlisten = this.#transport.listen(this.#hear, this.#lost);
    else {
      this.#unlisten?.();
      this.#unlisten = undefined;
    }
  }

  /** One call, once the queue is open at the current host. */
  async #call(op: QueueCall["op"], key: string, args: (string | number)[]): Promise<QueueReply> {
    await this.#ready;
    return this.#send(op, key, args);
  }

  /** Sends one call; the caller's grants in the reply go to the listener. */
  #send(
    op: QueueCall["op"],
    key: string,
    args: (string | number)[],
    rules?: QueueCall["rules"],
    held?: HeldGrant[],
    paused?: PausedKey[],
  ): Promise<QueueReply> {
    const seq = this.#transport.sequence();
    let call: QueueCall = { channel: QUEUE_CHANNEL, type: "queue", seq, owner: this.#owner, op, key, args };
    if (rules !== undefined) call = { ...call, rules };
    if (held !== undefined) call = { ...call, held };
    if (paused !== undefined && paused.length > 0) call = { ...call, paused };
    return new Promise<QueueReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!this.#waiting.delete(seq)) return;
        this.#listen();
        reject(
          new StoreError(`${this.#transport.peer} did not answer a fleet queue call within ${this.#timeoutMs} ms`),
        );
      }, this.#timeoutMs);
      this.#waiting.set(seq, {
        settle: (r) => {
          clearTimeout(timer);
          if (r.grants.length > 0) this.#granted(r.key, r.grants);
          resolve(r);
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#listen();
      this.#transport.send(call, (error) => {
        const w = this.#waiting.get(seq);
        if (w === undefined) return;
        this.#waiting.delete(seq);
        this.#listen();
        w.fail(error);
      });
    });
  }

  async enqueue(key: string, tickets: readonly FleetTicket[]): Promise<void> {
    const args: (string | number)[] = [];
    for (const t of tickets) {
      // The adaptive rate's penalty rides on the cost, as on Redis ("units+penalty").
      const cost = t.penalty === undefined || t.penalty <= 0 ? t.cost : `${t.cost}+${Math.ceil(t.penalty)}`;
      args.push(t.id, t.priority, cost, t.front === true ? 1 : 0);
    }
    if (this.#transport.rejoins === true) {
      let costs = this.#costs.get(key);
      if (costs === undefined) this.#costs.set(key, (costs = new Map()));
      for (const t of tickets) costs.set(t.id, t.cost);
    }
    await this.#call("e", key, args);
  }

  async cancel(key: string, id: string): Promise<"removed" | "returned" | "unknown"> {
    this.#forget(key, id);
    const { status } = await this.#call("c", key, [id]);
    return status === "1" ? "removed" : status === "2" ? "returned" : "unknown";
  }

  async release(key: string, id: string, refund: boolean): Promise<void> {
    // Forgotten at once: if this call is lost with its host, the job has ended all the same.
    this.#forget(key, id, refund);
    await this.#call("r", key, [id, refund ? 1 : 0]);
  }

  async renew(key: string, id: string): Promise<boolean> {
    const reply = await this.#call("n", key, [id]);
    const held = this.#held.get(key)?.get(id);
    if (held !== undefined && reply.leaseAt !== undefined) held.leaseAt = reply.leaseAt;
    return reply.status === "1";
  }

  async heartbeat(key: string): Promise<boolean> {
    return (await this.#call("h", key, [])).status === "1";
  }

  /** The host grants at the due instant itself; a pump is a heartbeat (it grants what fits). */
  async pump(key: string): Promise<void> {
    await this.#call("h", key, []);
  }

  async pause(key: string, ms: number): Promise<{ until: number; already: boolean }> {
    const whole = Math.ceil(ms);
    const [until = "", already] = (await this.#call("h", key, [PAUSE_ARG, whole])).status.split(",");
    // The latest word wins at the host: so here (a shorter pause replaces a longer one).
    this.#pausedFor(key, whole, true);
    return { until: Number(until), already: already === "1" };
  }

  async restamp(key: string, id: string, cost: number, at: number | undefined): Promise<Restamped> {
    const moved = restampedOf((await this.#call("h", key, [RESTAMP_ARG, id, cost, at ?? "-"])).status);
    // A new host hears where the units are now.
    const held = this.#held.get(key)?.get(id);
    if ("at" in moved && held !== undefined && held.at !== undefined) held.at = moved.at;
    if ("at" in moved && moved.cooling === true && this.#transport.rejoins === true) this.#cooling.set(key, id);
    return moved;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    try {
      await this.#call("x", "", []);
    } finally {
      this.#listen();
    }
  }
}
