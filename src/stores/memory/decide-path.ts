/**
 * A decision through the tiers, past the hot path (a live key in the `Map` tier): a penalty or a
 * block, a peek, or a key the `Map` tier does not hold, found in the compact tier, read back
 * from its rule's summary, or fresh.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { decideRule, type Operation, storesNewRecord } from "../../core/decide-rule.ts";
import { createRecord, recordFreshAt } from "../../core/rule.ts";
import { readState } from "../compact/dense-codec.ts";
import { Approx } from "./approx.ts";
import { decideApprox } from "./decide-approx.ts";
import { pinned } from "./pins.ts";
import type { StoreState } from "./store-state.ts";
import { mayHold } from "./summarise.ts";
import type { Table } from "./table.ts";
import { insert } from "./victim.ts";

/** `op` on `key` through the tiers (no block beside the record to consider). */
export function decide(
  s: StoreState,
  table: Table,
  key: string,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  if (op === "penalty" || op === "block") return force(s, table, key, cost, t, op);
  if (op !== "peek" && op !== "get") {
    // The hot path: a live key is one Map lookup and one decision.
    const record = table.get(key, t);
    if (record !== undefined) {
      if (record instanceof Approx) return decideApprox(s, table, key, record, cost, t, op, at);
      return decideRule(table.rule, record, t, cost, op, at);
    }
  }
  return miss(s, table, key, cost, t, op, at);
}

/**
 * A penalty or a block: decided like a check, then the table is told to keep the record until
 * it is fresh, since a forced take or a block may outlast the rule's horizon (the span its
 * generations rotate on) and dropping it sooner would forget units or a block.
 */
export function force(s: StoreState, table: Table, key: string, cost: number, t: number, op: Operation): Decision {
  const found = table.get(key, t);
  const result =
    found === undefined
      ? miss(s, table, key, cost, t, op)
      : found instanceof Approx
        ? decideApprox(s, table, key, found, cost, t, op)
        : decideRule(table.rule, found, t, cost, op);
  const record = table.find(key);
  if (record !== undefined) {
    table.adopt(key, record, recordFreshAt(table.rule, record instanceof Approx ? record.own : record));
  }
  return result;
}

/** A peek, or a key with no record in the `Map` tier: the compact tier, the summary, or a fresh record decides. */
export function miss(
  s: StoreState,
  table: Table,
  key: string,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  const rule = table.rule;
  if (op === "peek" || op === "get") {
    const found = table.find(key);
    if (found instanceof Approx) return decideApprox(s, table, key, found, cost, t, op);
    if (found !== undefined) return decideRule(rule, found, t, cost, op);
  }
  const compact = s.compact;
  const sketch = table.sketch;
  if ((compact === undefined || table.compactSize === 0) && sketch === undefined)
    return fresh(s, table, key, cost, t, op);
  const h = s.hash(key);
  if (compact !== undefined && table.compactSize > 0) {
    const slot = compact.find(table.index, h, t < table.restoredUntil);
    if (slot >= 0) {
      // Exact in the compact tier: back into the `Map` tier (it came back: it is not a one-shot key).
      const record = readState(rule, compact.words, compact.stateIndex(slot), compact.stateWords, table.frame);
      // A slot that held a bound of the key's state: its decisions say so until it is fresh.
      const held = compact.boundAt(slot) ? new Approx(record, h[0] as number, h[1] as number, rule, true) : record;
      if (op === "peek" || op === "get") {
        return held === record
          ? decideRule(rule, record, t, cost, op)
          : decideApprox(s, table, key, held as Approx, cost, t, op);
      }
      compact.remove(slot);
      table.compactSize--;
      s.compactHits++;
      insert(s, table, key, held, t, true);
      return held === record
        ? decideRule(rule, record, t, cost, op, at)
        : decideApprox(s, table, key, held as Approx, cost, t, op, at);
    }
  }
  const h1 = h[0] as number;
  const h2 = h[1] as number;
  if (sketch?.present(h1, h2, t) && mayHold(s, table, h1, h2, t) && !pinned(s, table, h1, h2, t)) {
    const approx = new Approx(createRecord(rule), h1, h2, rule);
    const result = decideApprox(s, table, key, approx, cost, t, op, at);
    if (op !== "peek" && op !== "get" && storesNewRecord(rule, op, result)) insert(s, table, key, approx, t);
    return result;
  }
  return fresh(s, table, key, cost, t, op);
}

/** A key nothing is known of: a fresh record decides (and is stored if it changed). */
function fresh(s: StoreState, table: Table, key: string, cost: number, t: number, op: Operation): Decision {
  const record = createRecord(table.rule);
  const result = decideRule(table.rule, record, t, cost, op);
  if (op !== "peek" && storesNewRecord(table.rule, op, result)) insert(s, table, key, record, t);
  return result;
}
