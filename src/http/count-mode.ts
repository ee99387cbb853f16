/**
 * `count: "failed" | "succeeded"`: every request is checked (and charged) before the handler,
 * and those that should not count get their units back once the response is over — one extra
 * store call per counted-out request, none for the others. A response that never completes
 * (the handler threw before answering, the client went away) did not succeed — unless
 * `countOn: "handler"`: then what the handler answered decides, even after the client left.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { Store } from "../core/store.ts";
import type { Limiter } from "../limiter.ts";
import type { RateLimiterService } from "../service.ts";
import type { CountMode, CountOn, MaybePromise } from "./options.ts";

/** What a checked request was charged: enough to give it back. */
export interface Charge {
  readonly key: string;
  readonly cost: number;
  readonly tier: string | undefined;
  /** With a function `spec`: the resolved rule shape that charged it (opaque). */
  readonly shape?: object;
}

/**
 * Gives a charge back to the store. With the check's `decision`, its `at` is the refund's
 * receipt: a request answered late (after its unit left the window, or its window ended) gets
 * nothing back, and never frees another request's unit.
 */
export type Refund = (charge: Charge, decision?: Decision) => MaybePromise<Decision>;

/** The modes `count` accepts. */
export const COUNT_MODES: readonly CountMode[] = ["all", "failed", "succeeded"];

/** The moments `countOn` accepts. */
export const COUNT_ON: readonly CountOn[] = ["response", "handler"];

/** True when a request that ended so (`succeeded`) must be given back under `mode`. */
export function refunds(mode: CountMode, succeeded: boolean): boolean {
  return mode === "failed" ? succeeded : mode === "succeeded" ? !succeeded : false;
}

/** The refund of a `spec` limiter. */
export function limiterRefund(limiter: Limiter): Refund {
  return (charge, decision) =>
    limiter.refund(charge.key, decision?.at === undefined ? charge.cost : { cost: charge.cost, at: decision.at });
}

/** The refund of a service rule (the tier is part of the state's identity). */
export function serviceRefund(service: RateLimiterService<Store>, rule: string): Refund {
  return (charge, decision) =>
    service.refund(rule, charge.key, {
      cost: charge.cost,
      ...(charge.tier === undefined ? {} : { tier: charge.tier }),
      ...(decision?.at === undefined ? {} : { at: decision.at }),
    });
}
