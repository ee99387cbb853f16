/**
 * One queue per key, created on a key's first job and dropped as soon as the key is idle (nothing
 * queued, nothing running, no wake armed, no decision in flight), so a throttle serving millions
 * of keys holds only the keys with work. A pause outlives its key's queue in the store (a block)
 * and in a small table of local pauses that forgets them once they are over.
 */
import { coolDownEnd } from "../core/fleet-queue.ts";
import type { PriorityQueue, QueueNode } from "./priority-queue.ts";
import { PriorityQueue as Queue } from "./priority-queue.ts";

/** The state of one key with work in this process. */
export class KeyQueue<T extends QueueNode> {
  /** Jobs waiting, in serving order. */
  readonly queue: PriorityQueue<T> = new Queue<T>();
  /** Jobs of this key running in this process. */
  running = 0;
  /** Of those, the jobs started during a cool-down (one at a time: `coolDownEnd`). */
  cooled = 0;
  /** Late starts refused while a cool-down job ran: woken when none runs any more (or told by the store). */
  readonly coolWaiters: Array<() => void> = [];
  /**
   * Jobs the fleet's store granted ahead (a start due within its lookahead), waiting here for
   * their instant: out of the queue (no longer tickets), not yet started (a pause puts them back).
   */
  readonly held = new Set<T>();
  /** A permit is being decided (one at a time per key, so grants follow queue order). */
  pumping = false;
  /** Something changed while a decision was in flight (a local release): decide again before sleeping. */
  dirty = false;
  /** Served by the local fallback while the store is down (fleet queue): until the key is idle. */
  local = false;
  /** Cancels the armed wake-up, if any. */
  cancelWake: (() => void) | undefined = undefined;

  constructor(public key: string) {}

  /** Whether the key holds nothing and may be forgotten. */
  idle(): boolean {
    return (
      this.queue.size === 0 &&
      this.held.size === 0 &&
      this.running === 0 &&
      !this.pumping &&
      this.cancelWake === undefined
    );
  }
}

/** How many dropped queues are kept for reuse. */
const SPARE = 64;

/** The keys with work. */
export class KeyQueues<T extends QueueNode> {
  #keys = new Map<string, KeyQueue<T>>();
  /** Dropped queues kept for reuse: a key that comes and goes with each job allocates nothing. */
  #spare: KeyQueue<T>[] = [];

  /** Keys held now. */
  get size(): number {
    return this.#keys.size;
  }

  /** The key's queue, created on first use. */
  get(key: string): KeyQueue<T> {
    let kq = this.#keys.get(key);
    if (kq === undefined) {
      kq = this.#spare.pop();
      if (kq === undefined) kq = new KeyQueue<T>(key);
      else {
        kq.key = key;
        kq.local = false;
      }
      this.#keys.set(key, kq);
    }
    return kq;
  }

  /** The key's queue if it has work. */
  find(key: string): KeyQueue<T> | undefined {
    return this.#keys.get(key);
  }

  /** Forgets `kq` when it is idle. */
  dropIfIdle(kq: KeyQueue<T>): void {
    if (kq.idle() && this.#keys.get(kq.key) === kq) {
      this.#keys.delete(kq.key);
      // Nothing refers to an idle queue any more (no job, wake, decision or release in flight).
      if (this.#spare.length < SPARE) this.#spare.push(kq);
    }
  }

  /** Every key with work. */
  values(): IterableIterator<KeyQueue<T>> {
    return this.#keys.values();
  }
}

/**
 * Local pauses by key (until instants), forgetting those that are over once the table grows.
 * Each pause is followed by a cool-down (`cool`, the rule of `coolDownEnd`): a local queue then
 * starts its key's jobs one at a time (a burst-allowing rate above the upstream's, without it:
 * 30 429s for 18 jobs), and at its first decision after the cool-down's end charges the burst the
 * rate refilled meanwhile (`coolDownOver`). A fleet queue's store keeps its own (queue.lua,
 * fleet-queue-host.ts).
 */
export class Pauses {
  #until = new Map<string, { until: number; store: number | undefined; cool: number; charge: boolean }>();
  #sweepAt = 1024;
  /** How long past a cool-down's end its charge is still due (the rate's memory: later, the rate refilled anyway). */
  readonly #keepMs: number;

