/**
 * Trace input for `replay` and `compare`: one event per line, CSV `timestamp[,key[,cost]]` or
 * JSON `{"at": ms, "key"?: "...", "cost"?: n}` (also `timestamp`/`t` for `at`). Timestamps are
 * ms numbers or ISO 8601 dates, within the Date range (±8.64e15 ms). Blank lines, `#` comments and a CSV header line are skipped;
 * anything else that does not parse is an InputError naming the line number.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { InputError } from "./args.ts";

/** One trace event, with the line it came from. */
export interface TraceEvent {
  at: number;
  key: string;
  cost: number;
  line: number;
}

/** The default key for events that name none (the same as the core `replay`). */
export const DEFAULT_KEY = "default";

function parseTime(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  if (/^[+-]?\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed)) return undefined;
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Largest timestamp magnitude accepted: the Date range (±8.64e15 ms, ±273,790 years), below 2^53. */
export const MAX_TIMESTAMP = 8.64e15;

/** `at`, or an InputError naming the line when it lies outside ±{@link MAX_TIMESTAMP}. */
function checkTime(at: number, line: number, where: string): number {
  if (Math.abs(at) > MAX_TIMESTAMP) {
    throw new InputError(`${where}:${line}: the timestamp must be within ±8.64e15 ms, the Date range (got ${at})`);
  }
  return at;
}

function parseCost(raw: unknown, line: number, where: string): number {
  if (raw === undefined || raw === "") return 1;
  const cost = typeof raw === "string" ? Number(raw.trim()) : raw;
  if (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1) {
    throw new InputError(`${where}:${line}: cost must be a positive integer (got ${JSON.stringify(raw)})`);
  }
  return cost;
}

/** Parses one line; undefined for lines to skip. `first` allows a CSV header. */
export function parseEventLine(text: string, line: number, where: string, first: boolean): TraceEvent | undefined {
  const trimmed = text.trim();
  if (trimmed === "" || trimmed.startsWith("#")) return undefined;
  if (trimmed.startsWith("{")) {
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(trimmed);
    } catch (error) {
      throw new InputError(`${where}:${line}: not valid JSON (${(error as Error).message})`);
    }
    const rawAt = obj.at ?? obj.timestamp ?? obj.t;
    const at = typeof rawAt === "number" ? rawAt : typeof rawAt === "string" ? parseTime(rawAt) : undefined;
    if (at === undefined || !Number.isFinite(at)) {
      throw new InputError(
        `${where}:${line}: "at" must be a timestamp in ms or an ISO date (got ${JSON.stringify(rawAt) ?? "nothing"})`,
      );
    }
    const key = obj.key ?? DEFAULT_KEY;
    if (typeof key !== "string")
      throw new InputError(`${where}:${line}: "key" must be a string (got ${JSON.stringify(key)})`);
    return { at: checkTime(at, line, where), key, cost: parseCost(obj.cost, line, where), line };
  }
  const fields = trimmed.split(",");
  const at = parseTime(fields[0] as string);
  if (at === undefined) {
    if (first && /^[a-z_ ]+$/i.test((fields[0] as string).trim())) return undefined; // a header row
    throw new InputError(
      `${where}:${line}: expected "timestamp[,key[,cost]]" with a timestamp in ms or an ISO date (got ${JSON.stringify(trimmed)})`,
    );
  }
  if (fields.length > 3)
    throw new InputError(`${where}:${line}: expected at most 3 fields, timestamp,key,cost (got ${fields.length})`);
  const key = fields[1]?.trim() || DEFAULT_KEY;
  return { at: checkTime(at, line, where), key, cost: parseCost(fields[2], line, where), line };
}

/** Opens `path` ("-" or undefined for stdin); an unreadable file is an InputError. */
export async function openInput(
  path: string | undefined,
  stdin: Readable,
): Promise<{ stream: Readable; name: string }> {
  if (path === undefined || path === "-") return { stream: stdin, name: "stdin" };
  const stream = createReadStream(path);
  await new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", (error: NodeJS.ErrnoException) =>
      reject(new InputError(`cannot read ${JSON.stringify(path)} (${error.code ?? error.message})`)),
    );
  });
  return { stream, name: path };
}

/** Reads events line by line (streaming: a trace of any length in bounded memory). */
export async function* readEvents(stream: Readable, name: string): AsyncGenerator<TraceEvent> {
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  let seen = false;
  for await (const text of lines) {
    n++;
    const event = parseEventLine(text, n, name, !seen);
    if (text.trim() !== "" && !text.trim().startsWith("#")) seen = true;
    if (event !== undefined) yield event;
  }
}
