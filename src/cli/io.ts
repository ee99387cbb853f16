/**
 * Output helpers for commands that pipe: JSON with `Infinity` written as null, and writes that
 * respect back-pressure and a closed pipe (`sluice replay big.csv | head` must not crash).
 */
import type { Writable } from "node:stream";

/** JSON.stringify with non-finite numbers (Infinity) written as null, as the service does. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v));
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
