/**
 * Reading request bodies with a hard size limit: a body over the limit (declared or counted)
 * is never kept; the 413 is answered at once and the rest is dropped as it arrives, so every
 * client can read the 413 whatever it sends.
 * Only `application/json` is accepted (a form or text/plain body is what a cross-site page can
 * send without a CORS preflight), and nesting is bounded before parsing, so no body can make
 * later code recurse past the stack.
 */
import type { IncomingMessage } from "node:http";
import { badRequest, HttpError } from "./problem.ts";

function tooLarge(max: number, got: string): HttpError {
  return new HttpError(
    413,
    "body-too-large",
    "Content too large",
    `request body must be at most ${max} bytes (got ${got})`,
    { maxBytes: max },
  );
}

/**
 * Reads the body as text, refusing more than `maxBytes`: 413 at once, nothing of it kept. The
 * router answers it without closing the connection and drops the rest as it arrives
 * (router.ts: a client cut off mid-upload would see a broken pipe, never the 413).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) {
    return Promise.reject(tooLarge(maxBytes, `${declared} bytes`));
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
      // Too large: stop keeping it and answer 413 now (the router drops the rest).
      chunks.length = 0;
      req.off("data", onData);
      req.off("end", onEnd);
      settle(() => reject(tooLarge(maxBytes, `at least ${size} bytes`)));
    };
    const onEnd = () => settle(() => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", (error) => settle(() => reject(error)));
  });
}

/** Deepest nesting of arrays/objects a body may have: a check is 2 levels deep (a batch of objects). */
export const MAX_JSON_DEPTH = 32;

/**
 * Throws 415 unless the request says `Content-Type: application/json` (charset, if any, UTF-8)
 * and carries no `Content-Encoding` (a gzip body read as plain JSON would be garbage, and
 * decoding would let a small body expand past --max-body).
 */
export function requireJsonType(req: IncomingMessage): void {
  const encoding = (req.headers["content-encoding"] ?? "").trim().toLowerCase();
  if (encoding !== "" && encoding !== "identity") {
    throw new HttpError(
      415,
      "unsupported-media-type",
      "Unsupported media type",
      `request body must not be encoded (got Content-Encoding ${JSON.stringify(encoding.slice(0, 40))}); send plain JSON`,
      {},
      { "accept-encoding": "identity" },
    );
  }
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
