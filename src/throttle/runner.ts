/**
 * The throttle's engine: per-key queues served in priority then arrival order, one permit
 * decided at a time per key (so grants follow the queue), and no polling in one process: a
 * waiting key sleeps until the earliest of its refusal's `retryAfterMs` and a local release.
 * On a shared store, where another process's release wakes no one here, a job waiting for a
 * slot also asks again every `pollMs`; a store that holds a fleet queue (Redis) needs neither:
 * every job is a ticket in the store's one queue for the fleet, granted by the store and handed
 * to this process (fleet-link.ts), and this process only keeps its jobs' bookkeeping.
 *
 * Timers: a key's wake-up, a job's `maxWaitMs` and `timeoutMs` keep the process alive (a
 * process with queued jobs must not exit before they run or fail); lease renewals do not (the
 * running task keeps the process alive if it has anything to wait for). An idle or closed
 * throttle holds no timer at all.
 */
import type { Decision } from "../algorithms/decision.ts";
import { abortReason, after, type Clock, systemClock } from "../core/clock.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, QueueFullError, ThrottleClosedError, WaitTimeoutError } from "../core/errors.ts";
import {
  COOL_FALLBACK_MS,
  chargeCoolDownBurst,
  type FleetGrant,
  type FleetTicket,
  rateMemoryMs,
} from "../core/fleet-queue.ts";
import { specLimit } from "../core/spec.ts";
import { slotSlackMs } from "../core/unit-slot.ts";
import type { Limiter } from "../limiter.ts";
import { Emitter, type OutcomeStatus } from "./events.ts";
import type { FleetLink } from "./fleet-link.ts";
import { Job, type Task, TaskContextOf } from "./job.ts";
import { type KeyQueue, KeyQueues, Pauses } from "./key-queues.ts";
import { LeaseKeeper } from "./lease-keeper.ts";
import { Ledger, type ThrottleStats } from "./ledger.ts";
import { type ResolvedOptions, resolveJobOptions, type ScheduleOptions } from "./options.ts";
import { isPromise, type LeaseHandle, type Permit, type PermitLimiters, returnPermit, takePermit } from "./permit.ts";
import { START_TOLERANCE_MS } from "./start-safe-rate.ts";
import { crossesWindow, earlyBy, fixedWindowsOf, StoreClock } from "./start-window.ts";

/** This process's share of the limits, run locally while the store is down. */
export interface FleetFallback {
  limiters: PermitLimiters;
  concurrency: number | undefined;
}

/** The rate units a fleet ticket asks for: what the rate admits, and what it spends after as a penalty. */
export interface Units {
  cost: number;
  penalty: number;
}

/** A started job's rate units: their receipt instant and cost, and its fleet ticket when the fleet's queue granted them. */
interface Unit {
  at: number;
  cost: number;
  ticket?: string;
  /**
   * A bucket unit's slot (core/unit-slot.ts): its task starting no later than this instant (on
   * the unit's clock: the store's for a fleet unit, this process's for a limiter's) is not late,
   * and its unit needs no move. Absent: the lateness rules alone.
   */
  slot?: number | undefined;
}

/** Backoff after a store call that failed outright (the job keeps its place and waits). */
const STORE_RETRY_MS = 250;

/**
 * The longest a caller's promise waits for the store to answer the calls its job's end made (a
 * lease's release, a waiting ticket's cancel): past it (the store is down or slow) it settles
 * anyway, the calls still under way.
 */
const SETTLE_WAIT_MS = 1_000;

/**
 * How late a task may start after its grant was due (ms) on the rate unit it was granted. Later
 * (a GC pause, a synchronous `start` listener, a busy event loop between the grant and the task)
 * its unit is moved to the real start first (`#restamp`): the rate holds on the tasks' own
 * start instants, not only on the instants the store decided. A store call each move (at most
 * MAX_RESTAMPS), only then.
 */
export const LATE_START_MS = START_TOLERANCE_MS;

/**
 * How many times one task's rate unit is moved to its start at most (each move is a store call
 * that can itself answer late). Past it the task starts anyway: the rate's one residual. 8, not
 * 3: with units used to their slots (core/unit-slot.ts) a start past 3 late moves (a starved
 * thread's timers 250 ms late, load 40) put one unit over a gcra's bound by the tasks' clocks.
 */
const MAX_RESTAMPS = 8;

/**
 * How many times at most a task's unit is moved because the task would start in another fixed
 * window than its unit (each move takes one in the window the start lands in, so a move is needed
 * again only when the store's answer itself comes a window edge later).
 */
const MAX_WINDOW_MOVES = 8;

/**
 * A start this close to its unit's window end counts as in the next window: the check reads the
 * clock a little before the task's own first line does (a unit at a window's last ms, checked in
 * it, was seen by the task 1 ms later, in the next window).
 */
const EDGE_MS = 1;

/** Runs `fire` on the event loop's next turn, after pending I/O (setImmediate where it exists); returns a canceller. */
function nextTurn(fire: () => void): () => void {
  if (typeof globalThis.setImmediate === "function") {
    const handle = setImmediate(fire);
    return () => clearImmediate(handle);
  }
  const handle = setTimeout(fire, 0);
  return () => clearTimeout(handle);
}

/** Whether a fleet grant is held in the store until released (a lease, or the cool-down's one job). */
function holds(grant: FleetGrant): boolean {
  return grant.leased || grant.cooling === true;
}

/**
 * A started job of `kq` settled: it runs no more (and no longer holds its key's cool-down: the
 * late starts that waited for that are woken).
 */
function ended(kq: KeyQueue<Job>, job: Job): void {
  kq.running--;
  if (job.cooled) {
    job.cooled = false;
    kq.cooled--;
    if (kq.cooled === 0) coolFreed(kq);
  }
}

/** No job of `kq`'s cool-down runs (here, or says the store): the late starts waiting for that ask again. */
function coolFreed(kq: KeyQueue<Job>): void {
  for (const wake of kq.coolWaiters.splice(0)) wake();
}

/**
 * Runs `retry` once `kq`'s cool-down job has ended (`coolFreed`: this process's job, or the
 * store's word for another's), or else after `ms`, a bounded fallback: no polling.
 */
