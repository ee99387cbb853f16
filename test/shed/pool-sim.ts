/**
 * A simulated overloaded service for the adaptive limit's property tests: a pool of `slots`
 * slots each held `holdMs` (±`jitter`), FIFO past that (a database's connections, a worker
 * pool), offered an open-loop load at even intervals, as bench/shed.mjs drives the real one.
 * Time moves in steps of `stepMs` on a ManualClock; a `Shedder` admits at arrival and is
 * released at completion, as the middleware does. A busy host is modelled by stalls: now and
 * then the process runs nothing for a while, then handles every arrival and completion that
 * came meanwhile (latencies include the stall, as a client sees it). The pool's capacity can
 * drop (or rise) at once mid-run. Deterministic per seed.
 */
import { ManualClock } from "../../src/core/clock.ts";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import type { LoadShedOptions } from "../../src/shed/options.ts";
import { type Release, Shedder } from "../../src/shed/shedder.ts";

/** The simulated service and its load. */
export interface PoolModel {
  slots: number;
  holdMs: number;
  /** Each hold is `holdMs` × (1 ± jitter), uniformly (default 0.1; 0.5 is latency noise of ±50%). */
  jitter?: number;
  /** Chance per ms that a stall starts (default 0: a quiet host). */
  stallRate?: number;
  /** Longest stall, ms; each is uniform in [0, stallMs] (default 0). */
  stallMs?: number;
  /** From `atMs` on, the pool has `slots` slots held `holdMs` each (a sudden capacity change). */
  change?: { atMs: number; slots: number; holdMs: number };
}

/** A critical request the shedder refused, and the reserve it was refused against. */
export interface CriticalShed {
  /** When (ms). */
  at: number;
  /** Critical requests in flight then (admitted, not yet finished). */
  inFlight: number;
  /** The slots the reserve held for critical requests then: ⌈share × the shedder's steady limit⌉. */
  reserved: number;
}

/** What one run measured. */
export interface PoolRun {
  /** Latencies (ms) of admitted requests that completed, in completion order. */
  latencies: number[];
  /** When each of `latencies`' requests arrived (ms). */
  arrivals: number[];
  /** Completed requests a second over the pool's capacity (slots / holdMs, before any change). */
  goodput: number;
  /** Critical requests offered and shed. */
  criticalOffered: number;
  criticalShed: number;
  /** When each critical request was shed (ms). */
  criticalShedAt: number[];
  /** Each critical shed, with the critical requests in flight and the reserve's slots then. */
  criticalSheds: CriticalShed[];
  /** The most critical requests in flight at once. */
  criticalPeak: number;
  /** The fewest slots the reserve held for critical requests at any critical arrival (Infinity without a shedder). */
  reservedLow: number;
  /** The shedder's limit at each step of 100 ms. */
  limits: (number | undefined)[];
}

const STEP_MS = 0.25;

/**
 * Runs `seconds` of `model` offered `factor` × its capacity, every `criticalEvery`-th request
 * critical (priority 0, the rest 5; 0: none), through `loadShed(options)`, or no shedding
 * without options. The first `warmupSeconds` are left out of the latencies and goodput.
 */
export function runPool(
  model: PoolModel,
  options: {
    factor: number;
    seconds: number;
    seed: number;
    shed?: LoadShedOptions<{ priority: number }>;
    criticalEvery?: number;
    warmupSeconds?: number;
    /** Closed loop: `slots` clients each sending the next request when one completes (the unloaded run). */
    closed?: boolean;
    /**
     * The first `calmMs` run the closed loop (the unloaded load, as bench/shed.mjs warms each
     * server), the open loop at `factor` from then on: a flood meeting a limit the calm load set.
     */
    calmMs?: number;
  },
): PoolRun {
  const random = mulberry32(options.seed);
  const clock = new ManualClock(0);
  // The adaptive limit jitters its probes with Math.random: seeded too, so a run replays.
  const jitter = mulberry32(options.seed ^ 0x5eed);
  const mathRandom = Math.random;
  Math.random = jitter;
  try {
    return simulate(model, options, random, clock);
  } finally {
    Math.random = mathRandom;
  }
}

