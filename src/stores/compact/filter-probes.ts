/**
 * The bits a key sets in a summary filter (a Bloom filter of the keys pushed into a summary):
 * the same probes for the shared store's filter (threads/summary-filter.ts) and the in-process
 * store's (memory/summary-filter.ts), so the two are one design.
 */
import { fmix32 } from "./fingerprint.ts";

/** Bits a key sets (and a lookup tests) in a generation. */
export const PROBES = 4;

/**
 * Fills `out[0..PROBES)` with the bit indices (below `bits`) of the key (h1, h2) of rule
 * `rule`: double hashing, decorrelated from the summary cells' columns (which come from h1, h2).
 */
export function filterProbes(rule: number, h1: number, h2: number, bits: number, out: Int32Array): void {
  const a = fmix32(h1 ^ Math.imul(rule + 1, 0x9e3779b1));
  const b = fmix32(h2 ^ a ^ 0x5bd1e995) | 1;
  // Multiply-high maps 32 hash bits onto any number of bits (no power-of-two rounding).
  for (let i = 0; i < PROBES; i++) out[i] = Math.floor((((a + Math.imul(i, b)) >>> 0) * bits) / 0x100000000);
}
