/**
 * `createThrottle`: queue instead of reject. Jobs wait in per-key priority queues and start when
 * the key's `rate` and `concurrency` allow, on any store: a shared store (Redis, the cluster
 * store, shared memory) makes the limits exact for the whole fleet. See docs/throttle.md.
 */

import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, ConfigError } from "../core/errors.ts";
import { hasFleetQueue } from "../core/fleet-queue.ts";
import { identityText } from "../core/identity.ts";
import { shareOf } from "../core/share.ts";
import type { AlgorithmSpec } from "../core/spec.ts";
import { specLimit } from "../core/spec.ts";
import type { Store } from "../core/store.ts";
import { createLimiter, type LimiterOptions, limiterIdentity } from "../limiter.ts";
import { MemoryStore } from "../stores/memory/memory-store.ts";
import { AdaptiveRate } from "./adaptive-rate-store.ts";
import { type JobOutcome, outcomeIterator, type ThrottleEvents } from "./events.ts";
import { FleetLink } from "./fleet-link.ts";
import type { Task } from "./job.ts";
import type { ThrottleStats } from "./ledger.ts";
import { type ResolvedOptions, resolveThrottleOptions, type ScheduleOptions, type ThrottleOptions } from "./options.ts";
import { type FleetFallback, ThrottleRunner } from "./runner.ts";
import { Upstream } from "./upstream.ts";
import type { HeadersLike, ResponseLike, UpstreamHint } from "./upstream-headers.ts";

/**
 * Longest a dead process's waiting tickets hold their place in a fleet queue kept alive by
 * heartbeats (a Cluster: every third of it; on standalone Redis a process is alive while its
 * subscription is, and this paces only its rescue calls): short, whatever `leaseMs`, since a
 * dead head blocks its whole key.
 */
const MAX_OWNER_TTL_MS = 10_000;

/** This process's share of the limits, on a MemoryStore of its own (`onError: { instances }`). */
function fallbackOf(opts: ResolvedOptions): FleetFallback | undefined {
  if (opts.onError === "wait") return undefined;
  const n = opts.onError.instances;
  const o: LimiterOptions = { store: new MemoryStore() };
  if (opts.clock !== undefined) o.clock = opts.clock;
  return {
    limiters: {
      rate: opts.rateSpec === undefined ? undefined : createLimiter(shareOf(opts.rateSpec, n), o),
      slots: undefined,
    },
    concurrency: opts.concurrency === undefined ? undefined : Math.max(1, Math.floor(opts.concurrency / n)),
  };
}

/** A throttle: `schedule` work, and it runs when the limits allow. */
export interface Throttle {
  /** Runs `task({ signal })` once its key's limits allow; resolves with what it returns. */
  schedule<R>(task: Task<R>, options?: ScheduleOptions): Promise<R>;
  /** `fn` throttled: each call is scheduled with `options`. */
  wrap<A extends unknown[], R>(
    fn: (...args: A) => R | PromiseLike<R>,
    options?: ScheduleOptions,
  ): (...args: A) => Promise<R>;
  /**
   * Schedules a `fetch` and obeys its answer: a 429/503 with `Retry-After`, `RateLimit` or
   * `X-RateLimit-*` pauses the key for the fleet; a 429 is sent again after the pause, up to `retries` times.
   */
  fetch(input: string | URL | Request, init?: RequestInit, options?: ScheduleOptions): Promise<Response>;
  /** Reads another client's answer (a response, or its headers) for `key` and pauses the key as it asks. */
  observe(key: string, answer: ResponseLike | HeadersLike): Promise<UpstreamHint>;
  /** Starts no job of `key` for `ms`, in this process and, on a store with `block`, the fleet. */
  pause(key: string, ms: number): Promise<void>;
  /** This process's jobs: `{ queued, running, done, failed, expired }`. */
  stats(): ThrottleStats;
  /** Listens to an event (`queued`, `start`, `outcome`, `pause`, `idle`, `error`). */
  on<E extends keyof ThrottleEvents>(name: E, listener: (event: ThrottleEvents[E]) => void): this;
  /** Removes a listener. */
  off<E extends keyof ThrottleEvents>(name: E, listener: (event: ThrottleEvents[E]) => void): this;
  /** Every job outcome from now until the throttle has closed, as an async iterator. */
  outcomes(): AsyncIterableIterator<JobOutcome>;
  /** Stops taking jobs; `drain: true` runs what is queued, otherwise it is rejected. Resolves once nothing runs. */
  close(options?: { drain?: boolean }): Promise<void>;
}

/**
 * Builds a throttle. Needs `rate` (a spec or composite), `concurrency`, or both.
 *
 * @example
 * const throttle = createThrottle({ rate: { algorithm: "gcra", limit: 10, periodMs: 1000 }, concurrency: 2 });
 * const user = await throttle.schedule(() => api.getUser(id));
 */
