/**
 * Reading request bodies with a hard size limit: a declared Content-Length over the limit is
 * refused before a byte is read, and a chunked body is cut off as soon as it passes the limit.
 */
import type { IncomingMessage } from "node:http";
import { badRequest, HttpError } from "./problem.ts";

/** How much of an oversized body is read (and dropped) before giving up on the connection. */
const DISCARD_LIMIT = 1024 * 1024;

function tooLarge(max: number, got: string): HttpError {
  return new HttpError(
    413,
    "body-too-large",
    "Content too large",
    `request body must be at most ${max} bytes (got ${got})`,
    {
      maxBytes: max,
    },
  );
}

/** Reads the body as text, refusing more than `maxBytes`. */
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
    // Past the limit the rest is read and dropped, so the client (still writing) gets its 413
    // instead of a broken pipe; past DISCARD_LIMIT we answer at once and the connection closes.
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else if (size > Math.max(DISCARD_LIMIT, maxBytes))
        settle(() => reject(tooLarge(maxBytes, `more than ${maxBytes} bytes`)));
    });
    req.on("end", () =>
      settle(() =>
        size > maxBytes ? reject(tooLarge(maxBytes, `${size} bytes`)) : resolve(Buffer.concat(chunks).toString("utf8")),
      ),
    );
    req.on("error", (error) => settle(() => reject(error)));
  });
}

/** Reads and parses a JSON body; malformed JSON is a 400 naming the parser's complaint. */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const text = await readBody(req, maxBytes);
  if (text.trim() === "") throw badRequest("invalid-json", "request body is empty; expected JSON");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest("invalid-json", `request body is not valid JSON: ${(error as Error).message}`);
  }
}
