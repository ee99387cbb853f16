/**
 * Several checks decided as one (an Envoy request's descriptors): if any is denied, none
 * consumes. Each check is taken in turn and, as soon as one is denied, the ones already taken
 * are refunded. A check refunded at once leaves no trace (test/properties/cap.test.ts), so the
 * outcome is exactly "all or nothing", and two checks on one counter are counted together.
 * In-process this runs in one JS turn: nothing can interleave. On a shared store the checks of
 * the group go out together, and a denied group's units are back after one more round trip;
 * meanwhile another request may see them taken (it can only be denied, never over-admitted).
 * A taken check of a leased rule (a concurrency member) is also released: a refund gives back
 * rate units only, and a refused group must hold no lease (SPEC §16, all or nothing).
 */
import type { Decision } from "./algorithms/decision.ts";
import type { Limiter } from "./limiter.ts";

/** One check of a group, with the limiter (rule and tier) it was resolved to. */
export interface GroupItem {
  limiter: Limiter;
  key: string;
  cost: number;
}

/**
 * When every item is allowed: the decisions of the takes. Otherwise the denied items keep
 * their denial (decided with the items before them taken, so two items that only fit apart
 * show the second as over), and every other item gets what `peek` says once every take is
 * rolled back.
 */
export function decideAllSync(items: readonly GroupItem[]): Decision[] {
  const taken: Decision[] = [];
  for (const item of items) {
    const d = item.limiter.tryAcquire(item.key, item.cost) as Decision;
    if (!d.allowed) {
      rollBack(items, taken);
      return items.map((i, n) => (n === taken.length ? d : (i.limiter.peek(i.key, i.cost) as Decision)));
    }
    taken.push(d);
  }
  return taken;
}

/** `decideAllSync` for async stores: the takes go out in one tick (one batch on Redis). */
export async function decideAllAsync(items: readonly GroupItem[]): Promise<Decision[]> {
  const taken = await Promise.all(items.map((i) => i.limiter.tryAcquire(i.key, i.cost) as Promise<Decision>));
  if (taken.every((d) => d.allowed)) return taken;
  await Promise.all(
    items.map((i, n) => {
      const d = taken[n];
      return d?.allowed ? Promise.all([i.limiter.refund(i.key, i.cost), d.release?.()]) : undefined;
    }),
  );
  return Promise.all(
    items.map((i, n) =>
      taken[n]?.allowed ? (i.limiter.peek(i.key, i.cost) as Promise<Decision>) : (taken[n] as Decision),
    ),
  );
}

/** Gives back the takes of a denied group, newest first: rate units by refund, leases by release. */
function rollBack(items: readonly GroupItem[], taken: readonly Decision[]): void {
  for (let n = taken.length - 1; n >= 0; n--) {
    const item = items[n] as GroupItem;
    item.limiter.refund(item.key, item.cost);
    taken[n]?.release?.();
  }
}
