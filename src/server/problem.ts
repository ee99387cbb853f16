/**
 * Errors the service answers with, thrown by handlers and written by the router as problem JSON
 * built by src/http/problem.ts (the one definition of sluice's problem bodies): a stable `type`
 * URN, the HTTP status and a `detail` naming what was wrong.
 */
import type { ServerResponse } from "node:http";
import { PROBLEM_CONTENT_TYPE, problem } from "../http/problem.ts";

/** A request the service refuses; the router turns it into a problem response. */
export class HttpError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Short stable slug, the tail of the problem `type` (e.g. `unknown-rule`). */
  readonly slug: string;
  /** Human title of the problem kind. */
  readonly title: string;
  /** Extra members for the problem body (e.g. `index` of a bad batch item). */
  readonly extra: Record<string, unknown>;
  /** Extra response headers (e.g. `WWW-Authenticate`). */
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    slug: string,
    title: string,
    detail: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(detail);
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.extra = extra;
    this.headers = headers;
  }
}

/** Writes `error` as problem JSON. */
export function sendProblem(res: ServerResponse, error: HttpError, instance?: string): void {
  const body = JSON.stringify(
    problem(error.status, error.slug, error.title, error.message, {
      ...(instance === undefined ? {} : { instance }),
      ...error.extra,
    }),
  );
  res.writeHead(error.status, {
    "content-type": PROBLEM_CONTENT_TYPE,
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

/** Shorthand for a 400 with `slug`. */
export function badRequest(slug: string, detail: string, extra?: Record<string, unknown>): HttpError {
  return new HttpError(400, slug, "Bad request", detail, extra);
}
