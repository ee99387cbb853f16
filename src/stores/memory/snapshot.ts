/**
 * The MemoryStore's state as text, for restarts that keep counts (`sluice serve --state`).
 * Records hold absolute instants, so a snapshot read back later decides exactly as the store
 * would have. A snapshot is checked whole before anything is loaded: a corrupt or foreign file
 * loads nothing.
 */
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError } from "../../core/errors.ts";
import type { SavedFilter } from "./summary-filter.ts";

/** Identifies our files; anything else is foreign. */
export const SNAPSHOT_FORMAT = "sluice-memory-state";
/**
 * Bumped when the layout changes; other versions are refused. Version 2 saves where each
 * compact record sits (its bucket, the table's index and the compact tier's size), so a store
 * of the same size puts it back in place, exactly; version 1 files are still read (their
 * compact records can only be summarised).
 */
export const SNAPSHOT_VERSION = 2;
/** The oldest version still read. */
const OLDEST_VERSION = 1;

/** One table in a snapshot: its rule id and shape, its records, its sketch if any. */
export interface TableSnapshot {
  id: string;
  shape: string;
  /**
   * Records of the `Map` tier, oldest first: those of the probation segment, then those of the
   * protected one. A key read back from the summary has a third field: its debts and bases per
   * rate-based member (approx.ts `Approx`), and its record is what it took since.
   */
  records: Array<[string, unknown] | [string, unknown, number[]]>;
  /**
   * Keys of `records` whose record is a bound of their state read back from a compact slot (its
   * decisions say `approximate` until it is fresh), not the state itself.
   */
  bounds?: string[] | undefined;
  /** How many of `records` (the last ones) were in the protected segment (keys that came back). */
  protected?: number | undefined;
  /**
   * Records of the compact tier: [h1, h2, word0, word1, bucket] (fingerprints under `seed`),
   * oldest first within a bucket, and a sixth figure of flags: 1 for a returning key's
   * (protected from floods of keys that come once), 2 for a bound of the key's state rather
   * than the state (decisions from it are approximate); version 1 files have no bucket.
   */
  compact?: number[][] | undefined;
  /**
   * Where the compact records were: the table's index in the compact tier, the tier's buckets,
   * and `words: 1` when the tier had the dense layout (16-byte slots; absent: 24-byte ones).
   */
  compactAt?: { index: number; buckets: number; words?: number } | undefined;
  /** The store's hash seed, when fingerprints or cells travel (they were placed with it). */
  seed?: number | undefined;
  /** The sketch's cells, width and the store's hash seed (the seed places keys in cells: it must travel too). */
  sketch?: { width: number; seed: number; cells: string } | undefined;
  /** Running blocks kept beside the records (rules without a ban): [key, until]. */
  blocks?: Array<[string, number]> | undefined;
  /** The table's index in the saved summary filter (its keys' probes hash it in), when a filter travels. */
  filterIndex?: number | undefined;
}

/** What a snapshot holds: its tables, and the store's summary filter if it had one. */
export interface StoreSnapshot {
  tables: TableSnapshot[];
  filter?: SavedFilter | undefined;
}

/** Widest sketch a snapshot may ask for (what `sketchWidth` allows). */
export const MAX_SKETCH_WIDTH = 65536;

/**
 * JSON has no ±Infinity: such numbers are written as `{"$n": "Infinity"}`. An object, not a
 * tagged string, so no key text (user keys are strings) can ever be read back as a number.
 */
export function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return { $n: Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity" };
  }
  return value;
}

/** Reads back what `replacer` wrote: `{"$n": "Infinity"}` (and -Infinity, NaN) as numbers. */
export function reviver(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const tag = (value as { $n?: unknown }).$n;
    if (
      keys.length === 1 &&
      keys[0] === "$n" &&
      typeof tag === "string" &&
      ["NaN", "Infinity", "-Infinity"].includes(tag)
    ) {
      return Number(tag);
    }
  }
  return value;
}

/** Writes tables as snapshot text. */
export function encodeSnapshot(tables: TableSnapshot[], savedAt: number, filter?: SavedFilter): string {
  return JSON.stringify(
    {
      format: SNAPSHOT_FORMAT,
      version: SNAPSHOT_VERSION,
      savedAt,
      tables,
      ...(filter === undefined ? {} : { filter }),
    },
    replacer,
  );
}