function afterCoolJob(clock: Clock, kq: KeyQueue<Job>, ms: number, retry: () => void): void {
  let done = false;
  let cancel: () => void = () => {};
  const once = () => {
    if (done) return;
    done = true;
    cancel();
    const i = kq.coolWaiters.indexOf(once);
    if (i >= 0) kq.coolWaiters.splice(i, 1);
    retry();
  };
  kq.coolWaiters.push(once);
  cancel = after(clock, Math.max(1, ms), once);
}

/** Runs `fire` after `ms` (at once when `ms` ≤ 0); returns a canceller. */
function timer(clock: Clock, ms: number, fire: () => void): () => void {
  if (ms <= 0) {
    fire();
    return () => {};
  }
  return after(clock, ms, fire);
}

/** The engine behind `createThrottle`. */
export class ThrottleRunner {
  readonly events = new Emitter();
  readonly #opts: ResolvedOptions;
  readonly #clock: Clock;
  readonly #limiters: PermitLimiters;
  /** Whether other throttles (other processes) may hold slots in the store. */
  readonly #shared: boolean;
  readonly #keys = new KeyQueues<Job>();
  readonly #pauses: Pauses;
  readonly #ledger: Ledger;
  #seq = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  #whenClosed: () => void = () => {};
  /** Resolves once `close` has finished (the outcome iterators end then). */
  readonly closed: Promise<void>;

  /** The largest cost the rate can ever admit (the least limit over its members). */
  readonly #maxCost: number;
  /** The store's queue for the fleet, when the store holds one (then nothing is decided here). */
  #fleet: FleetLink | undefined;
  /** The rate units a fleet ticket of `cost` asks for (the adaptive rate scales them); absent: `cost`. */
  #unitsOf: ((key: string, cost: number) => Units) | undefined;
  /** The units each ticket asked for, so a ticket sent again asks for the same. */
  readonly #units = new WeakMap<Job, Units>();
  /** Waiting jobs by ticket id (fleet mode), and each job's ticket. */
  readonly #tickets = new Map<string, Job>();
  readonly #ticketOf = new WeakMap<Job, string>();
  /** Jobs that keep a place they had (sent again after a 429): resent with it. */
  readonly #front = new WeakSet<Job>();
  /** The local limits a key runs on while its store calls fail (`onError: { instances }`). */
  #fallback: FleetFallback | undefined;
  /** Tickets being cancelled: a grant that crossed the cancel goes back. */
  readonly #dropped = new Set<string>();
  #nextTicket = 0;
  /** The fleet store's clock against this process's (for where a fleet unit's start lands). */
  readonly #storeClock = new StoreClock();
  /** The rate's clock-aligned fixed windows: a start lands in its unit's window (#late). */
  readonly #windows: number[];

  constructor(opts: ResolvedOptions, limiters: PermitLimiters, shared: boolean) {
    this.#opts = opts;
    this.#maxCost = Math.min(Number.POSITIVE_INFINITY, ...(opts.rate ?? []).map(specLimit));
    this.#windows = fixedWindowsOf(opts.rate);
    this.#clock = opts.clock ?? systemClock;
    this.#ledger = new Ledger(this.events, this.#clock);
    this.#limiters = limiters;
    this.#shared = shared;
    // A cool-down's charge is due for a rate period past its end (later, the rate refilled anyway).
    this.#pauses = new Pauses(rateMemoryMs(opts.rate));
    this.closed = new Promise((resolve) => {
      this.#whenClosed = resolve;
    });
  }

  /**
   * Serves every job through the store's fleet queue (set once, before the first job); with a
   * fallback, a key whose store call fails runs on it until the key is idle again.
   */
  useFleet(link: FleetLink, fallback?: FleetFallback, unitsOf?: (key: string, cost: number) => Units): void {
    this.#fleet = link;
    this.#fallback = fallback;
    this.#unitsOf = unitsOf;
  }

