/**
 * The MemoryStore's state as text, for restarts that keep counts (`sluice serve --state`).
 * Records hold absolute instants, so a snapshot read back later decides exactly as the store
 * would have. A snapshot is checked whole before anything is loaded: a corrupt or foreign file
 * loads nothing.
 */
import { ArgumentError } from "../../errors.ts";

/** Identifies our files; anything else is foreign. */
export const SNAPSHOT_FORMAT = "sluice-memory-state";
/** Bumped when the layout changes; other versions are refused. */
export const SNAPSHOT_VERSION = 1;

/** One table in a snapshot: its rule id and shape, its records, its sketch if any. */
export interface TableSnapshot {
  id: string;
  shape: string;
  records: Array<[string, unknown]>;
  sketch?: { width: number; cells: string } | undefined;
}

/** JSON has no ±Infinity or -0: they are written as tagged strings. */
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) {
    return Number.isNaN(value) ? "#NaN" : value > 0 ? "#Infinity" : "#-Infinity";
  }
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value === "#Infinity") return Number.POSITIVE_INFINITY;
  if (value === "#-Infinity") return Number.NEGATIVE_INFINITY;
  if (value === "#NaN") return Number.NaN;
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
    const sketch = t.sketch as Record<string, unknown> | undefined;
    if (sketch !== undefined && (typeof sketch.width !== "number" || typeof sketch.cells !== "string")) {
      throw new ArgumentError(`${where}: sketch must have a width and base64 cells`);
    }
  });
  return doc.tables as TableSnapshot[];
}

/**
 * Whether `value` has the layout of `template` (a fresh record of the same rule): the same
 * kinds, the same fields, numbers where numbers are. Arrays that start empty (a sliding log's
 * buffer) may hold numbers or nulls (unused slots).
 */
export function sameLayout(template: unknown, value: unknown): boolean {
  if (typeof template === "number") return typeof value === "number";
  if (Array.isArray(template)) {
    if (!Array.isArray(value)) return false;
    if (template.length === 0) return value.every((v) => v === null || typeof v === "number");
    return value.length === template.length && template.every((t, i) => sameLayout(t, value[i]));
  }
  if (typeof template === "object" && template !== null) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
    const keys = Object.keys(template);
    const v = value as Record<string, unknown>;
    return (
      Object.keys(v).length === keys.length &&
      keys.every((k) => sameLayout((template as Record<string, unknown>)[k], v[k]))
    );
  }
  return false;
}
