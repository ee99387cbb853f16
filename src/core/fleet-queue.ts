/**
 * The contract between the throttle and a store that keeps one queue for the fleet (SPEC §16):
 * tickets wait in the store, in priority then arrival order across processes, and the store
 * grants them (deciding the rate and the concurrency with the limiter's own rule code) and
 * hands each grant to the process that owns the ticket, instead of every process polling.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { AlgorithmSpec } from "./spec.ts";

/** A job waiting in the fleet's queue. */
export interface FleetTicket {
  /** Unique within its owner (the owner's id is added by the queue). */
  readonly id: string;
  /** 0 (first) to 9. */
  readonly priority: number;
  /** Units of the rate it takes. */
  readonly cost: number;
  /**
   * Optional: units spent as a penalty once it is granted (past what the rate can admit at once:
   * the adaptive rate slowing a rate of `burst: 1` by a longer interval). A store may ignore it.
   */
  readonly penalty?: number;
  /** It keeps a place it had (sent again after a 429): ahead of the tickets of its priority without one. */
  readonly front?: boolean;
}

/** A ticket the store granted: it may start now (or after `delayMs`, a leaky bucket's spacing). */
export interface FleetGrant {
  readonly id: string;
  /** The grant holds a concurrency lease (renew it while the job runs, release it when it ends). */
  readonly leased: boolean;
  readonly delayMs: number;
  /** The instant the store decided it (its own clock: Redis TIME). */
  readonly at: number;
  /**
   * Granted while its key cools down after a pause ({@link coolDownEnd}): the store counts it as
   * the cool-down's one running job until it is released, so release it when it ends (or goes
   * back), even without a lease. Absent: false.
   */
  readonly cooling?: boolean;
  /**
   * How many ms past `at` the start of the slot of its units comes (a gcra or token bucket's
   * backlog before them, core/unit-slot.ts): its task starting by `at + slackMs` is not late.
   * Absent (an older store, or no bucket): 0.
   */
  readonly slackMs?: number;
}

/**
 * The cool-down after a pause, one rule for every queue (the local one, src/throttle/key-queues.ts;
 * the hosts', fleet-queue-host.ts; Redis's, queue.lua, which restates it): a pause of `ms` decided
 * at `now` (ending at `now + ms`) is followed by a cool-down as long as the pause, so the key
 * cools down until `now + 2 * ms`; a later pause only ever extends it. While the key cools down
 * (paused no more), a job of it is started only when no job of it started during a cool-down is
 * still running: one job at a time, each after the one before settled (a job running since
 * before the pause does not count; a late start, one whose task had not begun, does: restamp).
 * The rate refilled during the pause: without it a rate that admits bursts above the upstream's
 * limit sent every waiting job at once when the pause ended, and each one past the upstream's
 * limit got its 429, pause after pause. Once the cool-down ends the rate alone decides again, at
 * its steady pace: the burst it refilled during the pause and the cool-down does not survive
 * them. At the key's first decision after the end, the rate's record is charged (a penalty, at
 * the end's instant) what it could still admit there past one unit, so one job may start at the
 * end and the next a rate spacing later. Without it a short pause (an `X-RateLimit-Reset`: what
 * is left of the upstream's window) had a cool-down as short, and the refilled burst then sent
 * several jobs at once into the upstream's next window. That charge is {@link chargeCoolDownBurst},
 * called by the local queue (runner.ts) and the hosts (fleet-queue-host.ts); queue.lua restates it.
 */
export function coolDownEnd(now: number, ms: number): number {
  return now + 2 * Math.max(0, ms);
}

/**
 * The last step of coolDownEnd's rule, at the key's first decision after its cool-down ended:
 * `peek` is a one-unit peek of the key's rate record, and `penalty(units)` charges it what the
 * peek says it could still admit past that one unit, both at one instant (the hosts': the
 * cool-down's end, or the latest instant decided ahead; the local queue's: its limiter's now,
 * see runner.ts). A peek refused (the record is spent: nothing to charge) or failed, or a rate
 * that takes no penalty (the leaky bucket admits no burst), charges nothing. Synchronous when
 * `peek` and `penalty` are; never rejects.
 */
