// sluice/nest on a real Nest 11 GraphQL app (@nestjs/graphql + Apollo on platform-express):
// resolvers are limited per HTTP request, like routes. Decorators as Nest users write them
// (legacy, no emitDecoratorMetadata: GraphQL types are given explicitly).
import "reflect-metadata";
import { ApolloDriver, type ApolloDriverConfig } from "@nestjs/apollo";
import { Module } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { GraphQLModule, Mutation, Query, Resolver } from "@nestjs/graphql";
import { ManualClock } from "sluice";
import { RateLimit, SkipRateLimit, SluiceModule } from "sluice/nest";
import { afterEach, describe, expect, test } from "vitest";
import { type Listening, listening } from "../support/listening.ts";
import { parseRateLimit } from "./conformance.ts";

const fixed = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 60_000 }) as const;

let sent = 0;

@Resolver()
class SmsResolver {
  @Query(() => String)
  hello(): string {
    return "world";
  }

  @Query(() => String)
  other(): string {
    return "other";
  }

  @SkipRateLimit()
  @Query(() => String)
  health(): string {
    return "ok";
  }

  @RateLimit(fixed(1), { name: "sms" })
  @Mutation(() => Number)
  sendSms(): number {
    return ++sent;
  }
}

@Module({
  imports: [
    GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    SluiceModule.forRoot({ spec: fixed(2), clock: new ManualClock(0) }),
  ],
  providers: [SmsResolver],
})
class AppModule {}

interface GraphqlAnswer {
  status: number;
  rateLimit: string | null;
  data: Record<string, unknown> | null;
  errors: { message: string; extensions?: Record<string, unknown> }[] | undefined;
}

describe("nest: GraphQL resolvers", () => {
  let served: Listening | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  const start = async () => {
    const app = await NestFactory.create(AppModule, { logger: false });
    await app.listen(0, "127.0.0.1");
    served = await listening(app.getHttpServer(), "127.0.0.1", () => app.close());
    const url = `${served.url}/graphql`;
    return async (query: string): Promise<GraphqlAnswer> => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const body = (await res.json()) as Omit<GraphqlAnswer, "status" | "rateLimit">;
      return { status: res.status, rateLimit: res.headers.get("ratelimit"), data: body.data, errors: body.errors };
    };
  };

  test("queries are limited per HTTP request, with headers; a limited one is a GraphQL error", async () => {
    sent = 0;
    const gql = await start();
    const first = await gql("{ hello other }"); // two resolvers, one request: counted once
    expect(first.data).toEqual({ hello: "world", other: "other" });
    expect(parseRateLimit(first.rateLimit)).toEqual({ default: { r: 1, t: 60 } });
    expect((await gql("{ hello }")).data).toEqual({ hello: "world" });
    const limited = await gql("{ hello }");
    expect(limited.data).toBeNull();
    expect(limited.errors?.[0]?.message).toMatch(/too many requests/i);
    expect(limited.errors?.[0]?.extensions).toMatchObject({ code: "RATE_LIMITED", problem: { status: 429 } });
    expect(parseRateLimit(limited.rateLimit)).toEqual({ default: expect.objectContaining({ r: 0 }) });
    // @SkipRateLimit on a resolver: not limited.
    expect((await gql("{ health }")).data).toEqual({ health: "ok" });
  });

  test("a resolver's own @RateLimit replaces the module's", async () => {
    sent = 0;
    const gql = await start();
    expect((await gql("mutation { sendSms }")).data).toEqual({ sendSms: 1 });
    const limited = await gql("mutation { sendSms }");
    expect(limited.errors?.[0]?.extensions).toMatchObject({ code: "RATE_LIMITED", problem: { status: 429 } });
    expect(sent).toBe(1);
  });
});
