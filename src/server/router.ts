/**
 * Routes requests to handlers: auth where needed, 404 / 405 as problem JSON, and a catch-all
 * so no input ever crashes the process (an unexpected error is a logged 500).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { isSluiceError } from "../index.ts";
import { requireToken } from "./auth.ts";
import { handleCheck } from "./check.ts";
import type { ServerContext } from "./context.ts";
import { handleHealth, handleMetrics, handlePage, handleRules, handleStatus } from "./handlers.ts";
import { HttpError, sendProblem } from "./problem.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, ctx: ServerContext) => void | Promise<void>;

interface Route {
  method: "GET" | "POST";
  /** Whether `--token` protects it. Health and the (static) page stay open for probes and browsers. */
  auth: boolean;
  handler: Handler;
}

const ROUTES: Record<string, Route> = {
  "/v1/check": { method: "POST", auth: true, handler: handleCheck },
  "/v1/rules": { method: "GET", auth: true, handler: handleRules },
  "/v1/status": { method: "GET", auth: true, handler: handleStatus },
  "/metrics": { method: "GET", auth: true, handler: handleMetrics },
  "/healthz": { method: "GET", auth: false, handler: handleHealth },
  "/": { method: "GET", auth: false, handler: handlePage },
};

/** The route label for metrics: a known path, or "other" (never the raw path: unbounded). */
export function routeOf(req: IncomingMessage): string {
  const path = (req.url ?? "/").split("?")[0] as string;
  return Object.hasOwn(ROUTES, path) ? path : "other";
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
    const r = Object.hasOwn(ROUTES, path) ? ROUTES[path] : undefined;
    if (r === undefined) throw new HttpError(404, "not-found", "Not found", `no endpoint at ${path}`);
    const method = req.method === "HEAD" && r.method === "GET" ? "GET" : req.method;
    if (method !== r.method) {
      throw new HttpError(
        405,
        "method-not-allowed",
        "Method not allowed",
        `${path} accepts ${r.method} (got ${req.method})`,
        {},
        {
          allow: r.method === "GET" ? "GET, HEAD" : r.method,
        },
      );
    }
    if (r.auth && ctx.token !== undefined) requireToken(req, ctx.token);
    await r.handler(req, res, ctx);
  } catch (error) {
    let problem: HttpError;
    if (error instanceof HttpError) problem = error;
    else if (isSluiceError(error))
      problem = new HttpError(400, "invalid-argument", "Bad request", error.message, { code: error.code });
    else {
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
    if (problem.status === 413) {
      // The rest of an oversized body is not read: close the connection after answering.
      res.setHeader("connection", "close");
      req.resume();
    }
    sendProblem(res, problem, path);
  }
}
