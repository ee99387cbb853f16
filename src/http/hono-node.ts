/**
 * The raw Node response behind a Hono context on `@hono/node-server`: Hono's `rateLimit` and
 * `loadShed` both hold their slot until it ends (a streamed body included), as on every other
 * Node adapter; a Response returned by the handler says nothing about when its body was sent.
 */
import type { ServerResponse } from "node:http";
import type { Context } from "hono";

/** `@hono/node-server`'s raw response (`c.env.outgoing`), when the app runs on it. */
export function nodeResponse(c: Context): ServerResponse | undefined {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return typeof (outgoing as ServerResponse | undefined)?.once === "function"
    ? (outgoing as ServerResponse)
    : undefined;
}
