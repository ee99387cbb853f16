/**
 * A rule compiled for stores: the members' steps, an optional ban, and the layout of the one
 * record a store keeps per (rule, key). Every store and test double builds records with
 * `createRecord` and decides with `decideRule` (src/core/decide-rule.ts); none of them knows how a
 * composite or a ban works.
 */
import type { Algorithm } from "../algorithms/algorithm.ts";
import { algorithmFor } from "../algorithms/index.ts";
import type { AlgorithmSpec } from "../algorithms/specs.ts";
import { type BanPolicy, type BanState, banFreshAt, freshBan } from "./ban.ts";

/** A rule ready for stores. */
export interface CompiledRule {
  /** The members' steps, in spec order; a request passes only if every member allows it. */
  readonly members: readonly Algorithm[];
  /** Escalation after repeated denials, if configured. */
  readonly ban: BanPolicy | undefined;
  /**
   * One member and no ban: the record is that member's state itself (the hot path, and the
   * fewest bytes per key). Otherwise the record is an array: the members' states in spec
   * order, then the ban's state when there is a ban.
   */
  readonly bare: boolean;
  /**
   * The member of a bare rule (undefined otherwise): the hot path calls its step straight away,
   * one field read where `bare` and `members[0]` took a truthiness test and an indexed load.
   */
  readonly one: Algorithm | undefined;
  /**
   * What the record means: the members' shapes (algorithm and window) and whether it holds a
   * ban. Stores keep records of different shapes apart, so state is never read under a spec it
   * was not written for; limits (and GCRA / leaky-bucket parameters) may change and keep the record.
   */
  readonly shape: string;
  /** The longest a record stays different from a fresh one after its last change. */
  readonly horizonMs: number;
}

/** One record per (rule, key): a member state (bare rules) or the members' states and the ban's. */
export type RuleRecord = unknown;

/** Compiles validated specs (and a validated ban policy) into a rule. */
export function compileRule(specs: readonly AlgorithmSpec[], ban?: BanPolicy): CompiledRule {
  const members = specs.map(algorithmFor);
  let horizonMs = 0;
  for (const m of members) horizonMs = Math.max(horizonMs, m.horizonMs);
  if (ban !== undefined) horizonMs = Math.max(horizonMs, ban.forMs, ban.withinMs);
  return {
    members,
    ban,
    bare: members.length === 1 && ban === undefined,
    one: members.length === 1 && ban === undefined ? members[0] : undefined,
    // The ban's span decides when a denial count stops mattering (a store's expiry), so it is
    // part of the shape; `after` and `forMs` may change and keep the record.
    shape: members.map((m) => m.shape).join("+") + (ban === undefined ? "" : `+ban/${ban.withinMs}`),
    horizonMs,
  };
}

/** A fresh key's record. */
export function createRecord(rule: CompiledRule): RuleRecord {
  const { members } = rule;
  if (rule.bare) return (members[0] as Algorithm).create();
  const record: unknown[] = members.map((m) => m.create());
  if (rule.ban !== undefined) record.push(freshBan());
  return record;
}

/** Member `i`'s state in `record`. */
export function memberState(rule: CompiledRule, record: RuleRecord, i: number): unknown {
  return rule.bare ? record : (record as unknown[])[i];
}

/** The ban's state in `record` (undefined for rules without a ban). */
export function banState(rule: CompiledRule, record: RuleRecord): BanState | undefined {
  return rule.ban === undefined ? undefined : ((record as unknown[])[rule.members.length] as BanState);
}

/** The instant from which `record` decides exactly like a fresh one (so a store may drop it). */
export function recordFreshAt(rule: CompiledRule, record: RuleRecord): number {
  const { members } = rule;
  if (rule.bare) return (members[0] as Algorithm).freshAt(record);
  let at = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < members.length; i++) {
    at = Math.max(at, (members[i] as Algorithm).freshAt((record as unknown[])[i]));
  }
  const ban = banState(rule, record);
  if (ban !== undefined) at = Math.max(at, banFreshAt(ban, rule.ban as BanPolicy));
  return at;
}
