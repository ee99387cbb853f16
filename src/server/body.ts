/**
 * Reading request bodies with a hard size limit: a declared Content-Length over the limit is
 * refused before a byte is read, and a chunked body is cut off as soon as it passes the limit.
 */
import type { IncomingMessage } from "node:http";
import { badRequest, HttpError } from "./problem.ts";

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
    let failed = false;
    req.on("data", (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > maxBytes) {
        failed = true;
        reject(tooLarge(maxBytes, `more than ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!failed) resolve(Buffer.concat(chunks).toString("utf8"));
    });
    req.on("error", (error) => {
      if (!failed) reject(error);
    });
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
