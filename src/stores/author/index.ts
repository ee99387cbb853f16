/**
 * `sluice/store`: what a store author needs to write a `Store` (a database, a key-value service,
 * Durable Objects): the one decision path and the record codecs. A store keeps one record per
 * (binding id, rule shape, key), runs `decideRule` on it atomically, and writes it back when
 * `storesNewRecord` (a new key) or the decision changed it. A `block` on a rule without a ban
 * (`blocksBeside`) is kept beside the record, wherever the store likes, and decided by
 * `decideBlocked` while it runs (see examples/third-party-store). Prove it with `sluice/testing`.
 * A store over a network answers its failures with the remote-store pieces (remote-kit.ts).
 */
export type { Decision } from "../../algorithms/decision.ts";
export { blocksBeside, decideBlocked } from "../../core/block.ts";
export { decideRule, isFreshAnswer, type Operation, storesNewRecord } from "../../core/decide-rule.ts";
export { type CompiledRule, createRecord, type RuleRecord, recordFreshAt } from "../../core/rule.ts";
export type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
export { recordFromText, recordToText } from "./record-text.ts";
export * from "./remote-kit.ts";
