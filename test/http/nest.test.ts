// sluice/nest on a real Nest 11 app (platform-express) over loopback. Controllers are written as
// Nest users write them, with legacy decorators (vitest.config.ts, tsconfig.test.json), and
// without emitDecoratorMetadata: injection is by explicit @Inject tokens.
import "reflect-metadata";
import { randomUUID } from "node:crypto";
import {
  All,
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  HttpException,
  type INestApplication,
  Inject,
  Module,
  Req,
  Res,
  type Type,
  UseGuards,
} from "@nestjs/common";
import { APP_FILTER, NestFactory } from "@nestjs/core";
import type { Request, Response } from "express";
import { Redis } from "ioredis";
import { ArgumentError, ConfigError, type Decision, ManualClock, RateLimiterService } from "sluice";
import type { HandleKey, PeekOptions } from "sluice/http";
import {
  RateLimit,
  SkipRateLimit,
  SluiceGuard,
  SluiceLimits,
  SluiceModule,
  type SluiceModuleOptions,
} from "sluice/nest";
import { RedisStore } from "sluice/redis";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { deadIoredis } from "../support/redis-server.ts";
import { conformance, hangSignals, type Options, routeOf, type Served } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

class SlowDown extends HttpException {
  constructor() {
    super("slow down", 429);
  }
}

@Catch(SlowDown)
class SlowDownFilter implements ExceptionFilter {
  catch(_exception: SlowDown, host: ArgumentsHost): void {
    host.switchToHttp().getResponse<Response>().status(429).send("slow down");
  }
}

/** A controller answering the conformance routes (see routeOf), with its own `/hang` signals. */
function routesController(hang: ReturnType<typeof hangSignals>): Type {
  @Controller()
  class RoutesController {
    @All("{*path}")
    answer(@Req() req: Request & { rateLimit?: Decision }, @Res() res: Response): void {
      const route = routeOf(req.url);
      if (route.kind === "throw") throw new Error("handler failed");
      if (route.kind === "hang") {
        hang.enter();
        res.once("close", () => {
          if (route.late !== undefined) res.status(route.late).send("late");
          hang.leave();
        });
        return;
      }
      if (route.kind === "decision") {
        res.json(req.rateLimit ?? null);
        return;
      }
      if (route.kind === "stream") {
        res.write("o");
        setImmediate(() => res.end("k"));
        return;
      }
      res.status(route.kind === "status" ? route.code : 200).send("ok");
    }
  }
  return RoutesController;
}

async function listen(module: Type): Promise<Served & { app: INestApplication }> {
  const app = await NestFactory.create(module, { logger: false });
  await app.listen(0, "127.0.0.1");
  return { app, ...(await listening(app.getHttpServer(), "127.0.0.1", () => app.close())) };
}

async function serveNest(options: Options | Options[]): Promise<Served> {
  if (Array.isArray(options)) throw new Error("Nest applies one limit per route (no stacked middlewares)");
  const { customLimited, ...rest } = options;
  if (customLimited) rest.onLimited = () => new SlowDown();
  const hang = hangSignals();
  @Module({
    imports: [SluiceModule.forRoot(rest as SluiceModuleOptions)],
    controllers: [routesController(hang)],
    providers: [{ provide: APP_FILTER, useClass: SlowDownFilter }],
  })
  class AppModule {}
  const served = await listen(AppModule);
  const limits = served.app.get(SluiceLimits);
  const handles = {
    reset: (key: HandleKey) => limits.reset(key),
    peek: (key: HandleKey, options?: PeekOptions) => limits.peek(key, undefined, options),
    get: (key: HandleKey, options?: PeekOptions) => limits.get(key, undefined, options),
  };
  return { ...served, hang: hang.served, handles };
}

const nestAdapter = {
  serve: serveNest,
  header: (request: unknown, name: string) => (request as Request).get(name),
  path: (request: unknown) => (request as Request).path,
};
conformance("nest (platform-express)", nestAdapter);
features("nest (platform-express)", nestAdapter, { stacking: false });
leases("nest (platform-express)", nestAdapter);

const fixed = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 60_000 }) as const;
const statuses = async (url: string, n: number) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await fetch(url)).status);
  return out;
};