export function chargeCoolDownBurst(
  peek: () => Decision | Promise<Decision>,
  penalty: (units: number) => unknown,
): void | Promise<void> {
  const charge = (left: Decision): void | Promise<void> => {
    const units = left.remaining;
    if (!left.allowed || !(units > 0) || !Number.isFinite(units)) return;
    try {
      const spent = penalty(units);
      if (isThenable(spent)) return Promise.resolve(spent).then(ignore, ignore);
    } catch {
      // A member without `penalty` (the leaky bucket, refused up front): nothing to charge.
    }
  };
  try {
    const left = peek();
    return isThenable(left) ? Promise.resolve(left).then(charge, ignore) : charge(left);
  } catch {
    // The store failed: the decision that follows meets the failure and reports it.
  }
}

function ignore(): void {}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}

/** How long a grant's rate units still count (the longest period among the rate's specs). */
export function rateMemoryMs(specs: readonly AlgorithmSpec[] | undefined): number {
  let most = 0;
  for (const spec of specs ?? []) {
    const s = spec as unknown as Record<string, number | undefined>;
    const capacity = s.capacity ?? 0;
    const ms =
      s.windowMs ??
      s.periodMs ??
      (s.refillPerSecond !== undefined ? (capacity * 1000) / s.refillPerSecond : undefined) ??
      (s.leakPerSecond !== undefined ? (capacity * 1000) / s.leakPerSecond : 0);
    most = Math.max(most, Number.isFinite(ms) ? ms : 0);
  }
  return most;
}

/** What a queue tells its throttle. */
export interface FleetListener {
  /** Tickets of `key` were granted. */
  granted(key: string, grants: readonly FleetGrant[]): void;
  /** This process is to wake `key`'s queue (its head must wait `ms`): it should `pump(key)` then. */
  wake(key: string, ms: number): void;
  /** Optional: a call of this process on `key` found another process (or none) to wake it: drop its wake-up. */
  unwake?(key: string): void;
  /** The link to the store came back after a loss: tickets may have been lost, send them again. */
  relinked(): void;
  /**
   * Optional: another process paused `key` for the fleet for `ms` more, until `until` (the
   * store's clock, as grants' `at`): a grant decided before that instant must not start.
   */
  paused?(key: string, ms: number, until: number): void;
  /**
   * Optional: the job that held `key`'s cool-down ended (or its cool-down did): a late start this
   * process was refused during it may ask again now (a host's push; see COOL_FALLBACK_MS).
   */
  coolFreed?(key: string): void;
}

/** How a throttle's fleet queue decides. */
export interface FleetQueueConfig {
  /** The rate limiter's identity and specs (its record is the one the queue checks), if any. */
  readonly rate: { readonly id: string; readonly specs: readonly AlgorithmSpec[] } | undefined;
  /** The concurrency rule (a `concurrency` spec) and its identity, if any. */
  readonly concurrency: { readonly id: string; readonly spec: AlgorithmSpec } | undefined;
  /**
   * Grants a ticket whose rate units are due within this many ms at once, with its units taken
   * at the due instant and a `delayMs` until then (default 0: only what fits now).
   */
  readonly lookaheadMs?: number;
  /** How long an owner's tickets outlive its last heartbeat, in ms. */
  readonly ownerTtlMs: number;
  /**
   * "subscription": where the store can see it, an owner is alive while its link is (no
   * heartbeats needed; see {@link FleetQueue.heartbeatless}). Default "heartbeat": alive until
   * `ownerTtlMs` after its last call.
   */
  readonly liveness?: "heartbeat" | "subscription";
  readonly listener: FleetListener;
}

