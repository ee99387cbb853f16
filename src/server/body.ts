/**
 * Reading request bodies with a hard size limit: a body over the limit (declared or counted)
 * is never kept; its rest is drained (bounded) so the client can read the 413.
 * Only `application/json` is accepted (a form or text/plain body is what a cross-site page can
 * send without a CORS preflight), and nesting is bounded before parsing, so no body can make
 * later code recurse past the stack.
 */
import type { IncomingMessage } from "node:http";
import { badRequest, HttpError } from "./problem.ts";

/**
 * How much of an oversized body is read and dropped, at most, before answering 413: a client
 * still writing its body when the connection closes sees a broken pipe (Node's `fetch`
 * reports EPIPE), never the status. Draining lets it finish sending, then read the 413. Bounded
 * in bytes and in time, so an endless or stalled body costs little; past a bound we answer
 * anyway and the connection closes.
 */
export const DRAIN_BYTES = 8 * 1024 * 1024;
/** The drain gives up when no byte has arrived for this long (ms): a client that stalls. */
export const DRAIN_IDLE_MS = 500;
/** The drain gives up after this long in all (ms), however the bytes trickle in. */
export const DRAIN_MAX_MS = 5000;

function tooLarge(max: number, got: string): HttpError {
  return new HttpError(
    413,
    "body-too-large",
    "Content too large",
    `request body must be at most ${max} bytes (got ${got})`,
    { maxBytes: max },
    // The connection is not reused: whatever of the body was not drained is still on it.
    { connection: "close" },
  );
}

/**
 * Reads and drops what is left of `req`, then settles: at its end, past DRAIN_BYTES more, after
 * DRAIN_IDLE_MS without data or after DRAIN_MAX_MS, whichever comes first.
 */
function drain(req: IncomingMessage, settle: () => void): void {
  let drained = 0;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(idle);
    clearTimeout(cap);
    req.off("data", onData);
    req.off("end", finish);
    req.off("error", finish);
    req.off("close", finish);
    // Keep reading (and dropping) whatever still arrives until the connection closes.
    req.resume();
    settle();
  };
  let idle = setTimeout(finish, DRAIN_IDLE_MS);
  const cap = setTimeout(finish, DRAIN_MAX_MS);
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_BYTES) return finish();
    clearTimeout(idle);
    idle = setTimeout(finish, DRAIN_IDLE_MS);
  };
  req.on("data", onData);
  req.on("end", finish);
  req.on("error", finish);
  req.on("close", finish);
  if (req.complete) finish();
  else req.resume();
}

/** Reads the body as text, refusing more than `maxBytes` (413, after a bounded drain). */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) {
    const error = tooLarge(maxBytes, `${declared} bytes`);
    // A declared length past what we would drain is refused at once: reading it all is the
    // cost the limit exists to avoid.
    if (Number(declared) > DRAIN_BYTES) return Promise.reject(error);
    return new Promise((_resolve, reject) => drain(req, () => reject(error)));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (run: () => void) => {
      if (settled) return;
      settled = true;
      run();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      // Too large: stop keeping it, drain the rest (bounded), then answer 413.
      chunks.length = 0;
      req.off("data", onData);
      req.off("end", onEnd);
      const got = size;
      drain(req, () => settle(() => reject(tooLarge(maxBytes, `at least ${got} bytes`))));
    };
    const onEnd = () => settle(() => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", (error) => settle(() => reject(error)));
  });
}

/** Deepest nesting of arrays/objects a body may have: a check is 2 levels deep (a batch of objects). */
export const MAX_JSON_DEPTH = 32;

/** Throws 415 unless the request says `Content-Type: application/json` (charset, if any, UTF-8). */
export function requireJsonType(req: IncomingMessage): void {
  const header = req.headers["content-type"] ?? "";
  const [type = "", ...params] = header.split(";").map((part) => part.trim().toLowerCase());
  const charset = params
    .find((p) => p.startsWith("charset="))
    ?.slice("charset=".length)
    .replace(/"/g, "");
  if (type === "application/json" && (charset === undefined || charset === "utf-8" || charset === "utf8")) return;
  throw new HttpError(
    415,
    "unsupported-media-type",
    "Unsupported media type",
    `request body must be sent as \`Content-Type: application/json\` (got ${header === "" ? "no Content-Type" : JSON.stringify(header.slice(0, 100))})`,
    {},
    { "accept-post": "application/json" },
  );
}

/**
 * The deepest array/object nesting in JSON text, counted without parsing (brackets inside
 * strings skipped); stops counting once past `limit`.
 */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) max = depth;
      if (max > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Reads and parses a JSON body; malformed JSON is a 400 naming the parser's complaint. */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  requireJsonType(req);
  const text = await readBody(req, maxBytes);
  if (text.trim() === "") throw badRequest("invalid-json", "request body is empty; expected JSON");
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw badRequest("invalid-json", `request body nests arrays/objects deeper than ${MAX_JSON_DEPTH} levels`, {
      maxDepth: MAX_JSON_DEPTH,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest("invalid-json", `request body is not valid JSON: ${(error as Error).message}`);
  }
}