describe("nest", () => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  @RateLimit(fixed(3))
  @Controller("account")
  class AccountController {
    @Get("profile")
    profile(@Req() request: Request & { rateLimit?: Decision }): string {
      return `remaining ${request.rateLimit?.remaining}`;
    }

    @Get("settings")
    settings(): string {
      return "settings";
    }

    @RateLimit(fixed(1), { policyName: "login", key: () => "everyone" })
    @Get("login")
    login(): string {
      return "login";
    }

    @SkipRateLimit()
    @Get("health")
    health(): string {
      return "health";
    }
  }

  @SkipRateLimit()
  @Controller("public")
  class PublicController {
    @Get("free")
    free(): string {
      return "free";
    }

    @SkipRateLimit(false)
    @Get("counted")
    counted(): string {
      return "counted";
    }
  }

  test("route, controller and module limits; skips; the decision on request.rateLimit", async () => {
    @Module({
      imports: [SluiceModule.forRoot({ spec: fixed(2), clock: new ManualClock(0) })],
      controllers: [AccountController, PublicController],
    })
    class AppModule {}
    served = await listen(AppModule);
    const { url } = served;
    // The controller's limit: one budget of 3 shared by its routes.
    const profile = await fetch(`${url}/account/profile`);
    expect(await profile.text()).toBe("remaining 2");
    expect(profile.headers.get("ratelimit")).toBe('"default";r=2;t=60');
    expect(await statuses(`${url}/account/settings`, 3)).toEqual([200, 200, 429]);
    // The handler's own limit replaces the controller's, under its own name and key.
    const login = await fetch(`${url}/account/login`);
    expect([login.status, login.headers.get("ratelimit-policy")]).toEqual([200, '"login";q=1;w=60']);
    const denied = await fetch(`${url}/account/login`);
    expect(denied.status).toBe(429);
    expect(denied.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await denied.json()).toMatchObject({ status: 429, "violated-policies": ["login"] });
    // Skipped: no headers, never limited.
    for (const path of ["/account/health", "/public/free", "/public/free", "/public/free"]) {
      const res = await fetch(`${url}${path}`);
      expect([res.status, res.headers.get("ratelimit")]).toEqual([200, null]);
    }
    // Re-enabled in a skipped controller: the module-wide limit (2).
    expect(await statuses(`${url}/public/counted`, 3)).toEqual([200, 200, 429]);
  });

  test("per-member overrides and skips on the module-wide composite; handles through SluiceLimits", async () => {
    @Controller("m")
    class MembersController {
      @Get("plain")
      plain(): string {
        return "plain";
      }

      @RateLimit({ short: fixed(1) })
      @Get("tight")
      tight(): string {
        return "tight";
      }

      @SkipRateLimit("long")
      @Get("burst")
      burst(): string {
        return "burst";
      }

      @SkipRateLimit("short", "long")
      @Get("none")
      none(): string {
        return "none";
      }
    }
    @Module({
      imports: [
        SluiceModule.forRoot({
          spec: [fixed(3), { algorithm: "fixed-window", limit: 4, windowMs: 3_600_000 }],
          policyName: ["short", "long"],
          clock: new ManualClock(1_800_000_000_000),
        }),
      ],
      controllers: [MembersController],
    })
    class AppModule {}
    served = await listen(AppModule);
    const { url, app } = served as Served & { app: INestApplication };
    // The overridden member: short is 1 here, long stays as the module says (the route's own state).
    const tight = await fetch(`${url}/m/tight`);
    expect(tight.headers.get("ratelimit-policy")).toBe('"short";q=1;w=60, "long";q=4;w=3600');
    expect((await fetch(`${url}/m/tight`)).status).toBe(429);
    // Without "long": only short (3) applies.
    const burst = await fetch(`${url}/m/burst`);
    expect(burst.headers.get("ratelimit-policy")).toBe('"short";q=3;w=60');
    expect(await statuses(`${url}/m/burst`, 3)).toEqual([200, 200, 429]);
    // Every member skipped: no limit at all.
    const none = await fetch(`${url}/m/none`);
    expect([none.status, none.headers.get("ratelimit")]).toEqual([200, null]);
    // Untouched routes keep the module-wide composite; its handles reach its state.
    expect(await statuses(`${url}/m/plain`, 4)).toEqual([200, 200, 200, 429]);
    const limits = app.get(SluiceLimits);
    expect((await limits.peek("127.0.0.1")).allowed).toBe(false);
    await limits.reset("127.0.0.1");
    expect((await fetch(`${url}/m/plain`)).status).toBe(200);
    // A route limit's handles by its state name.
    expect((await limits.peek("127.0.0.1", "MembersController.tight")).allowed).toBe(false);
    await limits.reset("127.0.0.1", "MembersController.tight");
    expect((await fetch(`${url}/m/tight`)).status).toBe(200);
    expect(() => limits.peek("127.0.0.1", "nope")).toThrow(/no limit named "nope"/);
  });

  test("per-member overrides name members the module-wide composite has", async () => {
    @Controller()
    class TypoController {
      @RateLimit({ shrot: fixed(1) })
      @Get()
      get(): string {
        return "x";
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ spec: [fixed(3), fixed(5)], policyName: ["short", "long"] })],
      controllers: [TypoController],
    })
    class AppModule {}
    await expect(NestFactory.create(AppModule, { logger: false }).then((a) => a.init())).rejects.toThrow(
      /no member named "shrot" \(members: "short", "long"\)/,
    );
    expect(() => RateLimit({ short: { algorithm: "fixed-window", limit: 0, windowMs: 1 } })).toThrow(/short.*limit/);
  });

  test("appGuard: false limits only where @UseGuards(SluiceGuard) is applied", async () => {
    @Controller()
    class MixedController {
      @Get("free")
      free(): string {
        return "free";
      }

      @UseGuards(SluiceGuard)
      @Get("guarded")
      guarded(): string {
        return "guarded";
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({ spec: fixed(1), clock: new ManualClock(0), appGuard: false })],
      controllers: [MixedController],
    })
    class AppModule {}
    served = await listen(AppModule);
    expect(await statuses(`${served.url}/free`, 3)).toEqual([200, 200, 200]);
    expect(await statuses(`${served.url}/guarded`, 2)).toEqual([200, 429]);
  });

  test("forRootAsync builds the options from injected providers", async () => {
    const CLOCK = Symbol("clock");
    @Module({ providers: [{ provide: CLOCK, useValue: new ManualClock(0) }], exports: [CLOCK] })
    class ClockModule {}
    @Module({
      imports: [
        SluiceModule.forRootAsync({
          imports: [ClockModule],
          inject: [CLOCK],
          useFactory: (clock: ManualClock) => ({ spec: fixed(1), clock }),
        }),
      ],
      controllers: [routesController(hangSignals())],
    })
    class AppModule {}
    served = await listen(AppModule);
    expect(await statuses(served.url, 2)).toEqual([200, 429]);
  });

  test("a controller that injects by explicit token (no emitDecoratorMetadata) gets the limits too", async () => {
    const GREETING = Symbol("greeting");
    @Controller()
    class GreetingController {
      readonly #greeting: string;
      constructor(@Inject(GREETING) greeting: string) {
        this.#greeting = greeting;
      }

      @RateLimit(fixed(1))
      @Get("hi")
      hi(): string {
        return this.#greeting;
      }
    }
    @Module({
      imports: [SluiceModule.forRoot({})],
      controllers: [GreetingController],
      providers: [{ provide: GREETING, useValue: "hello" }],
    })
    class AppModule {}
    served = await listen(AppModule);
    const first = await fetch(`${served.url}/hi`);
    expect([first.status, await first.text()]).toEqual([200, "hello"]);
    expect((await fetch(`${served.url}/hi`)).status).toBe(429);
  });

  test("decorators applied as plain calls (for code compiled without decorator syntax)", async () => {
    class PlainController {
      ping(): string {
        return "pong";
      }
    }
    const method = Object.getOwnPropertyDescriptor(PlainController.prototype, "ping") as PropertyDescriptor;
    Reflect.decorate([Get("ping"), RateLimit(fixed(1))], PlainController.prototype, "ping", method);
    Reflect.decorate([Controller("plain")], PlainController);
    class AppModule {}
    Reflect.decorate([Module({ imports: [SluiceModule.forRoot({})], controllers: [PlainController] })], AppModule);
    served = await listen(AppModule);
    expect(await statuses(`${served.url}/plain/ping`, 2)).toEqual([200, 429]);
  });

  test("bad options fail early with typed errors naming what was wrong", () => {
    expect(() => SluiceModule.forRoot({ spec: fixed(1), limit: 5 } as never)).toThrow(ArgumentError);
    expect(() => SluiceModule.forRoot({ spec: fixed(1), limit: 5 } as never)).toThrow(
      /unknown rateLimit option `limit` \(`limit` belongs inside `spec`\)/,
    );
    expect(() => RateLimit({ algorithm: "fixed-window", limit: 0, windowMs: 1000 })).toThrow(ConfigError);
    expect(() => RateLimit(fixed(1), { ttl: 5 } as never)).toThrow(/unknown option `ttl`/);
    expect(() => SluiceModule.forRoot({ rule: "api" })).toThrow(/no `service`/);
  });

  test("a bad @RateLimit fails at startup: two different limits under one name, an unknown rule", async () => {
    @Controller()
    class Clash {
      @RateLimit(fixed(1), { name: "shared" })
      @Get("a")
      a(): string {
        return "a";
      }

      @RateLimit(fixed(2), { name: "shared" })
      @Get("b")
      b(): string {
        return "b";
      }
    }
    @Module({ imports: [SluiceModule.forRoot({})], controllers: [Clash] })
    class ClashModule {}
    await expect(listen(ClashModule)).rejects.toThrow(/two different limits are named "shared"/);

    @Controller()
    class Typo {
      @RateLimit("logni")
      @Get("login")
      login(): string {
        return "login";
      }
    }
    const service = new RateLimiterService().addRule("login", fixed(1));
    @Module({ imports: [SluiceModule.forRoot({ service })], controllers: [Typo] })
    class TypoModule {}
    const failure = listen(TypoModule);
    await expect(failure).rejects.toThrow(ConfigError);
    await expect(failure).rejects.toThrow(/rule "logni", which `service` does not have/);

    // Rules a provider adds during onModuleInit exist by then: no false alarm.
    const late = new RateLimiterService();
    @Module({
      imports: [SluiceModule.forRoot({ service: late })],
      controllers: [Typo],
      providers: [{ provide: "rules", useValue: { onModuleInit: () => late.addRule("logni", fixed(1)) } }],
    })
    class LateModule {}
    served = await listen(LateModule);
    expect(await statuses(`${served.url}/login`, 2)).toEqual([200, 429]);
  });
});

