/**
 * A fleet queue kept by one process or thread for every other (SPEC §16): the node:cluster
 * primary for ClusterStore's workers (cluster/queue-client.ts, over IPC), the store's creating
 * thread for SharedMemoryStore's threads (threads/queue-channel.ts, over a BroadcastChannel).
 * Per (throttle, key) one queue of tickets from every owner, in priority then arrival order,
 * granted in one synchronous step with the limiter's own rule code: `check` on the store's
 * bindings of the throttle's rate rule (the same record the owners' rate limiter checks, so a
 * fleet pause's block holds it) and of its concurrency rule (whose leases the runner renews and
 * releases). The semantics are queue.lua's; only the bookkeeping lives here. Grants go to their
 * owner as a message (in the reply to its call, or pushed); a head that must wait for the rate
 * or a lease's expiry is granted by the host's own timer at that instant: nobody polls. An
 * owner that is gone (`disconnect`) loses its tickets and gives back its grants' slots at once;
 * one whose heartbeat stopped loses its tickets when they reach the head.
 *
 * A host can change (ClusterStore's socket host re-elected after a crash): owners then open again
 * at the new host with the grants they still hold (`held`). The new host takes those grants'
 * slots and rate units back (forced, at the takeover instant: never earlier than they were
 * taken, so it may run below the rate for a period, never above), and grants nothing for a
 * grace of min(ownerTtlMs, 1 s) after the first such open, while the other owners come back
 * with theirs: more than `concurrency` never run. Tickets whose grant was lost with the old host
 * were never heard by their owner, which sends them again: no job runs twice. The old host's own
 * process may have run jobs too (ClusterStore's socket host is a worker like the others), whose
 * rate units nobody can report: a new host on empty records seeds each key's rate full at the
 * takeover instant (once per key, for one rate period), so the fleet waits out one period rather
 * than risk a window over the rate. A fleet pause dies with its host's memory: every owner heard
 * it, keeps its end, and reports what is left of it and of its cool-down when it opens again
 * (`paused`), with the cool-down's running job when it holds it (so the new host starts no other
 * during it).
 *
 * After a pause the key cools down (the rule of `coolDownEnd`, as queue.lua): one job at a time,
 * the grant made during a cool-down held (`cooling` on the wire) until its owner releases it.
 */
import type { Decision } from "../algorithms/decision.ts";
import { after, type Clock, systemClock } from "../core/clock.ts";
import type { Operation } from "../core/decide-rule.ts";
import {
  COOL_FALLBACK_MS,
  chargeCoolDownBurst,
  coolDownEnd,
  type FleetGrant,
  rateMemoryMs,
} from "../core/fleet-queue.ts";
import { compileRule } from "../core/rule.ts";
import { type AlgorithmSpec, specLimit, validateSpec } from "../core/spec.ts";
import type { BoundRule, RuleBinding } from "../core/store.ts";
import { slotSlackMs } from "../core/unit-slot.ts";

/** Marks fleet-queue messages among whatever else travels on the same channel. */
export const QUEUE_CHANNEL = "sluice:queue";

/** What a queue decides with: the rate limiter's rule and the concurrency rule (ids and specs). */
export interface QueueRules {
  readonly rate: { readonly id: string; readonly specs: readonly AlgorithmSpec[] } | null;
  readonly concurrency: { readonly id: string; readonly spec: AlgorithmSpec } | null;
  readonly ownerTtlMs: number;
  /** Grants a ticket whose rate units are due within this many ms at once (FleetQueueConfig.lookaheadMs). */
  readonly lookaheadMs?: number;
}

/**
 * A grant an owner held at a host that is gone, reported to the new one: key, ticket id, leased
 * (1) or not (0), cost, the rate units' instant (null: no rate units), and the lease's receipt
 * when the owner knows it (a host on shared records finds the lease there by it).
 */
export type HeldGrant =
  | readonly [key: string, id: string, leased: 0 | 1, cost: number, rateAt: number | null]
  | readonly [key: string, id: string, leased: 0 | 1, cost: number, rateAt: number | null, leaseAt: number];

/** A grant on the wire: with its lease's receipt (the owner keeps it for a new host). */
export interface WireGrant extends FleetGrant {
  readonly leaseAt?: number;
}

/**
 * A late start's move refused for at most this long (ms) takes its units at the instant they
 * free instead, ahead of the queue (queue.lua's NEXT_MS, the longest a grant ahead is made).
 */
const RESTAMP_AHEAD_MS = 250;

/** How long a new host grants nothing after an owner came back from a lost one (at most). */
export const REJOIN_GRACE_MS = 1000;