  /** `job`'s ticket `id` (the units it asked for when first queued: a ticket sent again asks the same). */
  #ticket(job: Job, id: string, front: boolean): FleetTicket {
    const units = this.#units.get(job);
    if (units === undefined) return { id, priority: job.priority, cost: job.cost, front };
    return { id, priority: job.priority, cost: units.cost, penalty: units.penalty, front };
  }

  /** The limiters that decide `kq`'s permits: the fallback's while it runs locally. */
  #limitersOf(kq: KeyQueue<Job>): PermitLimiters {
    return kq.local && this.#fallback !== undefined ? this.#fallback.limiters : this.#limiters;
  }

  /**
   * A fleet call for `key` failed (the store is down). With a fallback, the key's waiting jobs
   * leave the fleet's queue (best effort: a grant that still comes goes back) and run on this
   * process's share of the limits until the key is idle; without one they keep waiting.
   */
  fleetFailed(key: string): void {
    const kq = this.#keys.find(key);
    if (this.#fallback === undefined || kq === undefined || kq.local) return;
    kq.local = true;
    for (const job of kq.queue) {
      const ticket = this.#ticketOf.get(job);
      if (ticket === undefined || !this.#tickets.delete(ticket)) continue;
      this.#ticketOf.delete(job);
      this.#dropped.add(ticket);
      (this.#fleet as FleetLink)
        .cancel(key, ticket)
        .then(() => this.#dropped.delete(ticket))
        .catch(() => {});
    }
    (this.#fleet as FleetLink).idle(key);
    this.#pump(kq);
  }

  /** Whether no job of `key` waits in this process for a fleet grant (fleet mode). */
  fleetIdle(key: string): boolean {
    const kq = this.#keys.find(key);
    return kq === undefined || kq.local || kq.queue.size === 0;
  }

  /** The tickets of `key` still waiting in this process (fleet mode). */
  fleetWaiting(key: string): FleetTicket[] {
    const kq = this.#keys.find(key);
    if (kq === undefined) return [];
    const out: FleetTicket[] = [];
    for (const job of kq.queue) {
      const id = this.#ticketOf.get(job);
      if (id !== undefined) out.push(this.#ticket(job, id, this.#front.has(job)));
    }
    return out;
  }

  /** The store granted a ticket: its job starts, or the grant goes back when the job went away. */
  fleetGranted(key: string, grant: FleetGrant): void {
    const job = this.#tickets.get(grant.id);
    const kq = this.#keys.find(key);
    if (job === undefined || !job.queued || kq === undefined || this.#closedHard()) {
      // A grant heard twice (delivered again after a reconnect) is no news: its job started.
      // One that crossed its ticket's cancel goes back (only a lease's or a cool-down's grant holds
      // anything).
      if (this.#dropped.delete(grant.id) && holds(grant)) {
        void this.#fleetCall(key, (f) => f.release(key, grant.id, true));
      }
      return;
    }
    this.#tickets.delete(grant.id);
    const now = this.#clock.now();
    this.#storeClock.sample(grant.at - grant.delayMs, now);
    // Decided before a fleet pause ended (a grant ahead, or one that crossed the pause): it goes
    // back to the queue, so no job reaches the upstream during the pause.
    if (this.#pauses.voids(key, grant.at, now)) {
      kq.queue.remove(job);
      this.#putBack(kq, job, grant);
      return;
    }
    // Held here until its instant (a pause heard meanwhile puts it back), and then for one more
    // turn of the event loop: an answer that has arrived (a 429 of this process, a pause another
    // process published) is read before the job starts, not after. Timers run before I/O in a
    // turn, so a process that lagged would otherwise start its due jobs before reading the 429.
    kq.queue.remove(job);
    kq.held.add(job);
    job.grant = grant;
    job.dueAt = now + Math.max(0, grant.delayMs);
    job.cancelExpiry?.();
    job.cancelExpiry = undefined;
    const due = () => {
      job.cancelHold = nextTurn(() => {
        job.cancelHold = undefined;
        job.grant = undefined;
        this.#startGranted(kq, job, grant);
      });
    };
    if (grant.delayMs > 0) job.cancelHold = after(this.#clock, grant.delayMs, due);
    else due();
  }

  #startGranted(kq: KeyQueue<Job>, job: Job, grant: FleetGrant): void {
    const { key } = kq;
    const fleet = this.#fleet as FleetLink;
    // A grant made during a cool-down is held in the store until released, as a lease is (but
    // nothing expires it: it is not renewed).
    const lease = grant.leased
      ? { release: () => fleet.release(key, grant.id, false), renew: () => fleet.renew(key, grant.id) }
      : grant.cooling === true
        ? { release: () => fleet.release(key, grant.id, false), renew: () => true }
        : undefined;
    const due = job.dueAt;
    // The cool-down's job here: its end wakes the late starts of the key that wait for it.
    if (grant.cooling === true && !job.cooled) {
      job.cooled = true;
      kq.cooled++;
    }
    const rate =
      this.#limiters.rate === undefined
        ? undefined
        : { at: grant.at, cost: this.#unitCost(job), ticket: grant.id, slot: this.#fleetSlot(grant.at, grant.slackMs) };
    this.#start(kq, job, { granted: true, lease, rate: undefined, delayMs: 0 }, this.#clock.now(), grant.at, due, rate);
  }

  /** The rate units a fleet ticket of `job` took (the adaptive rate may have scaled its cost). */
  #unitCost(job: Job): number {
    return this.#units.get(job)?.cost ?? job.cost;
  }

  /**
   * A granted job that has not started goes back to the fleet's queue (a pause landed): its
   * grant is given back (a lease, with its rate units), and it is sent again as a new ticket at
   * the front of its priority, so it keeps its place ahead of later jobs. (A rate-only grant's
   * units are not recorded in the store and stay spent.)
   */
  #putBack(kq: KeyQueue<Job>, job: Job, grant: FleetGrant): void {
    const { key } = kq;
    kq.held.delete(job);
    job.cancelHold?.();
    job.cancelHold = undefined;
    job.grant = undefined;
    if (holds(grant)) void this.#fleetCall(key, (f) => f.release(key, grant.id, true));
    kq.queue.insertInOrder(job);
    const id = String(this.#nextTicket++);
    this.#tickets.set(id, job);
    this.#ticketOf.set(job, id);
    this.#front.add(job);
    (this.#fleet as FleetLink).submit(key, this.#ticket(job, id, true));
    const { maxWaitMs } = job.options;
    if (job.cancelExpiry === undefined && maxWaitMs !== Number.POSITIVE_INFINITY) {
      job.cancelExpiry = timer(this.#clock, job.enqueuedAt + maxWaitMs - this.#clock.now(), () => this.#expire(job));
    }
  }

  /** Puts back every job of `key` held for a start granted before the key's running pause ends. */
  #holdBack(key: string): void {
    const kq = this.#keys.find(key);
    if (kq === undefined || kq.held.size === 0) return;
    const now = this.#clock.now();
    for (const job of [...kq.held]) {
      const grant = job.grant as FleetGrant;
      if (this.#pauses.voids(key, grant.at, now)) this.#putBack(kq, job, grant);
    }
  }

  /** The store says `key`'s cool-down job ended (another process's): late starts waiting for it ask again. */
  fleetCoolFreed(key: string): void {
    const kq = this.#keys.find(key);
    if (kq !== undefined) coolFreed(kq);
  }

  /** Another process paused `key` for the fleet (the store told this one). */
  fleetPaused(key: string, ms: number, until: number): void {
    const now = this.#clock.now();
    this.#pauses.set(key, now + ms, now, until);
    if (this.events.has("pause")) this.events.emit("pause", { key, ms, reason: "fleet" });
    this.#holdBack(key);
  }

  /**
   * Pauses `key` in the fleet's store, which tells every other process at once; undefined when
   * there is no fleet queue or it cannot (the caller blocks the key's record instead).
   */
  async pauseFleet(key: string, ms: number): Promise<{ already: boolean } | undefined> {
    if (this.#fleet === undefined) return undefined;
    const answer = await this.#fleet.pause(key, ms);
    if (answer !== undefined) this.#pauses.confirm(key, answer.until);
    return answer;
  }

  /**
   * A store call behind the queue; close waits for it, and a failure is an `error` event.
   * Resolves (never rejects) once it is answered.
   */
  #fleetCall(key: string, call: (fleet: FleetLink) => Promise<unknown>): Promise<void> {
    const fleet = this.#fleet;
    if (fleet === undefined) return Promise.resolve();
    this.#ledger.releasing++;
    return call(fleet)
      .then(
        () => {},
        (error: unknown) => this.events.emit("error", { key, error }),
      )
      .finally(() => {
        this.#ledger.releasing--;
        this.#ledger.checkIdle();
      });
  }

  /**
   * Settles a caller's promise once the store calls its job's end made are answered (at most
   * SETTLE_WAIT_MS later): a caller that then quits its Redis client leaves no call of the job
   * behind it (one written after QUIT makes the client's own `quit()` reject: docs/throttle.md).
   */
  #settleAfter(calls: readonly Promise<unknown>[], settle: () => void): void {
    if (calls.length === 0) {
      settle();
      return;
    }
    let done = false;
    const once = () => {
      if (done) return;
      done = true;
      cancel();
      settle();
    };
    const cancel = after(this.#clock, SETTLE_WAIT_MS, once, true);
    // Never rejects (each call is a #fleetCall, or a release whose failure is an `error` event),
    // but a rejection here must not become an unhandled one in the user's process either.
    void Promise.all(calls).then(once, once);
  }

  /** The limiter that holds the key's fleet-wide pauses (a block): the rate's, else the slots' (none: local only). */
  get pauseLimiter(): Limiter | undefined {
    return this.#limiters.rate ?? this.#limiters.slots;
  }

  /** The throttle's clock. */
  get clock(): Clock {
    return this.#clock;
  }

  /** @internal Keys with work in this process (idle keys are dropped). */
  heldKeys(): number {
    return this.#keys.size;
  }

  /** This process's jobs. */
  stats(): ThrottleStats {
    return this.#ledger.stats();
  }

  /** An arrival number for a job that will be scheduled (again) later and must keep its place. */
  reserveSeq(): number {
    return this.#seq++;
  }

  /** Queues `task`; resolves with its result once it ran. `seq` keeps a retried job's place. */
  schedule<R>(task: Task<R>, options?: ScheduleOptions, seq?: number): Promise<R> {
    if (typeof task !== "function") {
      return Promise.reject(new ArgumentError(`schedule: \`task\` must be a function (got ${describeValue(task)})`));
    }
    let o: ReturnType<typeof resolveJobOptions>;
    try {
      o = resolveJobOptions(options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.reject(new ThrottleClosedError("schedule: the throttle is closed"));
    if (o.signal?.aborted) return Promise.reject(abortReason(o.signal));
    if (o.cost > this.#maxCost) {
      return Promise.reject(
        new WaitTimeoutError(
          `schedule: cost ${o.cost} exceeds the rate's limit (${this.#maxCost}${
            this.#opts.rollingLagMs === undefined
              ? ""
              : ", after a shared store's start-safety margin: docs/throttle.md"
          }): it can never pass`,
        ),
      );
    }
    if (this.#ledger.queued >= this.#opts.maxQueued) {
      return Promise.reject(
        new QueueFullError(
          `schedule: ${this.#ledger.queued} jobs already wait in this process (\`maxQueued\` ${this.#opts.maxQueued})`,
        ),
      );
    }
    return new Promise<R>((resolve, reject) => {
      const job = new Job(seq ?? this.#seq++, o.key, o, task as Task<unknown>, resolve as (v: unknown) => void, reject);
      this.#enqueue(job, seq !== undefined);
    });
  }

  #enqueue(job: Job, keepPlace: boolean): void {
    const kq = this.#keys.get(job.key);
    if (keepPlace) kq.queue.insertInOrder(job);
    else kq.queue.push(job);
    this.#ledger.enqueued();
    job.enqueuedAt = this.#clock.now();
    const signal = job.options.signal;
    if (signal !== undefined) {
      job.onAbort = () => this.#abortQueued(job);
      signal.addEventListener("abort", job.onAbort, { once: true });
    }
    if (this.events.has("queued")) {
      this.events.emit("queued", { key: job.key, priority: job.priority, cost: job.cost });
    }
    if (this.#fleet !== undefined && !kq.local) {
      const id = String(this.#nextTicket++);
      this.#tickets.set(id, job);
      this.#ticketOf.set(job, id);
      if (keepPlace) this.#front.add(job);
      if (this.#unitsOf !== undefined) this.#units.set(job, this.#unitsOf(kq.key, job.cost));
      this.#fleet.submit(kq.key, this.#ticket(job, id, keepPlace));
    } else if (kq.queue.peek() === job) this.#wakeNow(kq);
    const { maxWaitMs } = job.options;
    if (!job.queued || maxWaitMs === Number.POSITIVE_INFINITY) return;
    if (maxWaitMs > 0) job.cancelExpiry = timer(this.#clock, maxWaitMs, () => this.#expire(job));
    // No wait allowed: it started above or it never will (unless its permit is still being decided).
    else if (!job.deciding) this.#expire(job);
  }

  /** Decides permits for `kq`'s queue head until one is refused or the queue is empty. */
  #pump(kq: KeyQueue<Job>): void {
    // A fleet queue decides in the store: grants arrive through fleetGranted (unless the key
    // runs on the local fallback while the store is down).
    if (this.#fleet !== undefined && !kq.local) return;
    if (kq.pumping) {
      kq.dirty = true;
      return;
    }
    kq.pumping = true;
    this.#loop(kq);
  }

  /**
   * The pump's loop (with `kq.pumping` set). In-process stores answer synchronously and the
   * loop runs to its end in one go; a remote store's answer continues it from the promise.
   */
  #loop(kq: KeyQueue<Job>): void {
    for (;;) {
      kq.dirty = false;
      const job = kq.queue.peek();
      if (job === undefined || this.#closedHard()) break;
      // A slot this process holds can only come back through a local release, which pumps again.
      const concurrency = kq.local ? this.#fallback?.concurrency : this.#opts.concurrency;
      if (concurrency !== undefined && kq.running >= concurrency) break;
      const now = this.#clock.now();
      const pausedUntil = this.#pauses.until(kq.key, now);
      if (pausedUntil > 0) {
        this.#wake(kq, pausedUntil - now);
        break;
      }
      // Cooling down after a pause: one job at a time (coolDownEnd's rule): the running one's
      // finish pumps again, or else the cool-down's end (a long job does not hold the queue past it).
      const coolUntil = this.#pauses.cooling(kq.key, now);
      if (kq.cooled > 0 && coolUntil > 0) {
        this.#wake(kq, coolUntil - now);
        break;
      }
      // The first decision after the cool-down's end: the burst the rate refilled during the
      // pause and the cool-down is charged first (coolDownEnd's rule), so it resumes at its pace.
      const charged = this.#coolDownOver(kq, now);
      if (charged !== undefined) {
        void charged.then(() => this.#loop(kq));
        return;
      }
      job.deciding = true;
      let permit: Permit | Promise<Permit>;
      try {
        permit = takePermit(this.#limitersOf(kq), kq.key, job.cost);
      } catch (error) {
        this.#storeFailed(kq, job, error);
        break;
      }
      if (isPromise(permit)) {
        permit.then(
          (p) => (this.#decided(kq, job, p, now) ? this.#loop(kq) : this.#endPump(kq)),
          (error: unknown) => {
            this.#storeFailed(kq, job, error);
            this.#endPump(kq);
          },
        );
        return;
      }
      if (!this.#decided(kq, job, permit, now)) break;
    }
    this.#endPump(kq);
  }

  /**
   * At `kq`'s first decision after its cool-down ended (as the hosts' and queue.lua's first
   * decision after it), its rate is charged what it could still admit past one unit, at the
   * limiter's now: one job may start now and the next a rate spacing later. (The hosts charge at
   * the end's instant; a local queue with jobs waiting decides at the end, its wake-up armed
   * then; one idle at the end charges at its next decision, up to a rate period later.) A
   * promise while a remote store answers.
   */
  #coolDownOver(kq: KeyQueue<Job>, now: number): Promise<void> | undefined {
    const rate = this.#limitersOf(kq).rate;
    if (rate === undefined || !this.#pauses.coolDownOver(kq.key, now)) return undefined;
    const charged = chargeCoolDownBurst(
      () => rate.peek(kq.key, 1),
      (units) => rate.penalty(kq.key, units),
    );
    return charged === undefined ? undefined : charged;
  }

  #endPump(kq: KeyQueue<Job>): void {
    kq.pumping = false;
    this.#keys.dropIfIdle(kq);
    this.#ledger.checkIdle();
  }

  /** A store call failed outright: the job keeps its place and the key asks again after a pause. */
  #storeFailed(kq: KeyQueue<Job>, job: Job, error: unknown): void {
    job.deciding = false;
    this.events.emit("error", { key: kq.key, error });
    if (kq.queue.size > 0) this.#wake(kq, STORE_RETRY_MS);
  }

  /** Acts on the head's permit, decided at `now`; false when the key now sleeps. */
  #decided(kq: KeyQueue<Job>, job: Job, permit: Permit, now: number): boolean {
    job.deciding = false;
    if (!job.queued) {
      // Aborted, expired or closed while its permit was decided: give back what it took.
      if (permit.granted) this.#giveBack(kq, job, permit);
      return true;
    }
    if (permit.granted) {
      // Started during a cool-down: it is the one running until it settles (marked before the
      // start: a synchronous task settles within it).
      if (this.#pauses.cooling(kq.key, now) > 0) {
        job.cooled = true;
        kq.cooled++;
      }
      this.#start(kq, job, permit, now);
      return true;
    }
    if (!Number.isFinite(permit.retryAfterMs)) {
      this.#drop(kq, job, new WaitTimeoutError(`cost ${job.cost} exceeds the limit: it can never pass`), "expired");
      return true;
    }
    if (now + permit.retryAfterMs > job.enqueuedAt + job.options.maxWaitMs) {
      const message = `the job needs ${permit.retryAfterMs} ms more, past \`maxWaitMs\` (${job.options.maxWaitMs} ms)`;
      this.#drop(kq, job, new WaitTimeoutError(message), "expired");
      return true;
    }
    // A release arrived while this was decided: the refusal may be stale, ask again.
    if (kq.dirty) return true;
    let wait = permit.retryAfterMs;
    if (permit.slotBusy && this.#shared) wait = Math.min(wait, this.#opts.pollMs);
    this.#wake(kq, Math.max(1, wait));
    return false;
  }

  /** Arms `kq`'s one wake-up `ms` from now (replacing an earlier one). */
  #wake(kq: KeyQueue<Job>, ms: number): void {
    kq.cancelWake?.();
    kq.cancelWake = after(this.#clock, ms, () => {
      kq.cancelWake = undefined;
      this.#pump(kq);
    });
  }

  /** Decides again now: a slot came back, a new head arrived, or the head went away. */
  #wakeNow(kq: KeyQueue<Job>): void {
    if (this.#fleet !== undefined && !kq.local) return;
    if (kq.pumping) {
      kq.dirty = true;
      return;
    }
    if (kq.cancelWake !== undefined) {
      kq.cancelWake();
      kq.cancelWake = undefined;
    }
    this.#pump(kq);
  }

  #giveBack(kq: KeyQueue<Job>, job: Job, permit: Permit): void {
    this.#ledger.releasing++;
    // What is being given back is still held in the store: count it as running here until then.
    kq.running++;
    returnPermit(this.#limitersOf(kq), kq.key, job.cost, permit)
      .catch((error: unknown) => this.events.emit("error", { key: kq.key, error }))
      .finally(() => {
        this.#ledger.releasing--;
        kq.running--;
        this.#wakeNow(kq);
        this.#keys.dropIfIdle(kq);
        this.#ledger.checkIdle();
      });
  }

  #start(
    kq: KeyQueue<Job>,
    job: Job,
    permit: Permit & { granted: true },
    now: number,
    at: number = permit.rate?.at ?? now,
    due: number = this.#clock.now() + permit.delayMs,
    unit: Unit | undefined = permit.rate?.at === undefined
      ? undefined
      : { at: permit.rate.at, cost: job.cost, slot: this.#localSlot(permit.rate, now, job.cost) },
  ): void {
    if (!kq.queue.remove(job)) kq.held.delete(job);
    const ticket = this.#ticketOf.get(job);
    if (ticket !== undefined) this.#tickets.delete(ticket);
    this.#ledger.queued--;
    this.#ledger.running++;
    kq.running++;
    job.cancelExpiry?.();
    job.cancelExpiry = undefined;
    const signal = job.options.signal;
    if (job.onAbort !== undefined && signal !== undefined) {
      signal.removeEventListener("abort", job.onAbort);
      job.onAbort = undefined;
    }
    job.started = true;
    job.startedAt = now;
    if (permit.lease !== undefined) job.keeper = this.#keeper(kq, job, permit.lease);
    const { timeoutMs } = job.options;
    if (timeoutMs !== Number.POSITIVE_INFINITY) {
      job.cancelTimeout = after(this.#clock, timeoutMs, () => this.#timeout(job));
    }
    // A leaky bucket admits now and spaces the outflow: the job holds its permit until its turn.
    if (permit.delayMs > 0) after(this.#clock, permit.delayMs, () => this.#late(kq, job, due, unit, at));
    else this.#late(kq, job, due, unit, at);
  }

  /**
   * The slot end of a unit a limiter decided (`d`, asked at `sent`, this process's clock): from the
   * asking instant, which is no later than the store's deciding one. None with an adaptive rate
   * (its specs change under the limiter's figures).
   */
  #localSlot(d: Decision, sent: number, cost: number): number | undefined {
    if (this.#opts.adaptive !== undefined) return undefined;
    const slack = slotSlackMs(this.#opts.rate, d, cost);
    return slack > 0 ? sent + slack : undefined;
  }

  /** The slot end of a fleet unit taken at the store's instant `at` with the store's slack (absent from an older store). */
  #fleetSlot(at: number, slackMs: number | undefined): number | undefined {
    return slackMs !== undefined && slackMs > 0 && Number.isFinite(slackMs) ? at + slackMs : undefined;
  }

  /**
   * Starts the task (its `start` event first), its rate unit first moved to its real start when
   * that comes more than LATE_START_MS after its grant was due, or lands in another fixed window
   * of the rate than its unit (start-window.ts, by the store's clock for a fleet unit); a `start`
   * listener that stalls as long moves it too (the event has told the old instant then).
   */
  #late(kq: KeyQueue<Job>, job: Job, due: number, unit: Unit | undefined, at: number): void {
    const fleetUnit = unit?.ticket !== undefined;
    // Why the task would start wrong on its unit now (unitAt: the unit's instant, if known).
    const wrong = (since: number, unitAt: number | undefined): "window" | "lag" | undefined => {
      if (unit === undefined) return undefined;
      const now = this.#clock.now();
      const offset = fleetUnit ? this.#storeClock.offset : 0;
      // EDGE_MS on: the task's own first line reads the clock after this check.
      if (
        unitAt !== undefined &&
        this.#windows.length > 0 &&
        crossesWindow(this.#windows, unitAt, now + offset + EDGE_MS)
      ) {
        return "window";
      }
      // Lateness counts from when this process heard the grant: counted from the store's instant
      // instead, every grant a loaded process heard late cost a restamp (40 waiting owners of a
      // gcra at load 30: 8.5 Redis commands a job against ≤ 3); the window rule above is what
      // keeps a fixed window's starts in it.
      // A rolling rule (widened by LATE_START_MS: start-safe-rate.ts) holds on real starts only if
      // each starts within LATE_START_MS of its unit's instant, the store's: from there then.
      // A bucket unit's start up to its slot's start is not late (core/unit-slot.ts): the slots
      // are spaced by the rate's interval, so starts there hold it as starts at the grant would.
      // Not while the key is paused: a start the late rules below move waits the pause out there
      // (a slot's slack must not carry a start into an upstream's pause).
      if (unit.slot !== undefined && now + offset <= unit.slot && this.#pauses.until(kq.key, now) === 0)
        return undefined;
      const rolling = this.#opts.rollingLagMs;
      if (rolling !== undefined && fleetUnit && unitAt !== undefined && now + offset - unitAt > rolling) return "lag";
      return now - since > LATE_START_MS ? "lag" : undefined;
    };
    // A restamp's own answer can come late too (a busy event loop, a slow store): the task then
    // starts well after the unit's new instant, so it is moved again, a bounded number of times.
    let restamps = 0;
    const moves = (since: number, unitAt: number | undefined) => {
      const why = wrong(since, unitAt);
      return why === "window" ? restamps < MAX_WINDOW_MOVES : why === "lag" && restamps < MAX_RESTAMPS;
    };
    const move = (then: (at: number | undefined, since: number) => void) => {
      restamps++;
      this.#restamp(kq, job, unit as Unit, then);
    };
    // How long the task would start too early for its unit's window (a timer due at a window's
    // first instant fires by a monotonic clock that can run a ms ahead of the wall clock's).
    const early = (unitAt: number | undefined) =>
      unitAt === undefined || this.#windows.length === 0
        ? 0
        : earlyBy(this.#windows, unitAt, this.#clock.now() + (fleetUnit ? this.#storeClock.offset : 0));
    // Runs the task, its unit moved first while the task would start wrong on it.
    const go = (since: number, unitAt: number | undefined) => {
      const wait = early(unitAt);
      if (wait > 0) after(this.#clock, wait, () => go(since, unitAt));
      else if (moves(since, unitAt)) move((next, nextSince) => go(nextSince, next));
      else this.#run(kq, job);
    };
    const begin = (startAt: number, since: number, unitAt: number | undefined) => {
      if (this.events.has("start")) {
        this.events.emit("start", {
          key: job.key,
          priority: job.priority,
          cost: job.cost,
          waitedMs: job.startedAt - job.enqueuedAt,
          at: startAt,
        });
      }
      go(since, unitAt); // a `start` listener that stalled makes it late too
    };
    const first = () => {
      const wait = early(unit?.at);
      if (wait > 0) after(this.#clock, wait, first);
      else if (!moves(due, unit?.at)) begin(at, due, unit?.at);
      else move((newAt, since) => begin(newAt ?? at, since, newAt));
    };
    first();
  }

  /** Keeps `job`'s `lease` (renewed while it runs, released when it settles). */
  #keeper(kq: KeyQueue<Job>, job: Job, lease: LeaseHandle): LeaseKeeper {
    return new LeaseKeeper(
      lease,
      this.#clock,
      this.#opts.leaseMs,
      (error) => this.events.emit("error", { key: kq.key, error }),
      (error) => {
        // The slot may now run another job: a task that heeds its signal stops (its caller gets
        // the task's own answer, as after an abort).
        this.events.emit("error", { key: kq.key, error });
        job.aborted = error;
        job.abortTask(error);
      },
    );
  }

  /**
   * A late start's rate unit: the one granted goes back (by its receipt) and one is taken at the
   * real start, the job keeping its slot and its turn meanwhile; refused (a window that filled
   * since), it takes the next that frees, as a leaky bucket's delay. On a fleet queue this is one
   * store call (the store's own decision instant: its record never sees time run back); on a
   * limiter a refund and a check. A store that fails, or a queue that cannot: it starts as granted.
   */
  #restamp(kq: KeyQueue<Job>, job: Job, unit: Unit, then: (at: number | undefined, since: number) => void): void {
    const { key } = kq;
    // The units now stand at the instant taken: a later move gives back these, not the first
    // grant's (already given back: refunding that receipt again frees nothing, and the units
    // taken here would stay held beside the next ones, each further move costing the rate a unit).
    const run = (at: number | undefined, since: number, taken = at !== undefined, slot?: number) => {
      if (taken) {
        unit.at = at as number;
        unit.slot = slot; // the moved unit's own slot (none: the lateness rules alone)
      }
      then(at, since);
    };
    const fleet = unit.ticket === undefined ? undefined : this.#fleet;
    const limiter = this.#limitersOf(kq).rate;
    let receipt: number | undefined = unit.at;
    const failed = (error: unknown) => {
      this.events.emit("error", { key, error });
      run(undefined, this.#clock.now());
    };
    // A refused move waits for the next unit: never past the job's `maxWaitMs` (its task has not
    // begun, so it is rejected as a waiting job is, its slot given back). Without this a loaded
    // process's late starts waited seconds past it (attack8 F5).
    const overdue = (waitMs: number): boolean => {
      const { maxWaitMs } = job.options;
      if (this.#clock.now() + waitMs <= job.enqueuedAt + maxWaitMs) return false;
      const message = `the job's late start needs ${Math.ceil(waitMs)} ms more for its rate unit, past \`maxWaitMs\` (${maxWaitMs} ms)`;
      this.#finish(kq, job, new WaitTimeoutError(message), "expired");
      return true;
    };
    const attempt = (): void => {
      if (job.aborted !== undefined) {
        this.#finish(kq, job, job.aborted, "expired");
        return;
      }
      const at = receipt;
      receipt = undefined;
      if (fleet !== undefined) {
        // The store stamps the unit after this instant: a task started later than the unit's
        // delay past it, by LATE_START_MS, starts late on it (the caller moves it again).
        const sent = this.#clock.now();
        fleet.restamp(key, unit.ticket as string, unit.cost, at).then((m) => {
          if (m !== undefined && "at" in m) this.#storeClock.sample(m.at - m.delayMs, this.#clock.now());
          if (m !== undefined && "at" in m && m.cooling === true && !job.cooled) {
            // The cool-down's job here now: its end wakes the key's late starts that wait for it.
            job.cooled = true;
            kq.cooled++;
          }
          const slot = m !== undefined && "at" in m ? this.#fleetSlot(m.at, m.slackMs) : undefined;
          if (m === undefined) run(undefined, this.#clock.now());
          else if ("waitMs" in m) {
            // Refused while the key cools down (another job holds it): also woken when that job
            // ends, here or (a host's word) elsewhere; the store's wait is the fallback.
            if (overdue(m.waitMs)) return;
            if (this.#pauses.cooling(key, this.#clock.now()) > 0) afterCoolJob(this.#clock, kq, m.waitMs, attempt);
            else after(this.#clock, Math.max(1, m.waitMs), attempt);
          } else if (m.cooling === true && job.keeper === undefined) {
            // The cool-down's one job now: the store holds it until it is released.
            const ticket = unit.ticket as string;
            job.keeper = this.#keeper(kq, job, { release: () => fleet.release(key, ticket, false), renew: () => true });
            if (m.delayMs > 0) after(this.#clock, m.delayMs, () => run(m.at, sent + m.delayMs, true, slot));
            else run(m.at, sent, true, slot);
          } else if (m.delayMs > 0) after(this.#clock, m.delayMs, () => run(m.at, sent + m.delayMs, true, slot));
          else run(m.at, sent, true, slot);
        }, failed);
        return;
      }
      if (limiter === undefined) {
        run(undefined, this.#clock.now());
        return;
      }
      let sent = this.#clock.now();
      const answer = (d: Decision) => {
        // A leaky bucket's unit: its task starts after the spacing it was given.
        if (d.allowed && d.delayMs > 0) after(this.#clock, d.delayMs, () => run(d.at, sent + d.delayMs));
        else if (d.allowed) run(d.at, sent, d.at !== undefined, this.#localSlot(d, sent, unit.cost));
        else if (!Number.isFinite(d.retryAfterMs)) run(d.at, this.#clock.now(), false);
        else if (!overdue(d.retryAfterMs)) after(this.#clock, Math.max(1, d.retryAfterMs), attempt);
      };
      try {
        if (at !== undefined) {
          const back = limiter.refund(key, { cost: unit.cost, at });
          if (isPromise(back)) {
            back.then(() => {
              receipt = undefined;
              attempt();
            }, failed);
            return;
          }
        }
        // During a cool-down a late start is a start (coolDownEnd's rule): it waits while another
        // job of the cool-down runs, and once it goes it is that job.
        const now = this.#clock.now();
        // A late start waits out a pause, as the hosts' and queue.lua's restamp make it (its
        // task has not begun: it would reach the upstream during the pause).
        const pausedUntil = this.#pauses.until(key, now);
        if (pausedUntil > 0) {
          if (overdue(pausedUntil - now)) return;
          after(this.#clock, pausedUntil - now, attempt);
          return;
        }
        // After it, the first decision charges the refilled burst first (as #loop).
        const charged = this.#coolDownOver(kq, now);
        if (charged !== undefined) {
          void charged.then(attempt);
          return;
        }
        const coolUntil = this.#pauses.cooling(key, now);
        if (coolUntil > 0 && !job.cooled) {
          if (kq.cooled > 0) {
            // Woken when that job ends (an event); the fallback only bounds a lost word.
            afterCoolJob(this.#clock, kq, Math.min(coolUntil - now, COOL_FALLBACK_MS), attempt);
            return;
          }
          job.cooled = true;
          kq.cooled++;
        }
        sent = this.#clock.now();
        const d = limiter.tryAcquire(key, job.cost);
        if (isPromise(d)) d.then(answer, failed);
        else answer(d);
      } catch (error) {
        failed(error);
      }
    };
    attempt();
  }

  #run(kq: KeyQueue<Job>, job: Job): void {
    let result: unknown;
    try {
      result = job.task(new TaskContextOf(job));
    } catch (error) {
      this.#finish(kq, job, error, "failed");
      return;
    }
    if (isPromise(result)) {
      (result as Promise<unknown>).then(
        (value) => this.#finish(kq, job, value, "done"),
        (error: unknown) => this.#finish(kq, job, error, "failed"),
      );
    } else this.#finish(kq, job, result, "done");
  }

  #timeout(job: Job): void {
    job.cancelTimeout = undefined;
    const reason = new DOMException(`the task ran past \`timeoutMs\` (${job.options.timeoutMs} ms)`, "TimeoutError");
    job.aborted = reason;
    job.abortTask(reason);
    this.#ledger.settle(job, reason, "expired");
  }

  /**
   * The task settled: its slot goes back (it was held until now, even past a timeout), and then
   * the caller's promise settles with the task's answer (already settled after a `timeoutMs`).
   */
  #finish(kq: KeyQueue<Job>, job: Job, answer: unknown, status: OutcomeStatus): void {
    job.cancelTimeout?.();
    job.cancelTimeout = undefined;
    job.unlisten();
    const released = job.keeper?.end();
    if (released === undefined) {
      this.#ledger.settle(job, answer, status);
      this.#ledger.running--;
      ended(kq, job);
      this.#wakeNow(kq);
      this.#keys.dropIfIdle(kq);
      this.#ledger.checkIdle();
      return;
    }
    // The local count follows the store's: the slot counts as held until the store has it back.
    this.#ledger.releasing++;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      this.#ledger.settle(job, answer, status);
      this.#ledger.running--;
      this.#ledger.checkIdle();
    };
    this.#settleAfter(
      [
        released.then(() => {
          this.#ledger.releasing--;
          ended(kq, job);
          settle();
          this.#wakeNow(kq);
          this.#keys.dropIfIdle(kq);
          this.#ledger.checkIdle();
        }),
      ],
      settle,
    );
  }

  /** Takes a waiting job out of its queue and rejects it. */
  #drop(kq: KeyQueue<Job>, job: Job, error: unknown, status: OutcomeStatus): void {
    const wasHead = kq.queue.peek() === job && (this.#fleet === undefined || kq.local);
    // The store calls taking the job out: the caller's promise settles once they are answered.
    const calls: Promise<void>[] = [];
    if (kq.held.delete(job)) {
      // Granted ahead and not started: its grant goes back (only a lease's or a cool-down's holds anything).
      const grant = job.grant as FleetGrant;
      job.cancelHold?.();
      job.cancelHold = undefined;
      job.grant = undefined;
      if (holds(grant)) calls.push(this.#fleetCall(kq.key, (f) => f.release(kq.key, grant.id, true)));
    } else if (!kq.queue.remove(job)) return;
    const ticket = this.#ticketOf.get(job);
    if (ticket !== undefined && this.#tickets.delete(ticket)) {
      // Out of the fleet's queue too (a grant that crossed this comes back through fleetGranted).
      this.#dropped.add(ticket);
      calls.push(this.#fleetCall(kq.key, (f) => f.cancel(kq.key, ticket).finally(() => this.#dropped.delete(ticket))));
    }
    this.#ledger.queued--;
    job.cancelExpiry?.();
    job.cancelExpiry = undefined;
    job.unlisten();
    if (kq.queue.size === 0 && !kq.local && this.#fleet !== undefined) this.#fleet.idle(kq.key);
    this.#settleAfter(calls, () => {
      this.#ledger.settle(job, error, status);
      this.#ledger.checkIdle();
    });
    if (kq.queue.size === 0 && kq.cancelWake !== undefined) {
      kq.cancelWake();
      kq.cancelWake = undefined;
    } else if (wasHead && kq.queue.size > 0) this.#wakeNow(kq);
    this.#keys.dropIfIdle(kq);
    this.#ledger.checkIdle();
  }

  #abortQueued(job: Job): void {
    const kq = this.#keys.find(job.key);
    const signal = job.options.signal as AbortSignal;
    if (kq !== undefined) this.#drop(kq, job, abortReason(signal), "aborted");
  }

  #expire(job: Job): void {
    job.cancelExpiry = undefined;
    const kq = this.#keys.find(job.key);
    if (kq === undefined || !job.queued) return;
    this.#drop(
      kq,
      job,
      new WaitTimeoutError(`the job waited \`maxWaitMs\` (${job.options.maxWaitMs} ms) without a start`),
      "expired",
    );
  }

  /** Pauses `key` in this process until `until` (the store's block covers the fleet). */
  pauseLocally(key: string, ms: number, reason: string): void {
    const now = this.#clock.now();
    this.#pauses.set(key, now + ms, now);
    if (this.events.has("pause")) this.events.emit("pause", { key, ms, reason });
    // Jobs granted ahead wait for no store answer: the pause holds them back at once.
    this.#holdBack(key);
    // A sleeping key re-reads its pause when it wakes; a key deciding now sees it next turn.
  }

  /** Closed, and not draining: nothing more may start. */
  #closedHard(): boolean {
    return this.#closed && this.#closing !== undefined && !this.#draining;
  }

  #draining = false;

  /** Stops taking jobs; with `drain` runs what is queued, otherwise rejects it. Resolves once nothing runs. */
  close(options: { drain?: boolean } = {}): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    if (typeof options !== "object" || options === null) {
      return Promise.reject(new ArgumentError(`close takes { drain? } (got ${describeValue(options)})`));
    }
    for (const k of Object.keys(options)) {
      if (k !== "drain") return Promise.reject(new ArgumentError(`close: unknown option \`${k}\` (expected drain)`));
    }
    if (options.drain !== undefined && typeof options.drain !== "boolean") {
      return Promise.reject(
        new ArgumentError(`close: \`drain\` must be a boolean (got ${describeValue(options.drain)})`),
      );
    }
    this.#closed = true;
    this.#draining = options.drain === true;
    this.#closing = new Promise<void>((resolve) => {
      this.#ledger.whenIdle(() => {
        this.#limiters.rate?.close();
        this.#limiters.slots?.close();
        const done = () => {
          resolve();
          this.#whenClosed();
        };
        if (this.#fleet === undefined) done();
        else void this.#fleet.close().then(done);
      });
    });
    if (!this.#draining) {
      for (const kq of [...this.#keys.values()]) {
        for (const job of [...kq.queue, ...kq.held])
          this.#drop(kq, job, new ThrottleClosedError("the throttle closed before the job started"), "closed");
        kq.cancelWake?.();
        kq.cancelWake = undefined;
        this.#keys.dropIfIdle(kq);
      }
    }
    this.#ledger.checkIdle();
    return this.#closing;
  }
}