describe("nest on Redis", () => {
  const prefix = `test-nest-${randomUUID()}:`;
  const clients: Redis[] = [];
  afterAll(async () => {
    const client = new Redis({ host: "127.0.0.1", port: 6379 });
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
    for (const c of clients) c.disconnect();
  });

  @Controller()
  class ApiController {
    @RateLimit("login", { key: (request: Request) => request.get("x-user") ?? "anonymous" })
    @Get("login")
    login(): string {
      return "login";
    }

    @RateLimit([fixed(2)], { policyName: ["per-minute"] })
    @Get("search")
    search(): string {
      return "search";
    }

    @Get("other")
    other(): string {
      return "other";
    }
  }

  async function app(): Promise<Served & { app: INestApplication }> {
    const client = new Redis({ host: "127.0.0.1", port: 6379 });
    clients.push(client);
    const store = new RedisStore({ client, prefix });
    const service = new RateLimiterService({ store }).addRule("login", fixed(2));
    @Module({
      imports: [SluiceModule.forRoot({ service, spec: fixed(100) })],
      controllers: [ApiController],
    })
    class AppModule {}
    return listen(AppModule);
  }

  test("service rules and spec limits on a RedisStore are shared by two app instances, per route", async () => {
    const one = await app();
    const two = await app();
    try {
      const login = (s: Served, user: string) =>
        fetch(`${s.url}/login`, { headers: { "x-user": user } }).then((r) => r.status);
      expect(await login(one, "ann")).toBe(200);
      expect(await login(two, "ann")).toBe(200);
      expect(await login(one, "ann")).toBe(429);
      expect(await login(two, "bob")).toBe(200);
      const search = await fetch(`${one.url}/search`);
      expect(search.headers.get("ratelimit-policy")).toBe('"per-minute";q=2;w=60');
      expect((await fetch(`${two.url}/search`)).status).toBe(200);
      const denied = await fetch(`${one.url}/search`);
      expect(denied.status).toBe(429);
      expect(await denied.json()).toMatchObject({ "violated-policies": ["per-minute"] });
      // Another route is another budget (the module-wide spec), untouched by the others.
      const other = await fetch(`${two.url}/other`);
      expect(other.status).toBe(200);
      expect(other.headers.get("ratelimit")).toMatch(/^"default";r=99;t=\d+$/); // t: Redis time, window-aligned
    } finally {
      await one.close();
      await two.close();
    }
  });

  test("a dead Redis under onError deny answers 503 problem JSON (not 429, not a pass)", async () => {
    const client = deadIoredis();
    clients.push(client);
    @Module({
      imports: [SluiceModule.forRoot({ spec: fixed(5), store: new RedisStore({ client, prefix, onError: "deny" }) })],
      controllers: [routesController(hangSignals())],
    })
    class AppModule {}
    const served = await listen(AppModule);
    try {
      const res = await fetch(served.url);
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        status: 503,
        title: "Store unavailable",
        type: "urn:sluice:problem:store-unavailable",
      });
    } finally {
      await served.close();
    }
  });
});
