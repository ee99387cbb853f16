/**
 * A thread's memo of key fingerprints (fingerprint.ts) by key text, for the shared store, which
 * fingerprints the key on every decision: hashing a key in JS costs some 450 instructions
 * (callgrind, V8 11.3, 10-character keys: `charCodeAt` and two multiplies per character), a
 * `Map` lookup of the same text some 120 (V8 keeps a string's own hash in the string).
 *
 * Exact by construction: the map is keyed by the key's text and the seed is fixed, so a hit is
 * the very fingerprint the hash would give. Bounded: at most `capacity` keys of at most
 * `MAX_CACHED_LENGTH` characters; when full, the memo starts over (a clear, no per-entry
 * bookkeeping on a hit); longer keys are always hashed.
 */
import { fingerprint } from "./fingerprint.ts";

/** Keys longer than this are hashed every time (the memo would keep too much text alive). */
export const MAX_CACHED_LENGTH = 64;

/** Fingerprints of the last keys seen, by text (see the file comment). */
export class FingerprintCache {
  readonly #seed: number;
  readonly #capacity: number;
  /** Key text → index of its three hashes in `#pool`. */
  readonly #slots = new Map<string, number>();
  readonly #pool: Uint32Array;

  /** A memo of up to `capacity` keys' fingerprints under `seed`. */
  constructor(seed: number, capacity: number) {
    this.#seed = seed;
    this.#capacity = Math.max(1, capacity);
    this.#pool = new Uint32Array(3 * this.#capacity);
  }

  /** Writes `fingerprint(seed, key, out)`'s three hashes into `out[0..2]`. */
  into(key: string, out: Uint32Array): void {
    const pool = this.#pool;
    let at = this.#slots.get(key);
    if (at === undefined) {
      fingerprint(this.#seed, key, out);
      if (key.length > MAX_CACHED_LENGTH) return;
      if (this.#slots.size === this.#capacity) this.#slots.clear();
      at = 3 * this.#slots.size;
      pool[at] = out[0] as number;
      pool[at + 1] = out[1] as number;
      pool[at + 2] = out[2] as number;
      this.#slots.set(key, at);
      return;
    }
    out[0] = pool[at] as number;
    out[1] = pool[at + 1] as number;
    out[2] = pool[at + 2] as number;
  }

  /** Keys memoised now (for tests). */
  get size(): number {
    return this.#slots.size;
  }
}
