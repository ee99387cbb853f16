/**
 * A table's pack frame (packed-codec.ts): the base and range its packed compact records'
 * instants are measured from. Set at the table's first packed write; moved before a write whose
 * instants would fall out of it (every 13 horizons or so of the table's time, or when its
 * horizon grew past what the range was sized for), and then every packed slot of the table in a
 * 1-word tier is re-encoded within the new frame in one pass (a 2-word slot carries its own).
 * A record the new frame cannot hold is summarised; one that has become fresh is dropped.
 */
import { recordFreshAt } from "../../core/rule.ts";
import { readState, writeState, writtenExactly } from "../compact/dense-codec.ts";
import { frameHolds, newFrame, type PackFrame, packedRule } from "../compact/packed-codec.ts";
import type { StoreState } from "./store-state.ts";
import { summarise } from "./summarise.ts";
import type { Table } from "./table.ts";

/** The frame a packed write of `table` at `t` goes into (moved first when `t` is past it); undefined for rules that do not pack. */
export function frameFor(s: StoreState, table: Table, t: number): PackFrame | undefined {
  if (!packedRule(table.rule)) return undefined;
  const frame = table.frame;
  if (frame !== undefined && frameHolds(frame, t, table.horizonMs)) return frame;
  const moved = newFrame(t, table.horizonMs);
  table.frame = moved;
  const compact = s.compact;
  if (frame === undefined || compact === undefined || compact.stateWords !== 1 || table.compactSize === 0) return moved;
  const rule = table.rule;
  compact.forEach(table.index, (slot, h1, h2) => {
    const at = compact.stateIndex(slot);
    const record = readState(rule, compact.words, at, 1, frame);
    const bound = compact.boundAt(slot);
    if (recordFreshAt(rule, record) > t && writeState(rule, record, compact.words, at, 1, moved)) {
      if (!bound && !writtenExactly(rule, record, compact.words, at, 1, moved)) compact.markBound(slot);
      return;
    }
    compact.remove(slot);
    table.compactSize--;
    if (recordFreshAt(rule, record) > t) summarise(s, table, h1, h2, record, t);
  });
  return moved;
}