/**
 * An owner's call: "o" open (`rules`, and `held` when it comes back from a lost host; the reply's
 * status is the owner's id), "e" enqueue
 * (args: id, priority, cost, front 0|1, repeated; a cost with a penalty is the text
 * "units+penalty", as queue.lua reads it), "c" cancel (id), "r" release (id, refund
 * 0|1), "n" renew (id), "h" heartbeat, "x" close (the owner's waiting tickets leave).
 * "h" with args `["pause", ms]` is a fleet pause (queue.lua's op 'z'): nothing of the key is
 * granted until now + ms, every other owner of the queue hears it at once (a push with
 * `pause`), and the status is "until,1" when the key was paused already, else "until,0". (It
 * rides on "h", whose args any host's frame check lets through: a separate op would be refused
 * by a ClusterStore socket host's check of the op names, cluster/validate.ts.)
 */
export interface QueueCall {
  readonly channel: typeof QUEUE_CHANNEL;
  readonly type: "queue";
  /** Unique among the host's callers; the reply carries it back. */
  readonly seq: number;
  /** The owner's id (from "o"'s reply); "" for "o". */
  readonly owner: string;
  readonly op: "o" | "e" | "c" | "r" | "n" | "h" | "x";
  readonly key: string;
  readonly args: readonly (string | number)[];
  readonly rules?: QueueRules;
  /** With "o": the owner held these grants at a host that is gone (present, even empty: a rejoin). */
  readonly held?: readonly HeldGrant[];
  /** With a rejoin's "o": the fleet pauses the owner heard, as [key, ms still to run]. */
  readonly paused?: readonly PausedKey[];
}

/**
 * A fleet pause an owner reports to a new host: the key, the ms still to run (0: over), the ms its
 * cool-down still runs (absent: as long as the pause, from an owner that keeps no cool-down), and
 * the id of the cool-down's running job when this owner holds it (its grant `cooling`): the new
 * host counts it as running until it is released, as the lost host did.
 */
export type PausedKey =
  | readonly [key: string, ms: number]
  | readonly [key: string, ms: number, coolMs: number]
  | readonly [key: string, ms: number, coolMs: number, coolId: string];

/** The host's answer to a call: a status and the caller's grants it decided in that step. */
export interface QueueReply {
  readonly channel: typeof QUEUE_CHANNEL;
  readonly type: "queue-reply";
  readonly seq: number;
  readonly status: string;
  readonly key: string;
  readonly grants: readonly FleetGrant[];
  readonly error?: string;
  /** A renewal's new lease receipt. */
  readonly leaseAt?: number;
}

/** Grants the host decided for `owner` outside its calls (or another owner's fleet pause of the key). */
export interface QueuePush {
  readonly channel: typeof QUEUE_CHANNEL;
  readonly type: "queue-push";
  readonly owner: string;
  readonly key: string;
  readonly grants: readonly FleetGrant[];
  /** The key is paused for the fleet for `ms` more, until `until` (the host's clock, as grants' `at`). */
  readonly pause?: { readonly ms: number; readonly until: number };
  /** The key's cool-down is free (its job ended, or the cool-down did): a late start refused during it asks again. */
  readonly coolFree?: true;
}

/** The args of an "h" call that pauses its key for the fleet. */
export const PAUSE_ARG = "pause";

/**
 * The first arg of an "h" call that moves a late start's rate units (id, cost, at or "-"):
 * queue.lua's op 'm'. Status "1,at,delayMs", or "0,waitMs" when refused (ask again then).
 */
export const RESTAMP_ARG = "restamp";

/** True when `message` is a fleet-queue message of `type`. */
export function isQueueMessage<T extends QueueCall | QueueReply | QueuePush>(
  message: unknown,
  type: T["type"],
): message is T {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { channel?: unknown }).channel === QUEUE_CHANNEL &&
    (message as { type?: unknown }).type === type
  );
}

/** A waiting ticket. */
interface Ticket {
  readonly id: string;
  readonly owner: string;
  readonly cost: number;
  /** Units spent as a penalty once granted (FleetTicket.penalty: the adaptive rate's burst-1 slowing). */
  readonly penalty: number;
  /** Priority, then arrival (a `front` ticket ahead of its priority's others): smaller first. */
  readonly score: number;
}

/** A granted ticket: what giving it back undoes. */
interface Grant {
  readonly owner: string;
  /** The lease's receipt (its last renewal), or undefined without concurrency. */
  leaseAt: number | undefined;
  /** The rate units' receipt (moved by a late start's restamp), or undefined without a rate. */
  rateAt: number | undefined;
  readonly cost: number;
}

/** One key's queue of one throttle. */
interface KeyQueue {
  readonly key: string;
  /** Sorted by score. */
  readonly tickets: Ticket[];
  readonly grants: Map<string, Grant>;
  /**
   * The latest instant a rate decision was made at (ahead of now, with the lookahead): later
   * decisions are made no earlier, so the key's rate record never sees time run back.
   */
  cursor: number;
  /** Cancels the armed grant at the head's due instant. */
  timer: (() => void) | undefined;
  /** A fleet pause: nothing is granted before this instant (0: none). */
  pausedUntil: number;
  /** Its cool-down's end (coolDownEnd): one job at a time before this instant (0: none). */
  coolUntil: number;
  /** The job granted during a cool-down that still runs (its full id and owner), if any. */
  coolGrant: { readonly id: string; readonly owner: string } | undefined;
  /** Owners whose late start was refused while `coolGrant` ran: told (`coolFree`) once it ends. */
  coolWaiters: Set<string> | undefined;
}

