/** JSON responses with `Infinity` written as null (JSON has no Infinity). */
import type { ServerResponse } from "node:http";

/** Serialises like JSON.stringify, with non-finite numbers as null. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v));
}

/** Sends `value` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = toJson(value);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** Sends text with a content type. */
export function sendText(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    "content-type": type,
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}
