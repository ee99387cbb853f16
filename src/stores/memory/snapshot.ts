/**
 * The MemoryStore's state as text, for restarts that keep counts (`sluice serve --state`).
 * Records hold absolute instants, so a snapshot read back later decides exactly as the store
 * would have. A snapshot is checked whole before anything is loaded: a corrupt or foreign file
 * loads nothing.
 */
import { ArgumentError } from "../../core/errors.ts";

/** Identifies our files; anything else is foreign. */
export const SNAPSHOT_FORMAT = "sluice-memory-state";
/** Bumped when the layout changes; other versions are refused. */
export const SNAPSHOT_VERSION = 1;

/** One table in a snapshot: its rule id and shape, its records, its sketch if any. */
export interface TableSnapshot {
  id: string;
  shape: string;
  records: Array<[string, unknown]>;
  /** Records of the compact tier: [h1, h2, word0, word1] (fingerprints under the sketch's `seed`). */
  compact?: number[][] | undefined;
  /** The sketch's cells, width and the store's hash seed (the seed places keys in cells: it must travel too). */
  sketch?: { width: number; seed: number; cells: string } | undefined;
  /** Running blocks kept beside the records (rules without a ban): [key, until]. */
  blocks?: Array<[string, number]> | undefined;
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
export function encodeSnapshot(tables: TableSnapshot[], savedAt: number): string {
  return JSON.stringify({ format: SNAPSHOT_FORMAT, version: SNAPSHOT_VERSION, savedAt, tables }, replacer);
}

/** Reads snapshot text; ArgumentError (naming what is wrong) for anything that is not ours, whole. */
export function decodeSnapshot(text: string): TableSnapshot[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, reviver);
  } catch (error) {
    throw new ArgumentError(`not a sluice state file: ${(error as Error).message}`);
  }
  const doc = parsed as Record<string, unknown> | null;
  if (typeof doc !== "object" || doc === null || doc.format !== SNAPSHOT_FORMAT) {
    throw new ArgumentError(`not a sluice state file (no "format": "${SNAPSHOT_FORMAT}")`);
  }
  if (doc.version !== SNAPSHOT_VERSION) {
    throw new ArgumentError(
      `state file version ${String(doc.version)} is not supported (expected ${SNAPSHOT_VERSION})`,
    );
  }
  if (!Array.isArray(doc.tables)) throw new ArgumentError("state file has no tables list");
  doc.tables.forEach((table: unknown, i: number) => {
    const t = table as Record<string, unknown> | null;
    const where = `state file table ${i}`;
    if (typeof t !== "object" || t === null || typeof t.id !== "string" || typeof t.shape !== "string") {
      throw new ArgumentError(`${where}: needs a string id and shape`);
    }
    if (!Array.isArray(t.records) || !t.records.every((r) => Array.isArray(r) && typeof r[0] === "string")) {
      throw new ArgumentError(`${where}: records must be [key, record] pairs`);
    }
    const compact = t.compact as unknown;
    if (
      compact !== undefined &&
      !(
        Array.isArray(compact) &&
        compact.every((r) => Array.isArray(r) && r.length === 4 && r.every((x) => typeof x === "number"))
      )
    ) {
      throw new ArgumentError(`${where}: compact records must be [h1, h2, word, word] numbers`);
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
        typeof seed !== "number" ||
        !Number.isInteger(seed) ||
        seed < 0 ||
        seed > 0xffffffff ||
        typeof cells !== "string"
      ) {
        throw new ArgumentError(
          `${where}: sketch must have a power-of-two width up to ${MAX_SKETCH_WIDTH}, a seed and base64 cells`,
        );
      }
    }
  });
  return doc.tables as TableSnapshot[];
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