/** One throttle's queue (shared by the workers that open it with the same rules). */
interface Queue {
  readonly rate: BoundRule | undefined;
  /** The rate's specs as checked (for its units' slots: core/unit-slot.ts). */
  readonly rateSpecs: readonly AlgorithmSpec[] | undefined;
  readonly slots: BoundRule | undefined;
  readonly ownerTtlMs: number;
  readonly lookaheadMs: number;
  readonly keys: Map<string, KeyQueue>;
  seq: number;
  /** Nothing is granted before this instant (owners coming back from a lost host, see the head). */
  graceUntil: number;
  /** How long a grant's rate units count (rateMemoryMs of the rate's specs). */
  readonly memoryMs: number;
  /** The units that fill the rate's every spec (seeding a key after a takeover). */
  readonly fullCost: number;
  /** The takeover instant on empty records (0: none): keys are seeded full at it, see the head. */
  seedAt: number;
  /** Keys seeded since `seedAt` (cleared once a rate period has passed). */
  readonly seeded: Set<string>;
}

const PRIORITY = 2 ** 40;
const FRONT = 2 ** 39;

/** Sends a push to a caller (a worker's or thread's id; dropped if it is gone). */
export type SendTo = (caller: number, message: QueuePush) => void;

/** The store a host decides on: only its bindings are used. */
export interface HostStore {
  bind(binding: RuleBinding): BoundRule;
}

/** How a host's records relate to a previous host's. */
export interface QueueHostOptions {
  /**
   * The records outlive the host (SharedMemoryStore's shared memory): a host that takes over
   * finds every lease and rate unit the old one took, so owners coming back bring only their
   * grants' receipts, and nothing is forced or held back. Default false (ClusterStore's socket
   * host starts with an empty MemoryStore).
   */
  readonly sharedRecords?: boolean;
}

/** The fleet queues one host keeps. */
export class QueueHost {
  readonly #store: HostStore;
  readonly #send: SendTo;
  readonly #clock: Clock;
  readonly #queues = new Map<string, Queue>();
  /** Owner id → its queue, caller (worker or thread) and heartbeat deadline. */
  readonly #owners = new Map<string, { queue: Queue; worker: number; until: number }>();
  readonly #sharedRecords: boolean;
  #next = 1;

  constructor(store: HostStore, send: SendTo, clock: Clock = systemClock, options: QueueHostOptions = {}) {
    this.#store = store;
    this.#send = send;
    this.#clock = clock;
    this.#sharedRecords = options.sharedRecords === true;
  }

  /** Answers `worker`'s call. */
  handle(worker: number, call: QueueCall): QueueReply {
    const mine: FleetGrant[] = [];
    let status = "1";
    try {
      if (call.op === "o") {
        status = this.#open(worker, call.rules as QueueRules, call.held, call.paused);
      } else {
        const owner = this.#owners.get(call.owner);
        if (owner === undefined || owner.worker !== worker) {
          return this.#reply(call, "0", [], `unknown fleet queue owner ${call.owner}`);
        }
        const now = this.#clock.now();
        const known = owner.until >= now;
        owner.until = now + owner.queue.ownerTtlMs;
        const kq = this.#keyQueue(owner.queue, call.key);
        status = this.#apply(owner.queue, kq, call, mine);
        // A heartbeat after a silence: its tickets may have left the queue, the owner sends them again.
        if (call.op === "h" && !known && call.args[0] !== PAUSE_ARG && call.args[0] !== RESTAMP_ARG) status = "0";
        this.#pump(owner.queue, kq, call.owner, mine);
      }
    } catch (error) {
      return this.#reply(call, "0", [], error instanceof Error ? error.message : String(error));
    }
    const reply = this.#reply(call, status, mine);
    if (call.op !== "n" || status !== "1") return reply;
    const leaseAt = this.#owners
      .get(call.owner)
      ?.queue.keys.get(call.key)
      ?.grants.get(`${call.owner}.${call.args[0]}`)?.leaseAt;
    return leaseAt === undefined ? reply : { ...reply, leaseAt };
  }

