/**
 * Flag parsing on `node:util` parseArgs, with the CLI's two failure kinds: a UsageError (bad
 * flags; exit 2, with a pointer to --help) and an InputError (bad files or lines; exit 1).
 */
import { parseArgs } from "node:util";
import { SluiceError } from "../index.ts";

/** The command line was used wrongly (unknown flag, missing argument); exits with status 2. */
export class UsageError extends SluiceError {
  constructor(message: string) {
    super("ERR_USAGE", message);
  }
}

/** Input could not be used (unreadable file, malformed line); exits with status 1. */
export class InputError extends SluiceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_INPUT", message, options);
  }
}

/** A parseArgs option table. */
export type Options = Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }>;

/** Parsed flags and positionals of one command. */
export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** Parses `argv` strictly against `options` (plus --help); parse failures become UsageError. */
export function parseFlags(argv: string[], options: Options, maxPositionals = 0): Parsed {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[maxPositionals])}`);
  }
  return parsed as Parsed;
}

/** A string flag's value, or undefined. */
export function str(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** A positive number flag (integer when `integer`), or `fallback` when absent. */
export function num(parsed: Parsed, name: string, fallback: number, integer = true): number {
  const text = str(parsed, name);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || value <= 0 || (integer && !Number.isSafeInteger(value))) {
    throw new UsageError(
      `--${name} must be a positive ${integer ? "integer" : "number"} (got ${JSON.stringify(text)})`,
    );
  }
  return value;
}
