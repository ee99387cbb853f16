/**
 * CORS, off unless `--cors-origin` lists origins: without it no response carries CORS headers,
 * so browsers refuse cross-site reads, and since POST bodies must be `application/json` a page
 * cannot send a check without a preflight, which is refused too.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Headers a browser script may read from our responses. */
const EXPOSED = "RateLimit, RateLimit-Policy, Retry-After";

/** The allowed origin to echo for `req`, or undefined (no Origin, or not listed). */
function allowedOrigin(req: IncomingMessage, origins: readonly string[]): string | undefined {
  const origin = req.headers.origin;
  if (origin === undefined || origins.length === 0) return undefined;
  if (origins.includes("*")) return "*";
  return origins.includes(origin) ? origin : undefined;
}

/** Adds CORS headers to an actual (non-preflight) response when its origin is allowed. */
export function corsHeaders(req: IncomingMessage, res: ServerResponse, origins: readonly string[]): void {
  if (origins.length === 0) return;
  res.setHeader("vary", "Origin");
  const allowed = allowedOrigin(req, origins);
  if (allowed === undefined) return;
  res.setHeader("access-control-allow-origin", allowed);
  res.setHeader("access-control-expose-headers", EXPOSED);
}

/**
 * Answers a preflight (`OPTIONS` with `Access-Control-Request-Method`) for a route accepting
 * `methods`; returns false when `req` is not one, or CORS is off (the router then answers 405).
 */
export function answerPreflight(
  req: IncomingMessage,
  res: ServerResponse,
  origins: readonly string[],
  methods: readonly string[],
): boolean {
  if (origins.length === 0 || req.method !== "OPTIONS" || req.headers["access-control-request-method"] === undefined)
    return false;
  const allowed = allowedOrigin(req, origins);
  const headers: Record<string, string | number> = { vary: "Origin", "content-length": 0 };
  // A preflight from an origin not listed gets no CORS headers: the browser then refuses the call.
  if (allowed !== undefined) {
    headers["access-control-allow-origin"] = allowed;
    headers["access-control-allow-methods"] = methods.join(", ");
    headers["access-control-allow-headers"] = "Authorization, Content-Type";
    headers["access-control-max-age"] = 600;
  }
  res.writeHead(204, headers);
  res.end();
  return true;
}
