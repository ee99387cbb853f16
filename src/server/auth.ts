/** Bearer-token check for API calls (`--token` / `SLUICE_TOKEN`), in constant time. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { HttpError } from "./problem.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Throws a 401 problem unless `req` carries `Authorization: Bearer <token>`. */
export function requireToken(req: IncomingMessage, token: string): void {
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  // Hashing both sides gives equal-length buffers, so the comparison leaks neither content nor length.
  if (match !== null && timingSafeEqual(digest(match[1] as string), digest(token))) return;
  throw new HttpError(
    401,
    "unauthorized",
    "Unauthorized",
    match === null ? "this API needs an `Authorization: Bearer <token>` header" : "the bearer token is not valid",
    {},
    { "www-authenticate": 'Bearer realm="sluice"' },
  );
}