/** Reads snapshot text; ArgumentError (naming what is wrong) for anything that is not ours, whole. */
export function decodeSnapshot(text: string): StoreSnapshot {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, reviver);
  } catch (error) {
    throw new ArgumentError(`not a sluice state file: ${(error as Error).message}`, { field: "text" });
  }
  const doc = parsed as Record<string, unknown> | null;
  if (typeof doc !== "object" || doc === null || doc.format !== SNAPSHOT_FORMAT) {
    throw new ArgumentError(`not a sluice state file (no "format": "${SNAPSHOT_FORMAT}")`, { field: "text" });
  }
  if (typeof doc.version !== "number" || !(doc.version >= OLDEST_VERSION && doc.version <= SNAPSHOT_VERSION)) {
    throw new ArgumentError(
      `state file version ${String(doc.version)} is not supported (expected ${OLDEST_VERSION} to ${SNAPSHOT_VERSION})`,
    );
  }
  if (doc.savedAt !== undefined && !Number.isFinite(doc.savedAt)) {
    throw new ArgumentError(`state file "savedAt" must be a finite instant (got ${describeValue(doc.savedAt)})`);
  }
  if (!Array.isArray(doc.tables)) throw new ArgumentError("state file has no tables list");
  doc.tables.forEach((table: unknown, i: number) => {
    const t = table as Record<string, unknown> | null;
    const where = `state file table ${i}`;
    if (typeof t !== "object" || t === null || typeof t.id !== "string" || typeof t.shape !== "string") {
      throw new ArgumentError(`${where}: needs a string id and shape`);
    }
    if (
      !Array.isArray(t.records) ||
      !t.records.every(
        (r) => Array.isArray(r) && typeof r[0] === "string" && (r.length === 2 || (r.length === 3 && readBack(r[2]))),
      )
    ) {
      throw new ArgumentError(
        `${where}: records must be [key, record] pairs (or [key, record, debts] for a key read back from the summary)`,
      );
    }
    for (const [key, record] of t.records as Array<[string, unknown]>) {
      // Every figure of a record is a number or an instant, never NaN (a NaN instant compares
      // false with everything: a window that never ends, or never starts).
      const path = nanPath(record, "");
      if (path !== undefined) {
        throw new ArgumentError(
          `${where}: the record of key ${JSON.stringify(key)} holds NaN at ${path || "its root"}`,
        );
      }
    }
    const bounds = t.bounds as unknown;
    if (bounds !== undefined && !(Array.isArray(bounds) && bounds.every((k) => typeof k === "string"))) {
      throw new ArgumentError(`${where}: "bounds" must be a list of keys (got ${describeValue(bounds)})`);
    }
    const kept = t.protected as unknown;
    if (
      kept !== undefined &&
      !(Number.isSafeInteger(kept) && (kept as number) >= 0 && (kept as number) <= t.records.length)
    ) {
      throw new ArgumentError(`${where}: "protected" must count some of its records (got ${describeValue(kept)})`);
    }
    const at = t.compactAt as Record<string, unknown> | undefined;
    if (
      at !== undefined &&
      !(
        typeof at === "object" &&
        at !== null &&
        Number.isSafeInteger(at.index) &&
        (at.index as number) >= 1 &&
        Number.isSafeInteger(at.buckets) &&
        (at.buckets as number) >= 1 &&
        (at.words === undefined || at.words === 1 || at.words === 2)
      )
    ) {
      throw new ArgumentError(`${where}: "compactAt" must be a table index and a bucket count (positive integers)`);
    }
    const compact = t.compact as unknown;
    if (
      compact !== undefined &&
      !(Array.isArray(compact) && compact.every((r) => compactRow(r, at?.buckets as number | undefined)))
    ) {
      throw new ArgumentError(
        `${where}: compact records must be [h1, h2, word, word, bucket, flags?]: 32-bit fingerprints, numbers, a bucket of the saved tier, flags 1 to 3`,
      );
    }
    if (t.seed !== undefined && !isSeed(t.seed)) {
      throw new ArgumentError(`${where}: "seed" must be an integer from 0 to 2^32 - 1 (got ${describeValue(t.seed)})`);
    }
    const blocks = t.blocks as unknown;
    if (
      blocks !== undefined &&
      !(
        Array.isArray(blocks) &&
        blocks.every((b) => Array.isArray(b) && b.length === 2 && typeof b[0] === "string" && Number.isFinite(b[1]))
      )
    ) {
      throw new ArgumentError(`${where}: blocks must be [key, until] pairs with a finite instant`);
    }
    if (t.filterIndex !== undefined && !(Number.isSafeInteger(t.filterIndex) && (t.filterIndex as number) >= 0)) {
      throw new ArgumentError(`${where}: "filterIndex" must be a table index (got ${describeValue(t.filterIndex)})`);
    }
    const sketch = t.sketch as Record<string, unknown> | undefined;
    if (sketch !== undefined) {
      const { width, seed, cells } = sketch;
      // Checked before anything is allocated: a width is a power of two up to MAX_SKETCH_WIDTH.
      if (
        typeof width !== "number" ||
        !Number.isSafeInteger(width) ||
        width < 1 ||
        width > MAX_SKETCH_WIDTH ||
        (width & (width - 1)) !== 0 ||
        !isSeed(seed) ||
        typeof cells !== "string"
      ) {
        throw new ArgumentError(
          `${where}: sketch must have a power-of-two width up to ${MAX_SKETCH_WIDTH}, a seed and base64 cells`,
        );
      }
    }
  });
  if (doc.filter !== undefined) checkFilter(doc.filter);
  return { tables: doc.tables as TableSnapshot[], filter: doc.filter as SavedFilter | undefined };
}

