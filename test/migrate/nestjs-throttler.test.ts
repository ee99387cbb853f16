// The NestJS migration side by side: the same app once with @nestjs/throttler (ThrottlerGuard
// app-wide) and once with sluice/nest as docs/migrate/nestjs-throttler.md configures it, sent
// the same requests over loopback. Status codes, which request is refused, and every header the
// throttler sends (`X-RateLimit-Limit[-name]`, `-Remaining`, `-Reset`, `Retry-After[-name]`)
// must agree, resets within the one second a boundary between the two apps' clock readings can
// cross. The skip mapping is checked route by route: `@SkipThrottle()` skips only the throttler
// named `default`, so on an app of named throttlers it skips nothing.
import "reflect-metadata";
import { Controller, Get, type INestApplication, Module, type Type } from "@nestjs/common";
import { APP_GUARD, NestFactory } from "@nestjs/core";
import { SkipThrottle, ThrottlerGuard, ThrottlerModule } from "@nestjs/throttler";
import type { Request } from "express";
import type { RuleSpec } from "sluice";
import { ConfigError } from "sluice";
import { SkipRateLimit, SluiceLimits, SluiceModule } from "sluice/nest";
import { afterEach, describe, expect, test } from "vitest";

const apps: INestApplication[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function serve(module: Type): Promise<string> {
  const app = await NestFactory.create(module, { logger: false });
  apps.push(app);
  await app.listen(0, "127.0.0.1");
  return (await app.getUrl()).replace("[::1]", "127.0.0.1");
}

/** Every header name @nestjs/throttler may send for throttlers named `short`, `long` or `default`. */
const HEADERS = ["", "-short", "-long"].flatMap((suffix) => [
  `x-ratelimit-limit${suffix}`,
  `x-ratelimit-remaining${suffix}`,
  `x-ratelimit-reset${suffix}`,
  `retry-after${suffix}`,
]);
const SECONDS = /^(x-ratelimit-reset|retry-after)/;

async function answer(url: string, path: string) {
  const res = await fetch(`${url}/${path}`);
  await res.arrayBuffer();
  const headers: Record<string, string | null> = {};
  for (const name of HEADERS) headers[name] = res.headers.get(name);
  return { status: res.status, headers };
}

/** Sends `paths` to both apps in turn; compares each answer; returns the statuses. */
async function compare(peer: string, ours: string, paths: readonly string[]): Promise<number[]> {
  const statuses: number[] = [];
  for (const [i, path] of paths.entries()) {
    const a = await answer(peer, path);
    const b = await answer(ours, path);
    const at = `request ${i + 1} (/${path})`;
    expect(b.status, at).toBe(a.status);
    statuses.push(a.status);
    for (const name of HEADERS) {
      const want = a.headers[name];
      const got = b.headers[name];
      expect(got === null, `${name} present on both, ${at}`).toBe(want === null);
      if (want === null || got === null) continue;
      if (SECONDS.test(name)) expect(Math.abs(Number(got) - Number(want)), `${name}, ${at}`).toBeLessThanOrEqual(1);
      else expect(got, `${name}, ${at}`).toBe(want);
    }
  }
  return statuses;
}

describe("@nestjs/throttler → sluice/nest with throttlerHeaders: true", () => {
  test("named throttlers: per-throttler headers, and @SkipThrottle() skips none of them", async () => {
    @Controller()
    class PeerController {
      @Get("items") items() {
        return "items";
      }
      @SkipThrottle() // skips the throttler named "default": there is none
      @Get("health")
      health() {
        return "ok";
      }
      @SkipThrottle({ short: true, long: true })
      @Get("open")
      open() {
        return "open";
      }
      @SkipThrottle({ short: true })
      @Get("slow")
      slow() {
        return "slow";
      }
    }
    @Module({
      imports: [
        ThrottlerModule.forRoot({
          throttlers: [
            { name: "long", ttl: 60_000, limit: 5 },
            { name: "short", ttl: 10_000, limit: 3 },
          ],
        }),
      ],
      controllers: [PeerController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })
    class PeerModule {}

    @Controller()
    class OurController {
      @Get("items") items() {
        return "items";
      }
      // @SkipThrottle() dropped: it skipped nothing here
      @Get("health")
      health() {
        return "ok";
      }
      @SkipRateLimit()
      @Get("open")
      open() {
        return "open";
      }
      @SkipRateLimit("short")
      @Get("slow")
      slow() {
        return "slow";
      }
    }
    const spec: RuleSpec = [
      { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
      { algorithm: "sliding-log", limit: 3, windowMs: 10_000 },
    ];
    @Module({
      imports: [
        SluiceModule.forRoot<Request>({
          spec,
          policyName: ["long", "short"],
          throttlerHeaders: true,
          // The throttler counts each route apart (its key names the handler): so does this.
          key: (req, ip) => `${req.method} ${req.route?.path} ${ip}`,
        }),
      ],
      controllers: [OurController],
    })
    class OurModule {}

    const peer = await serve(PeerModule);
    const ours = await serve(OurModule);
    expect(await compare(peer, ours, ["items", "items", "items", "items", "items"])).toEqual([200, 200, 200, 429, 429]);
    expect(await compare(peer, ours, ["health", "health", "health", "health"])).toEqual([200, 200, 200, 429]);
    expect(await compare(peer, ours, ["open", "open", "open", "open", "open", "open"])).toEqual([
      200, 200, 200, 200, 200, 200,
    ]);
    expect(await compare(peer, ours, ["slow", "slow", "slow", "slow", "slow", "slow"])).toEqual([
      200, 200, 200, 200, 200, 429,
    ]);
  });

  test("one unnamed throttler: it is `default`, unsuffixed, and @SkipThrottle() skips it", async () => {
    @Controller()
    class PeerController {
      @Get("items") items() {
        return "items";
      }
      @SkipThrottle()
      @Get("health")
      health() {
        return "ok";
      }
    }
    @Module({
      imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: 30_000, limit: 2 }] })],
      controllers: [PeerController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })
    class PeerModule {}

    @Controller()
    class OurController {
      @Get("items") items() {
        return "items";
      }
      @SkipRateLimit("default")
      @Get("health")
      health() {
        return "ok";
      }
    }
    @Module({
      imports: [
        SluiceModule.forRoot({
          spec: { algorithm: "sliding-log", limit: 2, windowMs: 30_000 },
          throttlerHeaders: true,
        }),
      ],
      controllers: [OurController],
    })
    class OurModule {}

    const peer = await serve(PeerModule);
    const ours = await serve(OurModule);
    expect(await compare(peer, ours, ["items", "items", "items", "health", "health", "health"])).toEqual([
      200, 200, 429, 200, 200, 200,
    ]);
  });

  test("throttlerHeaders is a boolean, and not given with `headers`", () => {
    const spec = { algorithm: "sliding-log", limit: 2, windowMs: 1000 } as const;
    expect(() => new SluiceLimits({ spec, throttlerHeaders: "yes" as unknown as boolean })).toThrow(
      /`throttlerHeaders` must be a boolean \(got "yes"\)/,
    );
    expect(() => new SluiceLimits({ spec, throttlerHeaders: true, headers: "legacy" })).toThrow(ConfigError);
    expect(() => new SluiceLimits({ spec, throttlerHeaders: true })).not.toThrow();
  });
});
