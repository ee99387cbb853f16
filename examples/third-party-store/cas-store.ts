/**
 * A third-party sluice store on a compare-and-set key-value service, written only against the
 * package's public entries: `sluice` (the Store contract, the system clock) and `sluice/store`
 * (the decision path and the record codec). Each decision reads the key's record, decides it
 * with `decideRule`, and writes it back with compare-and-set, retrying when another call wrote
 * in between: optimistic concurrency makes the read-decide-write atomic.
 */
import { type BoundRule, type Decision, type RuleBinding, type Store, systemClock } from "sluice";
import { createRecord, decideRule, recordFromText, recordToText, storesNewRecord } from "sluice/store";
import type { CasMap } from "./cas-map.ts";

/** A Store keeping one record per (rule id, rule shape, key) in a CasMap. */
export class CasStore implements Store {
  /** Decisions are async (every call is a round trip). */
  readonly synchronous = false;
  /** The decision path decides penalty, block and get too. */
  readonly flexibleCalls = true;
  readonly #map: CasMap;

  constructor(map: CasMap) {
    this.#map = map;
  }

  bind({ id, rule, clock }: RuleBinding): BoundRule {
    const map = this.#map;
    // Records of another shape (a new window, other members) are kept apart, never misread.
    const itemKey = (key: string) => JSON.stringify([id, rule.shape, key]);
    return {
      async check(key, cost, now, op, at): Promise<Decision> {
        const t = now ?? (clock ?? systemClock).now();
        for (;;) {
          const item = await map.get(itemKey(key));
          const record = item === undefined ? createRecord(rule) : recordFromText(rule, item.value);
          const decision = decideRule(rule, record, t, cost, op, at);
          const text = recordToText(record);
          // Nothing to write: a peek, a denial, or a new key the operation did not change.
          if (item === undefined ? !storesNewRecord(rule, op, decision) : text === item.value) return decision;
          if (await map.compareAndSet(itemKey(key), item?.version, text)) return decision;
          // Another call wrote first: decide again on what it wrote.
        }
      },
      async reset(key) {
        await map.delete(itemKey(key));
      },
      release() {},
    };
  }
}