function simulate(
  model: PoolModel,
  options: Parameters<typeof runPool>[1],
  random: () => number,
  clock: ManualClock,
): PoolRun {
  const shedder =
    options.shed === undefined
      ? undefined
      : new Shedder<{ priority: number }>({ ...options.shed, clock, priority: (r) => r.priority });
  const share = options.shed?.reserve?.[0] ?? 0;
  const spread = model.jitter ?? 0.1;
  const capacityPerMs = model.slots / model.holdMs;
  const intervalMs = 1 / (capacityPerMs * options.factor);
  const endMs = options.seconds * 1000;
  const warmupMs = (options.warmupSeconds ?? 1) * 1000;
  let slots = model.slots;
  let holdMs = model.holdMs;
  let free = slots;
  let changed = false;
  type Job = { arrived: number; critical: boolean; release: Release | undefined };
  const queue: Job[] = [];
  const running: (Job & { done: number })[] = [];
  const latencies: number[] = [];
  const arrivals: number[] = [];
  const limits: (number | undefined)[] = [];
  let completed = 0;
  let sent = 0;
  let criticalOffered = 0;
  let criticalShed = 0;
  let criticalInFlight = 0;
  let criticalPeak = 0;
  let reservedLow = Number.POSITIVE_INFINITY;
  const criticalShedAt: number[] = [];
  const criticalSheds: CriticalShed[] = [];
  let stallUntil = 0;
  const calmMs = options.closed === true ? Number.POSITIVE_INFINITY : (options.calmMs ?? 0);
  let nextArrival = Number.isFinite(calmMs) ? calmMs : 0;
  const hold = () => holdMs * (1 + spread * (2 * random() - 1));
  const startOrQueue = (job: Job, now: number) => {
    if (free > 0) {
      free--;
      running.push({ ...job, done: now + hold() });
    } else queue.push(job);
  };
  const arrive = (arrived: number, now: number) => {
    const critical =
      options.criticalEvery !== undefined && options.criticalEvery > 0 && sent % options.criticalEvery === 0;
    sent++;
    const reserved =
      shedder === undefined
        ? Number.POSITIVE_INFINITY
        : Math.ceil(share * (shedder.steadyLimit ?? Number.POSITIVE_INFINITY) - 1e-9);
    if (critical) {
      criticalOffered++;
      reservedLow = Math.min(reservedLow, reserved);
    }
    const release = shedder?.admit({ priority: critical ? 0 : 5 }) as Release | undefined;
    if (shedder !== undefined && release === undefined) {
      if (critical) {
        criticalShed++;
        criticalShedAt.push(now);
        criticalSheds.push({ at: now, inFlight: criticalInFlight, reserved });
      }
      return;
    }
    if (critical) criticalPeak = Math.max(criticalPeak, ++criticalInFlight);
    startOrQueue({ arrived, critical, release }, now);
  };
  if (calmMs > 0) for (let i = 0; i < model.slots; i++) arrive(0, 0);
  for (let step = 0; step * STEP_MS < endMs; step++) {
    const now = step * STEP_MS;
    if (step % (100 / STEP_MS) === 0) limits.push(shedder?.stats().limit);
    const change = model.change;
    if (change !== undefined && !changed && now >= change.atMs) {
      changed = true;
      // Slots taken away are given back by no one: the pool runs below zero free until enough finish.
      free += change.slots - slots;
      slots = change.slots;
      holdMs = change.holdMs;
    }
    if (now >= stallUntil && model.stallRate !== undefined && random() < model.stallRate * STEP_MS) {
      stallUntil = now + random() * (model.stallMs ?? 0);
    }
    if (now < stallUntil) continue;
    clock.set(now);
    // Completions first (the slots they free go to the queue), then arrivals.
    for (let i = running.length - 1; i >= 0; i--) {
      const job = running[i] as (typeof running)[number];
      if (job.done > now) continue;
      running.splice(i, 1);
      if (job.arrived >= warmupMs) {
        latencies.push(now - job.arrived);
        arrivals.push(job.arrived);
        completed++;
      }
      if (job.critical) criticalInFlight--;
      job.release?.();
      free++;
      if (now < calmMs && now < endMs) arrive(now, now);
    }
    while (free > 0 && queue.length > 0) startOrQueue(queue.shift() as Job, now);
    if (now >= calmMs) {
      for (; nextArrival <= now; nextArrival += intervalMs) arrive(nextArrival, now);
    }
  }
  const goodput = completed / ((endMs - warmupMs) * capacityPerMs);
  return {
    latencies,
    arrivals,
    goodput,
    criticalOffered,
    criticalShed,
    criticalShedAt,
    criticalSheds,
    criticalPeak,
    reservedLow,
    limits,
  };
}

/** The `q` quantile (0–1) of `values`. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
