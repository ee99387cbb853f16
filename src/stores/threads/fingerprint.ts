/**
 * A key's 64-bit fingerprint: two independent 32-bit hashes of its UTF-16 code units, seeded
 * per store (so nobody can compute in advance which keys collide). The table stores the
 * fingerprint instead of the key: two keys of one rule sharing all 64 bits would share one
 * record, which can only over-count them (about one pair in 2^64 / n² for n live keys).
 */

/** Writes the fingerprint of `key` into `out[0]` (low) and `out[1]` (high). */
export function fingerprint(key: string, seed: number, out: Int32Array): void {
  let h1 = 0x811c9dc5 ^ seed;
  let h2 = Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) ^ key.length;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  out[0] = fmix(h1 ^ key.length);
  out[1] = fmix(h2 ^ h1);
}

/** MurmurHash3's finaliser: every input bit reaches every output bit. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** A 32-bit hash of a text (rule identities in the registry). */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return fmix(h) >>> 0;
}
