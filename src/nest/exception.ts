/**
 * The refusal the guard throws, and the filter that answers it as RFC 9457 problem JSON
 * (`application/problem+json`, which Nest's default filter would turn into `application/json`).
 */
import type { ArgumentsHost, ExceptionFilter } from "@nestjs/common";
import type { HttpAdapterHost } from "@nestjs/core";
import type { Decision } from "../algorithms/decision.ts";
import { PROBLEM_CONTENT_TYPE, type ProblemDetails } from "../http/problem.ts";
import { optionalPeer } from "../optional-peer.ts";
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
    // What a GraphQL error (or a log line) shows: the problem's words, not the class name.
    this.message = problem.detail;
    this.decision = decision;
  }
}

/** Answers a `RateLimitException` with its problem body and media type, on any Nest HTTP platform. */
export class RateLimitExceptionFilter implements ExceptionFilter<RateLimitException> {
  readonly #host: HttpAdapterHost;
  constructor(host: HttpAdapterHost) {
    this.#host = host;
  }

  /**
   * Writes the problem response (unless something already answered). In a GraphQL resolver it
   * hands the exception back: GraphQL answers it as an error of the operation.
   */
  catch(exception: RateLimitException, host: ArgumentsHost): Error | undefined {
    if (host.getType<string>() !== "http") return graphqlError(exception);
    const adapter = this.#host.httpAdapter;
    const response: unknown = host.switchToHttp().getResponse();
    if (adapter.isHeadersSent(response)) {
      adapter.end(response);
      return undefined;
    }
    adapter.setHeader(response, "Content-Type", PROBLEM_CONTENT_TYPE);
    // A string body: the adapter sends it as is, keeping the problem media type.
    adapter.reply(response, JSON.stringify(exception.getResponse()), exception.getStatus());
    return undefined;
  }
}

/** `graphql`'s error class, as far as it is used here (`graphql` is not a dependency of sluice). */
type GraphQLErrorClass = new (
  message: string,
  options: { originalError: Error; extensions: Record<string, unknown> },
) => Error;

/**
 * The error a GraphQL operation answers for a refusal: code `RATE_LIMITED` (or
 * `SERVICE_UNAVAILABLE` for a 503) and the problem in `extensions.problem`, so clients can read
 * `retryAfter`-style figures without parsing the message. Without `graphql`, the exception itself.
 */
function graphqlError(exception: RateLimitException): Error {
  const graphql = optionalPeer<{ GraphQLError: GraphQLErrorClass }>("graphql");
  if (graphql === undefined) return exception;
  const status = exception.getStatus();
  return new graphql.GraphQLError(exception.message, {
    originalError: exception,
    extensions: { code: status === 429 ? "RATE_LIMITED" : "SERVICE_UNAVAILABLE", problem: exception.getResponse() },
  });
}

nestCommonIfPresent?.Catch(RateLimitException)(RateLimitExceptionFilter);
