/**
 * A reference store for parity with a clock that steps back: one record per (rule, key) on a
 * plain Map, never dropped, decided by the core's `decideRule` like every store. The memory
 * store drops a record once it is equivalent to a fresh key *for later instants*, which is
 * exact while time moves forward; a clock that then steps back would see the dropped state
 * missing. Peeks and denials leave a record untouched, so decisions run on the stored records.
 */
import type { Decision, Store } from "sluice";
import { blocksBeside, decideBlocked } from "../../src/core/block.ts";
import { decideRule, type Operation, storesNewRecord } from "../../src/core/decide-rule.ts";
import { createRecord } from "../../src/core/rule.ts";

/** Records on a Map, decided by `decideRule` (and blocks beside them, by `decideBlocked`). */
export function pureStore(): Store {
  const tables = new Map<string, Map<string, unknown>>();
  const blockTables = new Map<string, Map<string, number>>();
  return {
    synchronous: true,
    flexibleCalls: true,
    bind({ id, rule }) {
      const tableId = `${id}\u0000${rule.shape}`;
      let records = tables.get(tableId);
      if (records === undefined) tables.set(tableId, (records = new Map()));
      const table = records;
      // Blocks on a rule without a ban, beside the records (src/core/block.ts), dropped as Redis drops them.
      let blocks = blockTables.get(tableId);
      if (blocks === undefined) blockTables.set(tableId, (blocks = new Map<string, number>()));
      const decide = (key: string, record: unknown, now: number, cost: number, op: Operation): Decision => {
        if (op === "block" && blocksBeside(rule)) blocks.set(key, now + cost);
        const until = blocks.get(key);
        if (until !== undefined && until > now) return decideBlocked(rule, record, now, cost, op, until);
        const result = decideRule(rule, record, now, cost, op);
        // An ended block is forgotten once the record is rewritten (Redis writes it back as the
        // plain string), as the MemoryStore forgets it; until then a clock stepping back finds it.
        if (until !== undefined && (op === "refund" || op === "penalty" || (op === "check" && result.allowed))) {
          blocks.delete(key);
        }
        return result;
      };
      return {
        check(key, cost, now, op): Decision {
          const found = table.get(key);
          if (found !== undefined) return decide(key, found, now as number, cost, op);
          // A new record is kept only when the operation changed it, as every store does (a
          // refund of a fresh token bucket restamps it, which must not outlive a capacity change).
          const record = createRecord(rule);
          const result = decide(key, record, now as number, cost, op);
          if (storesNewRecord(rule, op, result)) table.set(key, record);
          return result;
        },
        reset(key) {
          table.delete(key);
          blocks.delete(key);
        },
        release() {},
      };
    },
  };
}