/** One throttle's queue in a shared store, as seen by one process (its owner). */
export interface FleetQueue {
  /** This process's id in the queue. */
  readonly owner: string;
  /**
   * True when the store tells an owner's liveness without heartbeats (then `heartbeat` is only a
   * rare rescue pump); absent or false: heartbeats every `ownerTtlMs / 3` keep waiting tickets.
   */
  readonly heartbeatless?: boolean;
  /** True once the store's client has ended for good (its owner quit it): no call passes again, none is retried. */
  readonly ended?: boolean;
  /**
   * Adds tickets of `key` (idempotent by id) and grants what fits. `resent`: sent again after
   * the link was lost (the store may have lost running jobs' leases too). Resolves false when the
   * store had forgotten this owner (tickets of it may have been dropped: send them again).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a queue written before the answer existed resolves void
  enqueue(key: string, tickets: readonly FleetTicket[], resent?: boolean): Promise<boolean | undefined | void>;
  /** Takes a ticket out: "removed" (it waited), "returned" (its grant was given back), "unknown". */
  cancel(key: string, id: string): Promise<"removed" | "returned" | "unknown">;
  /** A granted job ended: frees its lease (and with `refund` its rate units) and grants what fits. */
  release(key: string, id: string, refund: boolean): Promise<void>;
  /** Renews a running job's lease; false when it is no longer held. */
  renew(key: string, id: string): Promise<boolean>;
  /** Says this owner is alive and grants what fits; false when the store had forgotten the owner. */
  heartbeat(key: string): Promise<boolean>;
  /** Grants what fits (the head's owner, at its due instant). */
  pump(key: string): Promise<void>;
  /**
   * Optional: pauses `key` for the whole fleet for `ms` (nothing is granted until then) and tells
   * every other owner of the key at once (`paused`). Resolves with the pause's end on the store's
   * clock, and whether the key was paused already.
   */
  pause?(key: string, ms: number): Promise<{ until: number; already: boolean }>;
  /**
   * Optional: a granted job starts late: its rate units taken at `at` (its grant's; undefined:
   * none to give back) go back and `cost` units are taken at the store's latest decision instant
   * (now, or the instant granted ahead to), ahead of the queue (the job's turn came). Resolves
   * with that instant and the ms until it, or with the wait before asking again (no `at` then).
   */
  restamp?(key: string, id: string, cost: number, at: number | undefined): Promise<Restamped>;
  /**
   * Optional: grants what fits, and makes sure this owner (closing) is not the one left to wake
   * `key` (another owner with tickets is told instead).
   */
  leave?(key: string): Promise<void>;
  /** Ends the queue's link (its subscription). */
  close(): Promise<void>;
}

/**
 * A restamp's answer: the units' new instant and the ms until it (`cooling`: the late start is
 * its key's cool-down's one job, so its grant is held until released, as FleetGrant.cooling), or
 * the wait before asking again.
 */
export type Restamped = { at: number; delayMs: number; cooling?: boolean; slackMs?: number } | { waitMs: number };

/**
 * A restamp's answer from the stores' status text: "1,at,delayMs" (",c" after it: `cooling`; then
 * ",slackMs" after a 4th field, "c" or empty: FleetGrant.slackMs) or "0,waitMs" (queue.lua,
 * fleet-queue-host.ts). An older store's text (no slack) reads as before.
 */
export function restampedOf(status: string): Restamped {
  const [ok = "", a = "0", b = "0", c, e] = status.split(",");
  if (ok !== "1") return { waitMs: Number(a) };
  const moved: { at: number; delayMs: number; cooling?: boolean; slackMs?: number } = {
    at: Number(a),
    delayMs: Number(b),
  };
  if (c === "c") moved.cooling = true;
  const slack = slackOf(e);
  if (slack !== undefined) moved.slackMs = slack;
  return moved;
}

/** A slack figure from a store's text (absent, empty or not a number ≥ 0: none). */
export function slackOf(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  const n = Number(text);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * How long a late start refused during a cool-down waits at most (ms) where it is woken when the
 * job holding the cool-down ends (the local queue; the hosts, which push `coolFree` to the owners
 * they refused; queue.lua on Redis, which publishes to those that waited): a fallback, should the
 * word be lost (a host lost with its pushes).
 */
export const COOL_FALLBACK_MS = 1000;

/** A store that can hold a fleet queue. */
export interface FleetQueueStore {
  /**
   * Opens the fleet queue of one throttle: resolves once calls can be made and no grant to this
   * owner can be lost (once grants can be heard, or, on Redis by subscription, at once: grants
   * made before its subscription is live are kept for it, queue.lua 'p' and 'a').
   */
  openFleetQueue(config: FleetQueueConfig): Promise<FleetQueue>;
}

/** Whether `store` can hold a fleet queue. */
export function hasFleetQueue(store: unknown): store is FleetQueueStore {
  return typeof (store as Partial<FleetQueueStore> | undefined)?.openFleetQueue === "function";
}