  #reply(call: QueueCall, status: string, grants: FleetGrant[], error?: string): QueueReply {
    const reply = {
      channel: QUEUE_CHANNEL,
      type: "queue-reply",
      seq: call.seq,
      status,
      key: call.key,
      grants,
    } as const;
    return error === undefined ? reply : { ...reply, error };
  }

  /** A worker's new owner on the queue of `rules` (bound once per distinct rules). */
  #open(
    worker: number,
    rules: QueueRules,
    held: readonly HeldGrant[] | undefined,
    paused: readonly PausedKey[] | undefined,
  ): string {
    const name = JSON.stringify([rules.rate, rules.concurrency, rules.lookaheadMs ?? 0]);
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      const bind = (id: string, specs: readonly unknown[]) =>
        this.#store.bind({ id, rule: compileRule(specs.map((s) => validateSpec(s))) });
      queue = {
        rate: rules.rate === null ? undefined : bind(rules.rate.id, rules.rate.specs),
        rateSpecs: rules.rate === null ? undefined : rules.rate.specs,
        slots: rules.concurrency === null ? undefined : bind(rules.concurrency.id, [rules.concurrency.spec]),
        ownerTtlMs: rules.ownerTtlMs,
        lookaheadMs: rules.lookaheadMs ?? 0,
        keys: new Map(),
        seq: 0,
        graceUntil: 0,
        memoryMs: rateMemoryMs(rules.rate?.specs),
        fullCost: fullCost(rules.rate?.specs),
        seedAt: 0,
        seeded: new Set(),
      };
      this.#queues.set(name, queue);
    }
    const id = `${worker}.${this.#next++}`;
    const now = this.#clock.now();
    this.#owners.set(id, { queue, worker, until: now + rules.ownerTtlMs });
    if (held !== undefined) this.#adopt(queue, id, held, now);
    for (const [key, ms, coolMs = coolDownEnd(0, ms), coolId] of paused ?? []) {
      // A pause the lost host made: it holds here until its end (the latest word still wins),
      // and its cool-down until its own, with its running job (this owner's: released by it, or
      // ended with it) still the one at a time.
      if (!(ms > 0) && !(coolMs > 0)) continue;
      const kq = this.#keyQueue(queue, key);
      if (ms > 0) kq.pausedUntil = Math.max(kq.pausedUntil, now + Math.ceil(ms));
      if (coolMs > 0) kq.coolUntil = Math.max(kq.coolUntil, now + Math.ceil(coolMs));
      if (typeof coolId === "string" && kq.coolUntil > now) kq.coolGrant = { id: `${id}.${coolId}`, owner: id };
    }
    return id;
  }

  /**
   * An owner back from a lost host: its running grants take their slots and rate units here
   * (forced: they run whatever this host decided meanwhile), and the queue grants nothing for a
   * grace, so every owner can bring its grants back before new ones are made.
   */
  #adopt(queue: Queue, owner: string, held: readonly HeldGrant[], now: number): void {
    if (this.#sharedRecords) {
      // The records hold the grants' leases and units already: only the bookkeeping comes back
      // (a lease whose receipt the owner does not know is left to expire: it is not renewed).
      for (const [key, id, leased, cost, rateAt, leaseAt] of held) {
        const g = { owner, leaseAt: leased === 1 ? leaseAt : undefined, rateAt: rateAt ?? undefined, cost };
        if (g.leaseAt !== undefined || g.rateAt !== undefined)
          this.#keyQueue(queue, key).grants.set(`${owner}.${id}`, g);
      }
      return;
    }
    if (queue.graceUntil === 0) queue.graceUntil = now + Math.min(queue.ownerTtlMs, REJOIN_GRACE_MS);
    // The lost host's own jobs' rate units are known to nobody: every key's rate starts full.
    if (queue.seedAt === 0 && queue.rate !== undefined && queue.memoryMs > 0) queue.seedAt = now;
    for (const [key, id, leased, cost, rateAt] of held) {
      const kq = this.#keyQueue(queue, key);
      let leaseAt: number | undefined;
      if (leased === 1 && queue.slots !== undefined) {
        this.#decide(queue.slots, key, 1, now, "penalty");
        leaseAt = now;
      }
      let at: number | undefined;
      if (rateAt !== null && queue.rate !== undefined && !queue.seeded.has(key)) {
        // At the takeover instant, not the old one: the record never sees time run back, and a
        // window never holds fewer of them than it did. (A seeded key is full already.)
        at = Math.max(now, kq.cursor);
        try {
          this.#decide(queue.rate, key, cost, at, "penalty");
        } catch {
          // An algorithm without `penalty` (leaky bucket): its units are not retaken.
        }
      }
      if (leaseAt !== undefined || at !== undefined) {
        kq.grants.set(`${owner}.${id}`, { owner, leaseAt, rateAt: at, cost });
      }
    }
  }

  #keyQueue(queue: Queue, key: string): KeyQueue {
    let kq = queue.keys.get(key);
    if (kq === undefined) {
      kq = {
        key,
        tickets: [],
        grants: new Map(),
        cursor: 0,
        timer: undefined,
        pausedUntil: 0,
        coolUntil: 0,
        coolGrant: undefined,
        coolWaiters: undefined,
      };
      queue.keys.set(key, kq);
    }
    if (queue.seedAt > 0 && !queue.seeded.has(key)) this.#seed(queue, kq);
    return kq;
  }

  /**
   * A key first touched within a rate period (and the lookahead) of a takeover on empty records: its rate is spent
   * in full at the takeover instant, so whatever the lost host granted in that period (its own
   * process's jobs included) cannot be granted again on top of it.
   */
  #seed(queue: Queue, kq: KeyQueue): void {
    const now = this.#clock.now();
    // (The lost host's units count for a rate period after the last instant it may have taken
    // them at: the takeover, plus its lookahead.)
    if (now >= queue.seedAt + queue.lookaheadMs + queue.memoryMs) {
      queue.seedAt = 0;
      queue.seeded.clear();
      return;
    }
    queue.seeded.add(kq.key);
    // At the takeover instant, and again at the end of the lookahead: the lost host may have
    // granted ahead, with units taken at instants up to lookaheadMs past the takeover.
    const instants = queue.lookaheadMs > 0 ? [queue.seedAt, queue.seedAt + queue.lookaheadMs] : [queue.seedAt];
    try {
      for (const instant of instants) {
        const at = Math.max(instant, kq.cursor);
        this.#decide(queue.rate as BoundRule, kq.key, queue.fullCost, at, "penalty");
        kq.cursor = at;
      }
    } catch {
      // An algorithm without `penalty` (leaky bucket): not seeded.
    }
  }

  /** The limiter's own decision on `rule`'s record (the path the dispatcher answers workers with). */
  #decide(rule: BoundRule, key: string, cost: number, now: number, op: Operation, at?: number): Decision {
    return rule.check(key, cost, now, op, at) as Decision;
  }

  /** The call's own effect; its status. */
  #apply(queue: Queue, kq: KeyQueue, call: QueueCall, mine: FleetGrant[]): string {
    const a = call.args;
    const full = (id: unknown) => `${call.owner}.${String(id)}`;
    switch (call.op) {
      case "e":
        for (let i = 0; i + 3 < a.length; i += 4) {
          const id = full(a[i]);
          const granted = kq.grants.get(id);
          if (granted !== undefined) {
            // Sent again: its owner never heard the grant (it sends only tickets still waiting).
            const at = granted.leaseAt ?? granted.rateAt ?? this.#clock.now();
            mine.push(this.#grantOf(id, granted, 0, at, kq.coolGrant?.id === id));
          } else if (!kq.tickets.some((t) => t.id === id)) {
            const seq = ++queue.seq;
            const score = Number(a[i + 1]) * PRIORITY + (a[i + 3] === 1 ? seq - FRONT : seq);
            const { cost, penalty } = costOf(a[i + 2]);
            insert(kq.tickets, { id, owner: call.owner, cost, penalty, score });
          }
        }
        return "1";
      case "c": {
        const id = full(a[0]);
        const at = kq.tickets.findIndex((t) => t.id === id);
        if (at >= 0) {
          kq.tickets.splice(at, 1);
          return "1";
        }
        return this.#giveBack(queue, kq, id, true) ? "2" : "0";
      }
      case "r":
        return this.#giveBack(queue, kq, full(a[0]), a[1] === 1) ? "1" : "0";
      case "n": {
        const g = kq.grants.get(full(a[0]));
        if (g === undefined) return "0";
        if (g.leaseAt === undefined || queue.slots === undefined) return "1";
        const now = this.#clock.now();
        if (!this.#decide(queue.slots, kq.key, 1, now, "renew", g.leaseAt).allowed) return "0";
        g.leaseAt = now;
        return "1";
      }
      case "x":
        for (let i = kq.tickets.length - 1; i >= 0; i--)
          if (kq.tickets[i]?.owner === call.owner) kq.tickets.splice(i, 1);
        for (const other of queue.keys.values()) {
          if (other === kq) continue;
          for (let i = other.tickets.length - 1; i >= 0; i--) {
            if (other.tickets[i]?.owner === call.owner) other.tickets.splice(i, 1);
          }
        }
        return "1";
      default:
        // "h": the owner is alive (its deadline moved above); with "pause", a fleet pause.
        if (a[0] === PAUSE_ARG) return this.#pause(queue, kq, call.owner, Number(a[1]));
        if (a[0] === RESTAMP_ARG) return this.#restamp(queue, kq, call.owner, full(a[1]), Number(a[2]), a[3]);
        return "1";
    }
  }

  /**
   * A granted job starts late: its units taken at `at` go back and `cost` are taken at the key's
   * latest decision instant (now, or the one granted ahead to: the record never sees time run
   * back), ahead of the queue (its turn came). See RESTAMP_ARG.
   */
  #restamp(
    queue: Queue,
    kq: KeyQueue,
    owner: string,
    id: string,
    cost: number,
    at: string | number | undefined,
  ): string {
    const now = this.#clock.now();
    if (queue.rate === undefined) return `1,${now},0`;
    if (typeof at === "number") this.#decide(queue.rate, kq.key, cost, now, "refund", at);
    if (kq.pausedUntil > now) return `0,${kq.pausedUntil - now}`;
    this.#coolDownEnded(queue, kq, now);
    // During a cool-down a late start is a start like a grant (queue.lua): it waits while another
    // job of the cool-down runs, and once it goes it is that job (",c": released when it ends).
    const cooling = now < kq.coolUntil;
    if (cooling && kq.coolGrant?.id !== id && this.#coolHeld(kq, now)) {
      // Told when the cool-down's job ends (a push), so the fallback wait can be long.
      if (kq.coolWaiters === undefined) kq.coolWaiters = new Set();
      kq.coolWaiters.add(owner);
      return `0,${Math.min(kq.coolUntil - now, COOL_FALLBACK_MS)}`;
    }
    let t = Math.max(now, kq.cursor);
    let d = this.#decide(queue.rate, kq.key, cost, t, "check");
    if (!d.allowed && d.retryAfterMs + (t - now) <= RESTAMP_AHEAD_MS) {
      // Its units free soon: taken at that instant, as a grant ahead (queue.lua): its turn came,
      // so no later ticket is granted before it, and it needs no second call (refused, it asked
      // again on its own timer while later tickets were granted: attack8 F2).
      t += Math.ceil(d.retryAfterMs);
      d = this.#decide(queue.rate, kq.key, cost, t, "check");
      if (d.allowed && t > kq.cursor) kq.cursor = t;
    }
    if (!d.allowed) return `0,${Number.isFinite(d.retryAfterMs) ? Math.ceil(d.retryAfterMs + (t - now)) : 60_000}`;
    const g = kq.grants.get(id);
    if (g !== undefined) g.rateAt = t;
    // The moved units' slot (core/unit-slot.ts), after a 4th field ("c" or empty): an older
    // client reads the first four as before.
    const slack = slotSlackMs(queue.rateSpecs, d, cost);
    const tail = slack > 0 ? `,${slack}` : "";
    if (!cooling) return `1,${t},${d.delayMs + (t - now)}${tail === "" ? "" : `,${tail}`}`;
    kq.coolGrant = { id, owner };
    return `1,${t},${d.delayMs + (t - now)},c${tail}`;
  }

  /**
   * Pauses `kq` for the fleet for `ms` (the latest word wins: an upstream may shorten its own
   * pause) and tells every other owner of the queue at once, so a job granted ahead (or whose
   * grant crossed this) goes back to the queue instead of reaching the upstream.
   */
  #pause(queue: Queue, kq: KeyQueue, caller: string, ms: number): string {
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`a fleet pause of ${ms} ms`);
    const now = this.#clock.now();
    const already = kq.pausedUntil > now;
    kq.pausedUntil = now + Math.ceil(ms);
    kq.coolUntil = Math.max(kq.coolUntil, coolDownEnd(now, Math.ceil(ms)));
    const pause = { ms: Math.ceil(ms), until: kq.pausedUntil };
    for (const [owner, o] of this.#owners) {
      if (owner === caller || o.queue !== queue) continue;
      this.#send(o.worker, { channel: QUEUE_CHANNEL, type: "queue-push", owner, key: kq.key, grants: [], pause });
    }
    return `${kq.pausedUntil},${already ? 1 : 0}`;
  }

  /**
   * The first decision after `kq`'s cool-down ended: the burst the rate refilled during the pause
   * and the cool-down is charged at the end's instant (coolDownEnd's rule, as queue.lua), so the
   * rate resumes at its steady pace from there. Once per cool-down (its end is then forgotten).
   */
  #coolDownEnded(queue: Queue, kq: KeyQueue, now: number): void {
    if (kq.coolUntil === 0 || kq.coolUntil > now) return;
    const at = Math.max(kq.coolUntil, kq.cursor);
    kq.coolUntil = 0;
    this.#coolFree(kq);
    const rate = queue.rate;
    if (rate === undefined) return;
    // Synchronous: the host's records are in memory.
    void chargeCoolDownBurst(
      () => this.#decide(rate, kq.key, 1, at, "peek"),
      (units) => {
        this.#decide(rate, kq.key, units, at, "penalty");
        if (at > kq.cursor) kq.cursor = at;
      },
    );
  }

  #grantOf(id: string, g: Grant, delayMs: number, at: number, cooling: boolean): WireGrant {
    let grant: WireGrant = { id: id.slice(g.owner.length + 1), leased: g.leaseAt !== undefined, delayMs, at };
    if (g.leaseAt !== undefined) grant = { ...grant, leaseAt: g.leaseAt };
    return cooling ? { ...grant, cooling } : grant;
  }

  /** Whether the job granted during a cool-down still runs (a gone or silent owner's has ended). */
  #coolHeld(kq: KeyQueue, now: number): boolean {
    const held = kq.coolGrant;
    if (held === undefined) return false;
    if ((this.#owners.get(held.owner)?.until ?? 0) >= now) return true;
    this.#coolFree(kq);
    return false;
  }

  /**
   * `kq`'s cool-down job ended (released, its owner gone or silent, or the cool-down over): the
   * owners whose late start it held back are told at once (`coolFree`), so none polls for it.
   */
  #coolFree(kq: KeyQueue): void {
    kq.coolGrant = undefined;
    const waiters = kq.coolWaiters;
    if (waiters === undefined) return;
    kq.coolWaiters = undefined;
    for (const owner of waiters) {
      const o = this.#owners.get(owner);
      if (o === undefined) continue;
      this.#send(o.worker, {
        channel: QUEUE_CHANNEL,
        type: "queue-push",
        owner,
        key: kq.key,
        grants: [],
        coolFree: true,
      });
    }
  }

  /**
   * Gives a grant back: its lease, and with `refund` its rate units, and the cool-down's place if
   * it held it. False: no such grant.
   */
  #giveBack(queue: Queue, kq: KeyQueue, id: string, refund: boolean): boolean {
    const cooled = kq.coolGrant?.id === id;
    if (cooled) this.#coolFree(kq);
    const g = kq.grants.get(id);
    if (g === undefined) return cooled;
    kq.grants.delete(id);
    const now = this.#clock.now();
    if (queue.slots !== undefined && g.leaseAt !== undefined) {
      this.#decide(queue.slots, kq.key, 1, now, "release", g.leaseAt);
    }
    if (refund && queue.rate !== undefined && g.rateAt !== undefined) {
      this.#decide(queue.rate, kq.key, g.cost, now, "refund", g.rateAt);
    }
    return true;
  }

  /**
   * Grants every head ticket that fits now, head first; `caller`'s grants go to `mine`, the
   * others' are pushed. A head that must wait arms the key's timer for the instant it may fit.
   */
  #pump(queue: Queue, kq: KeyQueue, caller: string | undefined, mine: FleetGrant[]): void {
    kq.timer?.();
    kq.timer = undefined;
    const now = this.#clock.now();
    // Owners still bringing back grants from a lost host, or a fleet pause: grant once it ends.
    const holdUntil = Math.max(queue.graceUntil, kq.pausedUntil);
    if (now < holdUntil) {
      kq.timer = after(
        this.#clock,
        holdUntil - now,
        () => {
          kq.timer = undefined;
          this.#pump(queue, kq, undefined, []);
        },
        true,
      );
      return;
    }
    this.#coolDownEnded(queue, kq, now);
    const others = new Map<string, FleetGrant[]>();
    let wait: number | undefined;
    /** How far ahead of now the head may be granted (queue.lua's rule). */
    let ahead = 0;
    for (let head = kq.tickets[0]; head !== undefined; head = kq.tickets[0]) {
      const owner = this.#owners.get(head.owner);
      if (owner === undefined || owner.until < now) {
        // A gone or silent owner's ticket never blocks the queue: it leaves at the head.
        kq.tickets.shift();
        continue;
      }
      if (now < kq.coolUntil && this.#coolHeld(kq, now)) {
        // Cooling down, its one job running: its release grants on, or else the cool-down's end.
        wait = kq.coolUntil - now;
        ahead = 0;
        break;
      }
      ahead = queue.lookaheadMs;
      if (queue.slots !== undefined) {
        const d = this.#decide(queue.slots, kq.key, 1, now, "peek");
        if (!d.allowed) {
          wait = d.retryAfterMs; // a lease's expiry (Infinity: only a release frees one)
          ahead = 0;
          break;
        }
        // A grant ahead holds its slot from now: only while at least half the slots stay free.
        if (d.remaining < Math.ceil(d.limit / 2)) ahead = 0;
      }
      let delayMs = 0;
      let rateAt: number | undefined;
      let slackMs = 0;
      if (queue.rate !== undefined) {
        let at = Math.max(now, kq.cursor);
        let d = this.#decide(queue.rate, kq.key, head.cost, at, "check");
        if (!d.allowed && d.retryAfterMs + (at - now) <= ahead) {
          // Due within the lookahead: its units are taken at the due instant itself and the job
          // starts then (delayMs), so no timer's lag or message costs the fleet a slot.
          at += Math.ceil(d.retryAfterMs);
          d = this.#decide(queue.rate, kq.key, head.cost, at, "check");
        }
        if (!d.allowed) {
          wait = d.retryAfterMs + (at - now);
          break;
        }
        // Before a penalty's units (they come after this ticket's).
        slackMs = slotSlackMs(queue.rateSpecs, d, head.cost);
        if (head.penalty > 0) {
          try {
            // Spent at the grant's instant: the next head waits the longer interval (queue.lua).
            this.#decide(queue.rate, kq.key, head.penalty, at, "penalty");
          } catch {
            // An algorithm without `penalty` (leaky bucket): the ticket's units alone count.
          }
        }
        delayMs = d.delayMs + (at - now);
        rateAt = at;
        if (at > kq.cursor) kq.cursor = at;
      }
      let leaseAt: number | undefined;
      if (queue.slots !== undefined) {
        this.#decide(queue.slots, kq.key, 1, now, "check");
        leaseAt = now;
      }
      kq.tickets.shift();
      const g: Grant = { owner: head.owner, leaseAt, rateAt, cost: head.cost };
      const cooling = now < kq.coolUntil;
      if (cooling) kq.coolGrant = { id: head.id, owner: head.owner };
      // Only a grant its owner releases is kept (a lease's, the cool-down's job), as in queue.lua:
      // nobody releases a rate-only grant, and keeping it kept every job's grant, and its key,
      // for the host's life. (Its grant sent again after a lost message is a new grant.)
      if (leaseAt !== undefined || cooling) kq.grants.set(head.id, g);
      let grant = this.#grantOf(head.id, g, delayMs, rateAt ?? now, cooling);
      if (slackMs > 0) grant = { ...grant, slackMs };
      if (head.owner === caller) mine.push(grant);
      else {
        let list = others.get(head.owner);
        if (list === undefined) others.set(head.owner, (list = []));
        list.push(grant);
      }
    }
    for (const [owner, grants] of others) {
      const o = this.#owners.get(owner);
      if (o !== undefined)
        this.#send(o.worker, { channel: QUEUE_CHANNEL, type: "queue-push", owner, key: kq.key, grants });
    }
    if (wait !== undefined && Number.isFinite(wait)) {
      // The primary grants at the due instant itself (no worker is told to poll).
      kq.timer = after(
        this.#clock,
        // Once the head comes within the lookahead: that step grants it (and what follows).
        Math.max(1, Math.ceil(wait - ahead)),
        () => {
          kq.timer = undefined;
          this.#pump(queue, kq, undefined, []);
        },
        true,
      );
    }
    if (
      kq.tickets.length === 0 &&
      kq.grants.size === 0 &&
      kq.timer === undefined &&
      kq.cursor <= now &&
      kq.pausedUntil <= now &&
      kq.coolUntil <= now
    ) {
      queue.keys.delete(kq.key);
    }
  }

  /** @internal The keys whose queues the host holds (a key with nothing waiting, granted or paused is dropped). */
  keyCount(): number {
    let n = 0;
    for (const queue of this.#queues.values()) n += queue.keys.size;
    return n;
  }

  /** `worker` exited: its owners' tickets leave and their grants' slots are given back. */
  disconnect(worker: number): void {
    const touched = new Set<KeyQueue>();
    const queues = new Set<Queue>();
    for (const [id, o] of this.#owners) {
      if (o.worker !== worker) continue;
      this.#owners.delete(id);
      queues.add(o.queue);
      for (const kq of o.queue.keys.values()) {
        const before = kq.tickets.length;
        for (let i = kq.tickets.length - 1; i >= 0; i--) if (kq.tickets[i]?.owner === id) kq.tickets.splice(i, 1);
        if (kq.tickets.length !== before) touched.add(kq);
        for (const [gid, g] of kq.grants) {
          if (g.owner !== id) continue;
          // Its job died with it: the slot is free now (the rate units stay spent).
          this.#giveBack(o.queue, kq, gid, false);
          touched.add(kq);
        }
      }
    }
    for (const queue of queues) {
      for (const kq of [...queue.keys.values()]) if (touched.has(kq)) this.#pump(queue, kq, undefined, []);
    }
  }

  /** Stops every timer and releases the bindings. */
  stop(): void {
    for (const queue of this.#queues.values()) {
      for (const kq of queue.keys.values()) kq.timer?.();
      queue.rate?.release();
      queue.slots?.release();
    }
    this.#queues.clear();
    this.#owners.clear();
  }
}

/** The units that fill every spec of a rate (its largest limit or capacity). */
function fullCost(specs: readonly AlgorithmSpec[] | undefined): number {
  let most = 1;
  for (const spec of specs ?? []) most = Math.max(most, specLimit(spec));
  return most;
}

/** A ticket's cost as sent: a count, or "units+penalty" (FleetTicket.penalty). */
function costOf(sent: unknown): { cost: number; penalty: number } {
  const m = typeof sent === "string" ? /^(\d+)\+(\d+)$/.exec(sent) : null;
  if (m !== null) return { cost: Number(m[1]), penalty: Number(m[2]) };
  return { cost: Number(sent), penalty: 0 };
}

/** Inserts `t` after every ticket of a smaller or equal score (binary search). */
function insert(tickets: Ticket[], t: Ticket): void {
  let lo = 0;
  let hi = tickets.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((tickets[mid] as Ticket).score <= t.score) lo = mid + 1;
    else hi = mid;
  }
  tickets.splice(lo, 0, t);
}
