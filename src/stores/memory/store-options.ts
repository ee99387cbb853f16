/**
 * MemoryStore's options, checked, and the budget they give each tier: the `Map` tier's cap
 * (`maxKeys`, a fifth kept for probation), and past it `maxBytes` split between the summaries,
 * the compact tier and the filter of summarised keys.
 */
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError } from "../../core/errors.ts";
import { checkOptions } from "../../core/options.ts";
import { randomSeed } from "../compact/fingerprint.ts";

/** The names of {@link MemoryStoreOptions}, for every place that takes them (startClusterStore too). */
export const MEMORY_STORE_OPTIONS = [
  "maxKeys",
  "maxBytes",
  "sketchWidth",
  "seed",
] as const satisfies readonly (keyof MemoryStoreOptions)[];

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /** Hard cap on exact records in the `Map` tier, across all rules (default: no cap beyond fresh-state expiry). */
  maxKeys?: number;
  /**
   * Bytes for everything past `maxKeys`, across all rules: the summaries (1/16, or up to 1/6
   * when that is at most 64 KiB), then of the rest the compact tier (3/4) and the filter of the
   * keys the summaries hold (1/4). Default: 2,400 bytes per
   * `maxKeys`, between 64 KiB and 24 MiB. Given alone, `maxKeys` defaults to maxBytes / 1,000.
   */
  maxBytes?: number;
  /** Cells per summary row, at most (default: as many as the summary budget allows, up to 65536). */
  sketchWidth?: number;
  /** Hash seed (default: random). Fixed in tests so that a trace replays exactly. */
  seed?: number;
}

/** Widest summary row. */
const MAX_WIDTH = 65536;

/** What each tier may hold, from the options. */
export interface TierBudget {
  /** The hard cap on exact records in the `Map` tier (Infinity when none). */
  readonly maxKeys: number;
  /** The budget past `maxKeys` (Infinity when uncapped). */
  readonly maxBytes: number;
  /** Cells per summary row, at most. */
  readonly sketchWidth: number;
  /** Bytes of the compact tier. */
  readonly compactBudget: number;
  /** Bytes of all summaries together. */
  readonly summaryBudget: number;
  /** Bytes of the filter of summarised keys. */
  readonly filterBudget: number;
  /** Most pins (reset keys held fresh over their summary) across all rules. */
  readonly maxPins: number;
  /** Most records in a table's protected segment. */
  readonly protectedCap: number;
  /** The hash seed. */
  readonly seed: number;
}

/** Checks `options` (ArgumentError naming what is wrong) and splits the budget between the tiers. */
export function tierBudget(options: MemoryStoreOptions): TierBudget {
  checkOptions(options, "MemoryStore", MEMORY_STORE_OPTIONS);
  const { maxKeys, maxBytes, sketchWidth, seed } = options;
  // `maxKeys: Infinity` is what `stats().maxKeys` reports for an uncapped store: taken back, it means no cap.
  const cap = maxKeys === Number.POSITIVE_INFINITY ? undefined : maxKeys;
  for (const [name, value] of [
    ["maxKeys", cap],
    ["maxBytes", maxBytes],
    ["sketchWidth", sketchWidth],
  ] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
      throw new ArgumentError(`\`${name}\` must be a positive integer (got ${describeValue(value)})`);
    }
  }
  if (seed !== undefined && (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)) {
    throw new ArgumentError(`\`seed\` must be an integer from 0 to 2^32 - 1 (got ${describeValue(seed)})`);
  }
  const keys = cap ?? (maxBytes === undefined ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(maxBytes / 1000)));
  const bytes =
    maxBytes ?? (cap === undefined ? Number.POSITIVE_INFINITY : Math.min(24 * 2 ** 20, Math.max(65536, cap * 2400)));
  // Under a large flood summary cells saturate while exact slots and filter bits stay useful:
  // at 24 MiB, 3,000,000 one-request keys refused 1.35% of honest requests with 2/3 compact,
  // 1/6 filter, 1/6 summaries; 0.29% with this (bench/memory.mjs --shapes). A small store keeps
  // a sixth for its summaries, where a few cells more keep keys apart.
  const capped = Number.isFinite(bytes);
  const summaries = Math.max(Math.floor(bytes / 16), Math.min(Math.floor(bytes / 6), 65536));
  const rest = capped ? bytes - summaries : bytes;
  // Compact 3/4, filter 1/4: once every one-word state takes 16-byte slots, the filter ran out
  // first under many rules (200 rules × 15,000 keys: 1.55% of brand-new keys refused at 4/5,
  // 0.80% at 3/4, 0.38% at 2/3, which left 500 rules' returning keys too few slots).
  const compactBudget = capped ? Math.floor((rest * 3) / 4) : rest;
  return {
    maxKeys: keys,
    maxBytes: bytes,
    sketchWidth: Math.min(MAX_WIDTH, sketchWidth ?? MAX_WIDTH),
    compactBudget,
    filterBudget: capped ? rest - compactBudget : 0,
    summaryBudget: summaries,
    // A fifth of the Map tier stays for probation: room for new keys to prove they come back.
    protectedCap: Number.isFinite(keys) ? Math.floor(keys * 0.8) : Number.POSITIVE_INFINITY,
    maxPins: Number.isFinite(keys) ? Math.max(16, Math.ceil(keys / 8)) : 0,
    seed: seed ?? randomSeed(),
  };
}