/** Checks a saved summary filter's figures (its bits are checked against the store's size when loaded). */
function checkFilter(value: unknown): void {
  const f = value as Record<string, unknown> | null;
  const pair = (v: unknown, each: (x: unknown) => boolean) => Array.isArray(v) && v.length === 2 && v.every(each);
  const count = (x: unknown) => Number.isSafeInteger(x) && (x as number) >= 0;
  const owners = (x: unknown) =>
    Array.isArray(x) &&
    x.every(
      (o) =>
        Array.isArray(o) &&
        o.length === 2 &&
        typeof o[0] === "string" &&
        typeof o[1] === "number" &&
        !Number.isNaN(o[1]),
    );
  if (
    typeof f !== "object" ||
    f === null ||
    !(count(f.bits) && (f.bits as number) % 32 === 0 && (f.bits as number) > 0) ||
    !isSeed(f.seed) ||
    !(f.current === 0 || f.current === 1) ||
    !pair(f.joins, count) ||
    !pair(f.gens, (g) => typeof g === "string") ||
    !pair(f.fresh, owners)
  ) {
    throw new ArgumentError(
      "state file filter must have bits (a multiple of 32), a seed, current (0 or 1), two join counts, two base64 generations and two lists of [table id, fresh-at]",
    );
  }
}

/** Whether `value` is a hash seed (an unsigned 32-bit integer). */
function isSeed(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
}

/**
 * Whether `value` is a read-back key's [debt, base] pairs: a debt is a finite backlog (ms), a
 * base the summary's instant when first read (NaN until then).
 */
function readBack(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length % 2 === 0 &&
    value.every((x, i) => typeof x === "number" && (i % 2 === 1 || Number.isFinite(x)))
  );
}

/** Whether `value` is a 32-bit fingerprint word. */
function isWord32(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0xffffffff;
}

/**
 * Whether `row` is a compact record: two fingerprint words, two state words (any number: an
 * empty sliding-log slot is NaN; the rule's layout check reads them once the rule is known), and
 * (version 2) its bucket among the saved tier's `buckets`.
 */
function compactRow(row: unknown, buckets: number | undefined): boolean {
  if (!Array.isArray(row) || row.length < 4 || row.length > 6) return false;
  // A sixth figure of flags: 1 a returning key (protected in the compact tier), 2 a bound.
  if (row.length === 6 && !(row[5] === 1 || row[5] === 2 || row[5] === 3)) return false;
  if (!isWord32(row[0]) || !isWord32(row[1]) || typeof row[2] !== "number" || typeof row[3] !== "number") return false;
  if (row.length === 4) return true;
  const bucket = row[4] as unknown;
  return (
    buckets !== undefined && Number.isSafeInteger(bucket) && (bucket as number) >= 0 && (bucket as number) < buckets
  );
}

/** Where `value` holds NaN (a path such as `[0].w`), or undefined. */
function nanPath(value: unknown, path: string): string | undefined {
  if (typeof value === "number") return Number.isNaN(value) ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nanPath(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      const found = nanPath(v, path === "" ? k : `${path}.${k}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Whether `value` has the layout of `template` (a fresh record of the same rule): the same
 * kinds, the same fields, numbers where numbers are. A figure that starts finite (a count, a
 * balance, a buffer position) must be finite and not negative; one that starts at -Infinity
 * (an instant) may be any number but NaN. Arrays that start empty (a sliding log's buffer) may
 * hold numbers or nulls (unused slots). An object may also carry a boolean `readBack` (a ban
 * state's mode, core/ban.ts). `signed` lets finite figures be negative (a token bucket's
 * balance after a penalty), for records written by our own codec.
 */
export function sameLayout(template: unknown, value: unknown, signed = false): boolean {
  if (typeof template === "number") {
    if (typeof value !== "number" || Number.isNaN(value)) return false;
    return Number.isFinite(template) ? Number.isFinite(value) && (signed || value >= 0) : true;
  }
  if (Array.isArray(template)) {
    if (!Array.isArray(value)) return false;
    if (template.length === 0) return value.every((v) => v === null || typeof v === "number");
    return value.length === template.length && template.every((t, i) => sameLayout(t, value[i], signed));
  }
  if (typeof template === "object" && template !== null) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
    const keys = Object.keys(template);
    const v = value as Record<string, unknown>;
    // A ban state read back from a summary carries its mode (core/ban.ts `readBack`), a fresh one not.
    const marked = !("readBack" in template) && "readBack" in v ? 1 : 0;
    if (marked === 1 && typeof v.readBack !== "boolean") return false;
    return (
      Object.keys(v).length === keys.length + marked &&
      keys.every((k) => sameLayout((template as Record<string, unknown>)[k], v[k], signed))
    );
  }
  return false;
}