  constructor(keepMs = 0) {
    this.#keepMs = Math.max(0, keepMs);
  }

  /** Whether `u` holds nothing at `now`: its pause and cool-down are over, and no charge is due. */
  #spent(u: { until: number; cool: number; charge: boolean }, now: number): boolean {
    return u.until <= now && u.cool <= now && (!u.charge || u.cool + this.#keepMs <= now);
  }

  /**
   * Pauses `key` until `until`; `store`: the same end on a fleet store's clock, once known. A
   * pause never shortens a running one here: pauses of one upstream window reach a process in
   * any order (its own 429's, and others' pushed by the store), and taking the shorter one
   * resumed this process while the upstream still refused (bench/throttle-upstream.mjs, "sent
   * while the sender knew the key paused"). The store holds the fleet's latest word.
   */
  set(key: string, until: number, now: number, store?: number): void {
    const u = this.#until.get(key);
    const cool = coolDownEnd(now, until - now);
    if (u !== undefined && u.until > now) {
      u.until = Math.max(u.until, until);
      u.cool = Math.max(u.cool, cool);
      u.charge = true;
      if (store !== undefined) u.store = Math.max(u.store ?? store, store);
      return;
    }
    this.#until.set(key, { until, store, cool: Math.max(cool, u?.cool ?? 0), charge: true });
    if (this.#until.size >= this.#sweepAt) {
      for (const [k, u] of this.#until) if (u.cool + this.#keepMs <= now) this.#until.delete(k);
      this.#sweepAt = Math.max(1024, this.#until.size * 2);
    }
  }

  /** The instant `key` is paused until, or 0 when it is not paused at `now`. */
  until(key: string, now: number): number {
    const u = this.#until.get(key);
    if (u === undefined) return 0;
    if (u.until <= now) {
      if (this.#spent(u, now)) this.#until.delete(key);
      return 0;
    }
    return u.until;
  }

  /** The end of `key`'s cool-down when it cools down at `now` (start one job at a time), else 0. */
  cooling(key: string, now: number): number {
    const u = this.#until.get(key);
    if (u === undefined) return 0;
    if (u.cool > now) return u.cool;
    if (this.#spent(u, now)) this.#until.delete(key);
    return 0;
  }

  /**
   * True once per cool-down, at `key`'s first decision at or after its end (while it is due: up
   * to the rate's memory past the end): the caller charges the rate the burst it refilled during
   * the pause and the cool-down (chargeCoolDownBurst, coolDownEnd's rule).
   */
  coolDownOver(key: string, now: number): boolean {
    const u = this.#until.get(key);
    if (u === undefined || !u.charge || u.cool > now || u.until > now) return false;
    u.charge = false;
    const due = now < u.cool + this.#keepMs;
    if (this.#spent(u, now)) this.#until.delete(key);
    return due;
  }

  /** Records the running pause's end on the fleet store's clock (the store answered). */
  confirm(key: string, store: number): void {
    const u = this.#until.get(key);
    if (u !== undefined) u.store = Math.max(u.store ?? store, store);
  }

  /**
   * Whether a grant decided at `at` (the store's clock) was decided before `key`'s running pause
   * ended, so must not start: any grant while the store's end is not known yet (the pause was
   * decided here and is on its way to the store, so every grant that arrives was made before it).
   */
  voids(key: string, at: number, now: number): boolean {
    if (this.until(key, now) === 0) return false;
    const store = this.#until.get(key)?.store;
    return store === undefined || at < store;
  }
}