export function createThrottle(options: ThrottleOptions): Throttle {
  const opts = resolveThrottleOptions(options);
  if (opts.rate?.some((s) => s.algorithm === "concurrency")) {
    throw new ConfigError(
      "rate",
      "createThrottle: a concurrency limit goes in `concurrency`, not in `rate`",
      options.rate,
    );
  }
  const store: Store = opts.store ?? new MemoryStore();
  const base = (suffix: string): LimiterOptions => {
    const o: LimiterOptions = { store };
    if (opts.clock !== undefined) o.clock = opts.clock;
    if (opts.name !== undefined) o.name = `throttle:${opts.name}${suffix}`;
    return o;
  };
  const plainRate = opts.rateSpec === undefined ? undefined : createLimiter(opts.rateSpec, base(""));
  // The adaptive rate spends the same rate's units faster after 429s (adaptive-rate-store.ts).
  const adaptive =
    opts.adaptive === undefined || opts.rate === undefined
      ? undefined
      : new AdaptiveRate(store, opts.name, opts.clock, opts.adaptive, Math.min(...opts.rate.map(specLimit)));
  const rate = adaptive === undefined || plainRate === undefined ? plainRate : adaptive.wrap(plainRate);
  // On the throttle's own MemoryStore no other process can hold a slot, and this process's death
  // frees them all: the count of jobs running here is exact, so no lease is taken (a lease costs
  // a store call to take, renew and release). A store passed in may be shared: leases there.
  const slots =
    opts.concurrency === undefined || opts.store === undefined
      ? undefined
      : createLimiter(
          { algorithm: "concurrency", limit: opts.concurrency, leaseMs: opts.leaseMs },
          base(":concurrency"),
        );
  const runner = new ThrottleRunner(opts, { rate, slots }, opts.store !== undefined);
  if (adaptive !== undefined) void runner.closed.then(() => adaptive.close());
  // A store that holds a queue for the fleet (Redis) decides every start there: one queue, in
  // priority then arrival order across processes, handed off by the store (docs/throttle.md).
  if (opts.store !== undefined && hasFleetQueue(store) && opts.fleet) {
    // The same store ids as the limiters above, so the queue decides on their records.
    const id = (suffix: string, specs: readonly AlgorithmSpec[]) =>
      identityText(limiterIdentity(base(suffix).name, specs));
    const link = new FleetLink(
      store,
      {
        rate: rate === undefined ? undefined : { id: id("", rate.specs), specs: rate.specs },
        concurrency:
          slots === undefined ? undefined : { id: id(":concurrency", slots.specs), spec: slots.specs[0] as never },
        // Half a lease: a dead process (heartbeats by deadline, a Cluster) is dead before the
        // leases it last renewed expire, so its waiting tickets never take a freed slot.
        ownerTtlMs: Math.max(1, Math.min(Math.floor(opts.leaseMs / 2), MAX_OWNER_TTL_MS)),
        liveness: "subscription",
        lookaheadMs: opts.lookaheadMs,
      },
      runner.clock,
      {
        waiting: (key) => runner.fleetWaiting(key),
        idle: (key) => runner.fleetIdle(key),
        granted: (key, grant) => runner.fleetGranted(key, grant),
        paused: (key, ms, until) => runner.fleetPaused(key, ms, until),
        coolFreed: (key) => runner.fleetCoolFreed(key),
        failed: (key, error) => {
          runner.events.emit("error", { key, error });
          runner.fleetFailed(key);
        },
      },
      (error) => runner.events.emit("error", { key: "", error }),
    );
    runner.useFleet(
      link,
      fallbackOf(opts),
      adaptive === undefined ? undefined : (key, cost) => adaptive.take(key, cost),
    );
  }
  const upstream = new Upstream(runner, opts, store, adaptive);
  const throttle: Throttle = {
    schedule: (task, o) => runner.schedule(task, o),
    wrap: (fn, o) => {
      // Checked here, not at the first call: a wrapped non-function would only fail as a job.
      if (typeof fn !== "function")
        throw new ArgumentError(`wrap: \`fn\` must be a function (got ${describeValue(fn)})`);
      return (...args) => runner.schedule(() => fn(...args), o);
    },
    fetch: (input, init, o) => upstream.fetch(input, init, o),
    observe: (key, answer) => upstream.observe(key, answer),
    pause: async (key, ms) => {
      await upstream.pause(key, ms);
    },
    stats: () => runner.stats(),
    on(name, listener) {
      runner.events.on(name, listener);
      return this;
    },
    off(name, listener) {
      runner.events.off(name, listener);
      return this;
    },
    outcomes: () => outcomeIterator(runner.events, runner.closed),
    close: (o) => runner.close(o),
  };
  // Tests reach the engine to check that idle keys are dropped.
  Object.defineProperty(throttle, "runner", { value: runner, enumerable: false });
  return throttle;
}
