/** Bearer-token check for API calls (`--token` / `SLUICE_TOKEN`), in constant time. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { HttpError } from "./problem.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * Whether an `Authorization` value carries `Bearer <token>`: "ok", "missing" (no bearer value at
 * all) or "wrong". Shared by the HTTP API and the gRPC listener, so both doors check alike.
 */
export function bearerMatches(header: string, token: string): "ok" | "missing" | "wrong" {
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (match === null) return "missing";
  // Hashing both sides gives equal-length buffers, so the comparison leaks neither content nor length.
  return timingSafeEqual(digest(match[1] as string), digest(token)) ? "ok" : "wrong";
}

/** Throws a 401 problem unless `req` carries `Authorization: Bearer <token>`. */
export function requireToken(req: IncomingMessage, token: string): void {
  const result = bearerMatches(req.headers.authorization ?? "", token);
  if (result === "ok") return;
  throw new HttpError(
    401,
    "unauthorized",
    "Unauthorized",
    result === "missing" ? "this API needs an `Authorization: Bearer <token>` header" : "the bearer token is not valid",
    {},
    { "www-authenticate": 'Bearer realm="sluice"' },
  );
}
