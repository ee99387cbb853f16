/**
 * A third-party sluice store on a compare-and-set key-value service, written only against the
 * package's public entries: `sluice` (the Store contract, the system clock) and `sluice/store`
 * (the decision path and the record codec). Each decision reads the key's record, decides it
 * with `decideRule`, and writes it back with compare-and-set, retrying when another call wrote
 * in between: optimistic concurrency makes the read-decide-write atomic.
 */
import { type BoundRule, type Decision, type RuleBinding, type Store, systemClock } from "sluice";
import {
  blocksBeside,
  createRecord,
  decideBlocked,
  decideRule,
  recordFromText,
  recordToText,
  storesNewRecord,
} from "sluice/store";
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
          // A block on a rule without a ban rides in front of the record's text: "B<until> <record>".
          const [blockText, recordText] = item === undefined ? [] : splitBlock(item.value);
          const record = recordText === undefined ? createRecord(rule) : recordFromText(rule, recordText);
          let until = blockText === undefined ? Number.NEGATIVE_INFINITY : Number(blockText);
          if (op === "block" && blocksBeside(rule)) until = t + cost;
          const blocked = until > t;
          const decision = blocked
            ? decideBlocked(rule, record, t, cost, op, until, at)
            : decideRule(rule, record, t, cost, op, at);
          const text = (blocked ? `B${until} ` : "") + recordToText(record);
          // Nothing to write: a peek, a denial, or a new key the operation did not change.
          if (item === undefined ? !(blocked || storesNewRecord(rule, op, decision)) : text === item.value) {
            return decision;
          }
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

/** A stored value as [block end, record text] (no block: [undefined, text]); JSON never starts with "B". */
function splitBlock(value: string): [string | undefined, string] {
  if (!value.startsWith("B")) return [undefined, value];
  const space = value.indexOf(" ");
  return [value.slice(1, space), value.slice(space + 1)];
}
