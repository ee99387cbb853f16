/**
 * The fleet limit of `loadShed({ store })`: requests in flight across every process sharing
 * `store`, kept as leases of the concurrency spec (`{ algorithm: "concurrency" }`), so a process
 * that dies mid-request gives its slots back after `leaseMs`. The reserve holds fleet-wide as
 * nested pools: every request takes a lease in the pool of all priorities, and one in each pool
 * that leaves out a more critical level it may not use (with `reserve: { 1: 0.2 }`, priorities
 * 2–9 also take one in a pool of 80% of the limit). A refusal in any pool gives back the others.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { Store } from "../core/store.ts";
import { createLimiter, type Limiter } from "../limiter.ts";
import { allowances, heldShares, type Reserve } from "./admission.ts";
import { PRIORITY_LEVELS } from "./pressure.ts";

/** Gives back a fleet admission's leases. */
export type FleetRelease = () => void;

/** The one key every pool counts under (a pool is its own limiter, named after its level). */
const KEY = "in-flight";

/** A `Decision | Promise<Decision>` to the value, calling `next` synchronously when it is a plain value. */
function then<T, R>(value: T | Promise<T>, next: (value: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** Fleet-wide requests in flight on a shared store. */
export class FleetLimit {
  /** For each priority, the pools it takes a lease in, narrowest first. */
  readonly #pools: Limiter[][];

  constructor(store: Store, name: string, limit: number, reserve: Reserve, leaseMs: number) {
    const allowed = allowances(limit, heldShares(reserve));
    const pools: Limiter[] = [];
    this.#pools = [];
    for (let priority = 0; priority < PRIORITY_LEVELS; priority++) {
      const allowance = allowed[priority] as number;
      // A new pool where the allowance steps down: it counts this level and every less critical one.
      if (priority === 0 || allowance < (allowed[priority - 1] as number)) {
        pools.unshift(
          createLimiter(
            // Levels allowed 0 slots never get here: the shedder refuses them before the fleet.
            { algorithm: "concurrency", limit: Math.max(1, allowance), leaseMs },
            { store, name: `sluice:shed:${name}:${priority}` },
          ),
        );
      }
      this.#pools.push([...pools]);
    }
  }

  /** The leases of an admission at `priority`, or undefined when a pool is full (a promise on an async store). */
  take(priority: number): FleetRelease | undefined | Promise<FleetRelease | undefined> {
    const pools = this.#pools[priority] as Limiter[];
    const held: Decision[] = [];
    const giveBack = () => {
      for (const d of held) {
        const released = d.release?.();
        // A release that fails leaves the lease to expire after leaseMs: nothing to do here.
        if (released instanceof Promise) released.catch(() => {});
      }
    };
    const step = (i: number): FleetRelease | undefined | Promise<FleetRelease | undefined> => {
      if (i === pools.length) return giveBack;
      let decided: Decision | Promise<Decision>;
      try {
        decided = (pools[i] as Limiter).tryAcquire(KEY);
      } catch (error) {
        giveBack();
        throw error;
      }
      if (decided instanceof Promise) {
        decided = decided.catch((error: unknown) => {
          giveBack();
          throw error;
        });
      }
      return then(decided, (d) => {
        if (!d.allowed) {
          giveBack();
          return undefined;
        }
        held.push(d);
        return step(i + 1);
      });
    };
    return step(0);
  }
}
