/**
 * Key layout. Every key of one check is `prefix{tag}digest:member:userKey`, where `tag` is a
 * hash of the rule and the user key chosen by sluice: Redis Cluster hashes only what is inside
 * the first `{...}`, so all members of a check share a slot, and braces inside a user key
 * (which comes after our tag) can neither move a key to another slot nor merge two keys.
 * The rule id is stored as a fixed-width digest (ids may be long JSON specs); the user key is
 * kept verbatim at the end, so distinct (rule, member, key) triples give distinct keys.
 */
import { createHash } from "node:crypto";
import type { AlgorithmName } from "../../spec.ts";

/** One-letter algorithm codes, shared with the Lua twins (`ALGO.<code>`). */
export const ALGORITHM_CODES: Record<AlgorithmName, string> = {
  "fixed-window": "f",
  "sliding-log": "l",
  "sliding-window": "w",
  "token-bucket": "t",
  gcra: "g",
  "leaky-bucket": "b",
};

/** A 72-bit digest of a rule id (base64url, 12 characters): collisions are not a practical concern. */
export function ruleDigest(id: string): string {
  return createHash("sha256").update(id).digest("base64url").slice(0, 12);
}

/** The Cluster hash tag for `key` under a rule: FNV-1a over digest and key, in base 36 (no braces). */
export function hashTag(digest: string, key: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < digest.length; i++) h = Math.imul(h ^ digest.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 0, 0x01000193); // separator, so digest and key cannot run into each other
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
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
