/**
 * Blocks of a rule without a ban (core/block.ts), kept beside the records: exact, never evicted
 * nor summarised, counted against `maxKeys` until they end.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { blockedAnswer, costUnderBlock, underBlock } from "../../core/block.ts";
import type { Operation } from "../../core/decide-rule.ts";
import { StoreError } from "../../core/errors.ts";
import { decide } from "./decide-path.ts";
import type { StoreState } from "./store-state.ts";
import type { Table } from "./table.ts";

/**
 * `op` on a rule that keeps blocks beside its records (core/block.ts): a block sets the key's
 * end; a key still blocked runs what a blocked key runs (a refund or a penalty still reaches
 * its record) and is answered as banned; an ended block is forgotten.
 */
export function blockable(
  s: StoreState,
  table: Table,
  key: string,
  cost: number,
  t: number,
  op: Operation,
  at?: number,
): Decision {
  let until = table.blocks?.get(key);
  if (op === "block") {
    if (until === undefined) roomForBlock(s, table, t);
    until = t + cost;
    table.blocks ??= new Map();
    table.blocks.set(key, until);
  } else if (until !== undefined && !(until > t)) {
    const blocks = table.blocks as Map<string, number>;
    blocks.delete(key);
    if (blocks.size === 0) table.blocks = undefined;
    until = undefined;
  }
  if (until === undefined) return decide(s, table, key, cost, t, op, at);
  const inner = underBlock(op);
  return blockedAnswer(decide(s, table, key, costUnderBlock(op, cost), t, inner, at), t, until);
}

/**
 * Makes sure one more key can be blocked: under `maxKeys`, blocks (kept until they end, never
 * evicted nor summarised) count against it, across all rules, so a flood of distinct blocked
 * keys holds bounded memory. When full, the blocks of `table` that have ended go first; if none
 * has, the block is refused with a StoreError (dropping another key's block would lift it
 * silently), as the SharedMemoryStore does when a bucket has no room for one.
 */
function roomForBlock(s: StoreState, table: Table, t: number): void {
  if (!Number.isFinite(s.budget.maxKeys) || blockCount(s) < s.budget.maxKeys) return;
  unblock(table, t);
  if (blockCount(s) < s.budget.maxKeys) return;
  throw new StoreError(
    `MemoryStore: ${s.budget.maxKeys} keys are blocked already (\`maxKeys\`; blocks count against it until they end); create the store with a larger \`maxKeys\`, or give the rule a \`ban\``,
  );
}

/** Keys blocked beside their records now, across all rules (blocks are rare: a walk of the rules). */
function blockCount(s: StoreState): number {
  let n = 0;
  for (const table of s.tables.values()) n += table.blocks?.size ?? 0;
  return n;
}

/** Forgets the blocks of `table` that have ended by `now`. */
export function unblock(table: Table, now: number): void {
  const blocks = table.blocks;
  if (blocks === undefined) return;
  for (const [key, until] of blocks) if (!(until > now)) blocks.delete(key);
  if (blocks.size === 0) table.blocks = undefined;
}
