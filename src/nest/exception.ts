/**
 * The refusal the guard throws, and the filter that answers it as RFC 9457 problem JSON
 * (`application/problem+json`, which Nest's default filter would turn into `application/json`).
 */
import type { ArgumentsHost, ExceptionFilter } from "@nestjs/common";
import type { HttpAdapterHost } from "@nestjs/core";
import type { Decision } from "../algorithms/decision.ts";
import { PROBLEM_CONTENT_TYPE, type ProblemDetails } from "../http/problem.ts";
import { nestCommonIfPresent } from "./peers.ts";

/** Nest's `HttpException`, or a stand-in where Nest is not installed (nothing throws it there). */
const HttpExceptionBase: typeof import("@nestjs/common").HttpException =
  nestCommonIfPresent?.HttpException ??
  (class extends Error {
    constructor(...args: unknown[]) {
      super(String(args[0]));
    }
  } as unknown as typeof import("@nestjs/common").HttpException);

/** A request sluice refused: 429 (limited) or 503 (the store failed under "deny"); the response is the problem body. */
export class RateLimitException extends HttpExceptionBase {
  /** The decision behind the refusal (absent for a deny-listed client or an unknown tier). */
  readonly decision: Decision | undefined;
  constructor(problem: ProblemDetails, decision: Decision | undefined) {
    super(problem, problem.status);
    this.name = "RateLimitException";
    this.decision = decision;
  }
}

/** Answers a `RateLimitException` with its problem body and media type, on any Nest HTTP platform. */
export class RateLimitExceptionFilter implements ExceptionFilter<RateLimitException> {
  readonly #host: HttpAdapterHost;
  constructor(host: HttpAdapterHost) {
    this.#host = host;
  }

  /** Writes the problem response (unless something already answered). */
  catch(exception: RateLimitException, host: ArgumentsHost): void {
    const adapter = this.#host.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    if (adapter.isHeadersSent(response)) {
      adapter.end(response);
      return;
    }
    adapter.setHeader(response, "Content-Type", PROBLEM_CONTENT_TYPE);
    // A string body: the adapter sends it as is, keeping the problem media type.
    adapter.reply(response, JSON.stringify(exception.getResponse()), exception.getStatus());
  }
}

nestCommonIfPresent?.Catch(RateLimitException)(RateLimitExceptionFilter);
