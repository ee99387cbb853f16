/**
 * Key fingerprints for the compact table (both stores) and the summaries: three 32-bit hashes
 * of a key from one pass over the key. `h1` and the high 16 bits of `h2`
 * are what a compact slot stores (48 bits), `h3` (mixed from all 64 bits of the pass) picks the
 * bucket. The summary derives its cells from `h1` and `h2` only, so a record pushed out of the
 * compact tier (which no longer has its key text) lands in the same cells as its key would.
 *
 * Plain integer arithmetic on a caller's Uint32Array: usable on any thread, no allocation.
 */

/**
 * `String.prototype.charCodeAt`, called through `.call`: a per-character hash loop stays fast even
 * when String.prototype has dictionary (slow) properties. A module that subclasses String does that,
 * and ioredis does (RESP3's `class VerbatimString extends String`): each `key.charCodeAt(i)` is then
 * a generic property lookup, some 4x the loop's time. The constant is local to each module that
 * hashes: V8 calls the builtin directly only through a module's own constant, not through an import.
 */
const charCodeAt = String.prototype.charCodeAt;

/** Mixes a 32-bit value so every input bit affects every output bit (murmur3's finaliser). */
export function fmix32(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * Writes the three hashes of `key` under `seed` into `out[0..2]`. `out[1]` has its low 16 bits
 * cleared: only its high 16 bits are stored and compared. Rules are kept apart by the table
 * index stored beside the fingerprint (not hashed in, so a restored store, whose rules may be
 * numbered differently, finds the same cells).
 */
export function fingerprint(seed: number, key: string, out: Uint32Array): void {
  let a = (0x811c9dc5 ^ seed) >>> 0;
  let b = (0x9e3779b9 ^ Math.imul(seed, 0x85ebca6b)) >>> 0;
  for (let i = 0; i < key.length; i++) {
    const k = charCodeAt.call(key, i);
    a = Math.imul(a ^ k, 0x01000193);
    b = Math.imul(b ^ k, 0x5bd1e995);
  }
  const n = key.length;
  out[0] = fmix32(a ^ n);
  out[1] = (fmix32(b ^ Math.imul(n, 0xcc9e2d51)) & 0xffff0000) >>> 0;
  // From all 64 bits of (a, b), of which the stored fingerprint keeps 48: two keys with one
  // stored fingerprint almost never share a bucket too. Two passes over the key, not three
  // (the key is hashed on every decision of the shared store).
  out[2] = fmix32(Math.imul(a, 0xc2b2ae35) ^ b ^ seed);
}

/** A 32-bit seed from the platform's random source (stores take an explicit `seed` for replayable tests). */
export function randomSeed(): number {
  return globalThis.crypto.getRandomValues(new Uint32Array(1))[0] as number;
}

/** A 32-bit hash of a text (rule identities in the shared store's registry). */
export function hashText(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ charCodeAt.call(text, i), 0x01000193);
  return fmix32(h);
}
