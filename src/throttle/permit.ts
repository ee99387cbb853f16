/**
 * A job's permit to start: a concurrency slot (one per job) taken first, then the job's `cost`
 * in rate units; a slot whose rate units are refused goes straight back, so neither limit is
 * ever exceeded and a refused job holds nothing while it waits. Synchronous on in-process
 * stores, a promise on remote ones.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { Limiter } from "../limiter.ts";

/** An allowed decision of a rule with a concurrency member: its lease. */
export interface LeaseHandle {
  /** Frees the slot (idempotent). */
  release(): unknown;
  /** Extends the lease by the rule's `leaseMs` from now. */
  renew(): unknown;
}

/** What `takePermit` answers. */
export type Permit =
  | { granted: true; lease: LeaseHandle | undefined; rate: Decision | undefined; delayMs: number }
  | { granted: false; retryAfterMs: number; slotBusy: boolean };

/** The two limiters of a throttle (both absent: only this process's count of running jobs limits). */
export interface PermitLimiters {
  slots: Limiter | undefined;
  rate: Limiter | undefined;
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === "function";
}

/** The lease an allowed slot decision holds (none when a store's failure policy allowed it). */
function leaseOf(d: Decision): LeaseHandle | undefined {
  const { release, renew } = d;
  return release === undefined || renew === undefined ? undefined : { release, renew };
}

/** Reads the rate answer once a slot (or no slot) is held. */
function afterRate(lease: LeaseHandle | undefined, rate: Decision): Permit | Promise<Permit> {
  if (rate.allowed) return { granted: true, lease, rate, delayMs: rate.delayMs };
  const denied: Permit = { granted: false, retryAfterMs: rate.retryAfterMs, slotBusy: false };
  if (lease === undefined) return denied;
  const released = lease.release();
  return isPromise(released) ? released.then(() => denied) : denied;
}

function afterSlot(limiters: PermitLimiters, key: string, cost: number, slot: Decision): Permit | Promise<Permit> {
  if (!slot.allowed) return { granted: false, retryAfterMs: slot.retryAfterMs, slotBusy: true };
  const lease = leaseOf(slot);
  if (limiters.rate === undefined) return { granted: true, lease, rate: undefined, delayMs: 0 };
  let rate: Decision | Promise<Decision>;
  try {
    rate = limiters.rate.tryAcquire(key, cost);
  } catch (error) {
    // The slot must not leak when the rate check fails outright.
    lease?.release();
    throw error;
  }
  if (!isPromise(rate)) return afterRate(lease, rate);
  return rate.then(
    (r) => afterRate(lease, r),
    async (error: unknown) => {
      await lease?.release();
      throw error;
    },
  );
}

/** The permit when only the local count limits (the runner checked it before asking). */
const LOCAL: Permit = Object.freeze({ granted: true, lease: undefined, rate: undefined, delayMs: 0 });

/** Takes a slot, then `cost` rate units, for `key`; nothing is held when it is refused. */
export function takePermit(limiters: PermitLimiters, key: string, cost: number): Permit | Promise<Permit> {
  if (limiters.slots === undefined) {
    if (limiters.rate === undefined) return LOCAL;
    const rate = limiters.rate.tryAcquire(key, cost);
    return isPromise(rate) ? rate.then((r) => afterRate(undefined, r)) : afterRate(undefined, rate);
  }
  const slot = limiters.slots.tryAcquire(key, 1);
  return isPromise(slot) ? slot.then((s) => afterSlot(limiters, key, cost, s)) : afterSlot(limiters, key, cost, slot);
}

/**
 * Gives back a permit whose job went away while it was being decided (aborted or expired
 * meanwhile): the rate units through a refund receipt (only what this check took), then the slot.
 */
export async function returnPermit(limiters: PermitLimiters, key: string, cost: number, permit: Permit): Promise<void> {
  if (!permit.granted) return;
  if (permit.rate !== undefined && limiters.rate !== undefined) {
    const at = permit.rate.at;
    await limiters.rate.refund(key, at === undefined ? cost : { cost, at });
  }
  await permit.lease?.release();
}

/** Whether a value is a promise (the permit of a remote store). */
export { isPromise };
