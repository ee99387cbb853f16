/**
 * Output helpers for commands that pipe: JSON with `Infinity` written as null, and writes that
 * respect back-pressure and a closed pipe (`sluice replay big.csv | head` must not crash).
 */
import type { Writable } from "node:stream";

/**
 * Characters a terminal or a line-based reader may act on: C0 controls (tab, newline, ESC…),
 * DEL, C1 controls (CSI U+009B starts an escape sequence too), line/paragraph separators and
 * bidirectional overrides (which reorder what is shown).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escapeChar = (c: string) => {
  const named: Record<string, string> = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };
  return named[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
};

/**
 * `text` (a key, a rule name: anything a trace or a config chose) safe to print on one line of
 * tab-separated output: backslashes doubled and every unsafe character written as `\t`, `\n`,
 * `\r` or `\uXXXX`, so it can neither forge fields or lines nor send terminal escapes.
 */
export function printable(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(UNSAFE, escapeChar);
}

/** A message for stderr with terminal controls escaped (its own line breaks kept). */
export function printableMessage(text: string): string {
  return text.replace(UNSAFE, (c) => (c === "\n" ? c : escapeChar(c)));
}

/**
 * JSON.stringify with non-finite numbers (Infinity) written as null, as the service does, and
 * the characters JSON leaves raw but a terminal acts on (DEL, C1, separators, bidi overrides)
 * written as `\uXXXX` (they only occur inside strings, where that escape is valid JSON).
 */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v)).replace(
    UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Writes text, waiting when the stream's buffer is full; resolves false once the reader has gone. */
export function write(stream: Writable, text: string): Promise<boolean> | boolean {
  if (stream.destroyed || !stream.writable) return false;
  if (stream.write(text)) return true;
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      stream.off("drain", onDrain);
      stream.off("error", onError);
      stream.off("close", onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onError = () => done(false);
    const onClose = () => done(false);
    stream.on("drain", onDrain).on("error", onError).on("close", onClose);
  });
}
