/**
 * `@nestjs/common` and `@nestjs/core`, loaded on first use: `import "sluice/nest"` works where
 * Nest is not installed, and using it there says what to install.
 */
import type { ServerResponse } from "node:http";
import type { ExecutionContext } from "@nestjs/common";
import { optionalPeer, requirePeer } from "../optional-peer.ts";

type Common = typeof import("@nestjs/common");
type Core = typeof import("@nestjs/core");

/** `@nestjs/common`, or `undefined` when it is not installed (for metadata applied at load). */
export const nestCommonIfPresent: Common | undefined = optionalPeer<Common>("@nestjs/common");

/** `@nestjs/common` (throws naming the package when it is missing). */
export function nestCommon(): Common {
  return nestCommonIfPresent ?? requirePeer<Common>("@nestjs/common", "sluice/nest");
}

/** `@nestjs/core` (throws naming the package when it is missing). */
export function nestCore(): Core {
  return requirePeer<Core>("@nestjs/core", "sluice/nest");
}

/** What `GqlExecutionContext` offers that the guard reads (typed here: `@nestjs/graphql` is not a dependency). */
interface GraphqlPeer {
  GqlExecutionContext: { create(context: ExecutionContext): { getContext<T>(): T } };
}

/** A request and its response, as the guard handles them. */
export interface Exchange {
  readonly request: object;
  readonly response: { raw?: ServerResponse; setHeader?: (name: string, value: string) => unknown };
}

/**
 * The HTTP request (and response) behind a `graphql` context: `ctx.getContext().req` (and
 * `.res`, else Express's `req.res`, else Fastify's `req.raw`'s reply), through `@nestjs/graphql`,
 * loaded on the first GraphQL context (only an app that has it installed makes one). Undefined
 * when the operation has no HTTP request (a subscription over WebSockets).
 */
export function graphqlExchange(context: ExecutionContext): Exchange | undefined {
  const graphql = requirePeer<GraphqlPeer>("@nestjs/graphql", "sluice/nest (GraphQL contexts)");
  const ctx = graphql.GqlExecutionContext.create(context).getContext<{ req?: object; res?: object; reply?: object }>();
  const request = ctx?.req;
  if (request === undefined || request === null) return undefined;
  const response = ctx.res ?? ctx.reply ?? (request as { res?: object }).res;
  if (response === undefined) return undefined;
  return { request, response: response as Exchange["response"] };
}
