/**
 * Routes requests to handlers: auth where needed, 404 / 405 as problem JSON, and a catch-all
 * so no input ever crashes the process (an unexpected error is a logged 500).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { isSluiceError } from "../index.ts";
import { requireToken } from "./auth.ts";
import { handleCheck, handlePeek, handleRefund, handleRelease, handleRenew, handleReset } from "./check.ts";
import { show } from "./check-items.ts";
import type { ServerContext } from "./context.ts";
import { answerPreflight, corsHeaders } from "./cors.ts";
import { handleForwardAuth } from "./forward-auth.ts";
import { handleFavicon, handleHealth, handleMetrics, handlePage, handleRules, handleStatus } from "./handlers.ts";
import { handleOpenApi } from "./openapi.ts";
import { HttpError, sendProblem } from "./problem.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, ctx: ServerContext) => void | Promise<void>;

/** One endpoint. */
export interface Route {
  method: "GET" | "POST";
  /** Whether `--token` protects it. Health, the API description and the (static) page stay open for probes and browsers. */
  auth: boolean;
  handler: Handler;
}

/** Every endpoint by path (the OpenAPI test checks the document against this table). */
export const ROUTES: ReadonlyMap<string, Route> = new Map<string, Route>([
  ["/v1/check", { method: "POST", auth: true, handler: handleCheck }],
  ["/v1/peek", { method: "POST", auth: true, handler: handlePeek }],
  ["/v1/reset", { method: "POST", auth: true, handler: handleReset }],
  ["/v1/refund", { method: "POST", auth: true, handler: handleRefund }],
  ["/v1/release", { method: "POST", auth: true, handler: handleRelease }],
  ["/v1/renew", { method: "POST", auth: true, handler: handleRenew }],
  ["/v1/forward-auth", { method: "GET", auth: true, handler: handleForwardAuth }],
  ["/v1/rules", { method: "GET", auth: true, handler: handleRules }],
  ["/v1/status", { method: "GET", auth: true, handler: handleStatus }],
  ["/metrics", { method: "GET", auth: true, handler: handleMetrics }],
  ["/healthz", { method: "GET", auth: false, handler: handleHealth }],
  // envoyproxy/ratelimit's health path, so probes written for it work unchanged.
  ["/healthcheck", { method: "GET", auth: false, handler: handleHealth }],
  ["/openapi.json", { method: "GET", auth: false, handler: handleOpenApi }],
  ["/", { method: "GET", auth: false, handler: handlePage }],
  ["/favicon.ico", { method: "GET", auth: false, handler: handleFavicon }],
]);

/** The route label for metrics: a known path, or "other" (never the raw path: unbounded). */
export function routeOf(req: IncomingMessage): string {
  const path = (req.url ?? "/").split("?")[0] as string;
  return ROUTES.has(path) ? path : "other";
}

/** Handles one request; never throws. */
export async function route(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ServerContext,
  log: (line: string) => void,
): Promise<void> {
  const path = (req.url ?? "/").split("?")[0] as string;
  try {
    const r = ROUTES.get(path);
    if (r === undefined) throw new HttpError(404, "not-found", "Not found", `no endpoint at ${show(path)}`);
    const methods = r.method === "GET" ? ["GET", "HEAD"] : [r.method];
    if (answerPreflight(req, res, ctx.corsOrigins, methods)) return;
    corsHeaders(req, res, ctx.corsOrigins);
    // The token first: without it, a client learns nothing about an endpoint, its methods included.
    if (r.auth && ctx.token !== undefined) requireToken(req, ctx.token);
    const method = req.method === "HEAD" && r.method === "GET" ? "GET" : req.method;
    if (method !== r.method) {
      throw new HttpError(
        405,
        "method-not-allowed",
        "Method not allowed",
        `${path} accepts ${r.method} (got ${show(req.method)})`,
        {},
        {
          allow: methods.join(", "),
        },
      );
    }
    await r.handler(req, res, ctx);
  } catch (error) {
    let problem: HttpError;
    if (error instanceof HttpError) problem = error;
    else if (isSluiceError(error))
      problem = new HttpError(400, "invalid-argument", "Bad request", error.message, { code: error.code });
    else if (
      req.destroyed ||
      (error as NodeJS.ErrnoException)?.code === "ECONNRESET" ||
      (error as Error)?.message === "aborted"
    ) {
      // The client went away mid-request: nobody is waiting for an answer, and nothing failed here.
      res.destroy();
      return;
    } else {
      log(`error handling ${req.method} ${path}: ${(error as Error)?.stack ?? String(error)}`);
      problem = new HttpError(
        500,
        "internal",
        "Internal error",
        "the service failed to answer this request; see its log",
      );
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
    if (hasBody && !req.complete) {
      // The rest of the body (oversized, of a refused type, or never asked for) is read and
      // dropped, not cut: closing while the client still sends resets its upload, and it sees
      // a broken pipe (Node's fetch: EPIPE), never this answer. Bounded in time by the
      // server's requestTimeout (15 s from the request's start), and nothing of it is kept.
      req.removeAllListeners("data");
      req.resume();
    }
    sendProblem(res, problem, path);
  }
}
