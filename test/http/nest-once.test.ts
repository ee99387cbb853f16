// One count per request in Nest, whatever the number of SluiceGuards: the global guard plus
// @UseGuards(SluiceGuard) (as the README suggests for a route; before, a 4/min route answered
// 200, 200, 429 and listed two policies), or SluiceModule.forRoot in two feature modules.
import "reflect-metadata";
import { Controller, Get, Module, UseGuards } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import { ManualClock } from "sluice";
import { RateLimit, SluiceGuard, SluiceModule } from "sluice/nest";
import { afterEach, describe, expect, test } from "vitest";
import { type Listening, listening } from "../support/listening.ts";

const fixed = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 60_000 }) as const;

let served: Listening | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function start(module: object): Promise<string> {
  const app = await NestFactory.create(module as never, { logger: false });
  await app.listen(0, "127.0.0.1");
  served = await listening(app.getHttpServer(), "127.0.0.1", () => app.close());
  return served.url;
}

/** Statuses of `n` requests to `url`, and the last RateLimit-Policy. */
async function hit(url: string, n: number): Promise<{ statuses: number[]; policy: string | null }> {
  const statuses: number[] = [];
  let policy: string | null = null;
  for (let i = 0; i < n; i++) {
    const res = await fetch(url);
    statuses.push(res.status);
    policy = res.headers.get("ratelimit-policy");
  }
  return { statuses, policy };
}

describe("Nest: one count per request", () => {
  test("the global guard plus @UseGuards(SluiceGuard) on the route", async () => {
    @Controller()
    class SmsController {
      @Get("sms")
      @UseGuards(SluiceGuard)
      @RateLimit(fixed(4))
      send(): string {
        return "sent";
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ spec: fixed(100), clock: new ManualClock(0) })],
      controllers: [SmsController],
    })
    class AppModule {}
    const url = await start(AppModule);
    const { statuses, policy } = await hit(`${url}/sms`, 5);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(policy).toBe('"default";q=4;w=60');
  });

  test("SluiceModule.forRoot in two feature modules", async () => {
    @Controller()
    class AController {
      @Get("a")
      @RateLimit(fixed(4))
      a(): string {
        return "a";
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ spec: fixed(100), clock: new ManualClock(0) })],
      controllers: [AController],
    })
    class FeatureA {}
    @Module({ imports: [SluiceModule.forRoot({ spec: fixed(100), clock: new ManualClock(0) })] })
    class FeatureB {}
    @Module({ imports: [FeatureA, FeatureB] })
    class AppModule {}
    const url = await start(AppModule);
    const { statuses, policy } = await hit(`${url}/a`, 5);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(policy).toBe('"default";q=4;w=60');
  });
});
