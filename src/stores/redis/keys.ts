/**
 * Key layout. A (rule, key) record, every member's state and the ban's, is ONE Redis key:
 * `prefix{tag}rule` + the user key, verbatim (unless UTF-8 cannot carry it: recordKeyOf below):
 * - `tag` (1 to 4 base-36 characters) is a hash of the rule and the user key chosen by sluice:
 *   Redis Cluster hashes only what is inside the first `{...}`, so braces inside a user key
 *   (which comes after our tag) can neither move a key to another slot nor merge two keys,
 *   and a rule's keys spread over the cluster.
 * - `rule` is a fixed-width (8 characters, 48-bit) digest of the rule id and the rule's shape
 *   (its members' algorithms and windows, and whether it has a ban: `CompiledRule.shape`), so
 *   rules and tiers keep apart and a record is only ever read under the shape it was written
 *   for: a rule updated to another window, algorithm or member list starts from a fresh
 *   record, exactly as the memory store, which keys its tables by (id, shape).
 * Fixed widths and the verbatim user key at the end make distinct (rule, shape, key) triples
 * distinct keys. Short keys matter: they are most of what a key costs in Redis memory.
 */

import { base64url, sha256 } from "../../core/digest.ts";
import type { AlgorithmName, AlgorithmSpec } from "../../core/spec.ts";

/** One-letter algorithm codes, shared with the Lua twins (`ALGO.<code>`). */
export const ALGORITHM_CODES: Record<AlgorithmName, string> = {
  "fixed-window": "f",
  "sliding-log": "l",
  "sliding-window": "w",
  "token-bucket": "t",
  gcra: "g",
  "leaky-bucket": "b",
  concurrency: "q",
};

/** The code of a member's Lua twin: its algorithm's, or `F` for fixed windows anchored at the first hit. */
export function memberCode(spec: AlgorithmSpec): string {
  return spec.algorithm === "fixed-window" && spec.anchor === "first" ? "F" : ALGORITHM_CODES[spec.algorithm];
}

/** Characters of a rule digest. */
export const RULE_DIGEST_LENGTH = 8;

/**
 * The 48-bit digest (base64url, 8 characters: no braces) naming the records of rule `id` with
 * shape `shape`. With 10,000 (rule, shape) pairs in one prefix the chance of any collision is
 * about 2e-7.
 */
export function ruleDigest(id: string, shape: string): string {
  return base64url(sha256(`${id}\u0000${shape}`)).slice(0, RULE_DIGEST_LENGTH);
}

/** `String.prototype.charCodeAt`, called through `.call` (why: the same constant in compact/fingerprint.ts). */
const charCodeAt = String.prototype.charCodeAt;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Distinct tags: 36^4, so tags spread evenly over Cluster's 16384 slots. */
const TAGS = 36 ** 4;

/** The FNV-1a state after a rule id and a separator; computed once per bound rule. */
export function tagSeed(id: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ charCodeAt.call(id, i), FNV_PRIME);
  return Math.imul(h ^ 0, FNV_PRIME); // separator, so rule id and key cannot run into each other
}

/** The Cluster hash tag for `key` under a rule (FNV-1a continued from `seed`, base 36, no braces). */
export function hashTag(seed: number, key: string): string {
  let h = seed;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ charCodeAt.call(key, i), FNV_PRIME);
  return ((h >>> 0) % TAGS).toString(36);
}

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let j = 0; j < 8; j++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** The Cluster slot of a key whose hash tag is `tag` (CRC16/XMODEM mod 16384; the tag is ASCII). */
export function slotOf(tag: string): number {
  let crc = 0;
  for (let i = 0; i < tag.length; i++) {
    crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ tag.charCodeAt(i)) & 0xff] as number);
  }
  return crc % 16384;
}

/** `String.prototype.isWellFormed` (Node 20+), else a test for a lone surrogate. */
const wellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (text) => (text as unknown as { isWellFormed(): boolean }).isWellFormed()
    : (text) => !/\p{Cs}/u.test(text);

/** What starts an escaped user key (no key left as it is starts with it). */
const ESCAPED = "\u0001";

/**
 * The user key as it ends a record key. Redis keys are bytes, and every client sends a string
 * as UTF-8, which turns each lone surrogate into U+FFFD: "a\uD800", "a\uDC00" and "a\uFFFD"
 * would share one record. A well-formed key not starting with U+0001 is kept as it is (so every
 * key of earlier versions keeps its record); any other is U+0001 and the base64url of its UTF-16
 * code units, which no kept key can equal (lossless: distinct keys, distinct records).
 */
export function recordKeyOf(key: string): string {
  if (wellFormed(key) && key.charCodeAt(0) !== 1) return key;
  const units = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    units[2 * i] = unit & 0xff;
    units[2 * i + 1] = unit >>> 8;
  }
  return ESCAPED + base64url(units);
}
