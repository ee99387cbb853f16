// Middleware identity on a real Redis (findRedis(): REDIS_URL, 6379 or one started here; a prefix unique to this run): `name`
// separates two middlewares with one spec on one store, and client-chosen key text cannot reach
// a hashed key's or an address's counter.
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { ManualClock } from "sluice";
import { type RateLimit, rateLimit } from "sluice/http";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("HTTP identity on Redis");
const client = new Redis(redis?.url ?? "redis://127.0.0.1:1", { lazyConnect: true, enableOfflineQueue: false });
const servers: http.Server[] = [];
let store: RedisStore;

beforeAll(async () => {
  if (redis === undefined) return;
  await client.connect();
  store = new RedisStore({ client, prefix: uniquePrefix("http-identity") });
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  client.disconnect();
});

async function serve(options: Parameters<typeof rateLimit>[0], made?: (limit: RateLimit) => void): Promise<string> {
  const limit = rateLimit(options);
  made?.(limit);
  const server = http.createServer(async (req, res) => {
    if (await limit(req, res)) res.end("ok");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const status = async (url: string, headers: Record<string, string> = {}) => (await fetch(url, { headers })).status;
const log = { algorithm: "sliding-log", limit: 1, windowMs: 60_000 } as const;

describe.skipIf(redis === undefined)("middleware identity on Redis", () => {
  test("two named middlewares with one spec keep separate counters; unnamed ones share", async () => {
    const clock = new ManualClock(1_000_000);
    const login = await serve({ spec: log, store, clock, name: "login" });
    const signup = await serve({ spec: log, store, clock, name: "signup" });
    expect([await status(login), await status(login)]).toEqual([200, 429]);
    expect(await status(signup)).toBe(200);
    const sharedSpec = { algorithm: "sliding-log", limit: 1, windowMs: 61_000 } as const;
    const a = await serve({ spec: sharedSpec, store, clock });
    const b = await serve({ spec: sharedSpec, store, clock });
    expect(await status(a)).toBe(200);
    expect(await status(b)).toBe(429);
  });

  test("a key sent as `sha256:<hash>` or as an address does not reach the victim's counter", async () => {
    const url = await serve({
      spec: log,
      store,
      clock: new ManualClock(1_000_000),
      name: "keys",
      key: (req) => req.headers["x-key"] as string | undefined,
    });
    const victim = "v".repeat(500);
    const hash = createHash("sha256").update(victim).digest("base64url");
    expect(await status(url, { "x-key": `sha256:${hash}` })).toBe(200);
    expect(await status(url, { "x-key": `h:${hash}` })).toBe(200);
    expect(await status(url, { "x-key": "127.0.0.1" })).toBe(200);
    expect(await status(url, { "x-key": "a:127.0.0.1" })).toBe(200);
    expect(await status(url, { "x-key": victim })).toBe(200);
    expect(await status(url)).toBe(200); // no key: the address, untouched by the keys above
    expect(await status(url)).toBe(429);
  });

  test("handles reach the middleware's state on Redis: by key, by address, per spec shape", async () => {
    let limit: RateLimit | undefined;
    const url = await serve(
      {
        name: "handles",
        store,
        clock: new ManualClock(1_800_000_000_000),
        key: (req) => req.headers["x-user"] as string | undefined,
        spec: async (req) =>
          req.headers["x-plan"] === "pro"
            ? { algorithm: "fixed-window", limit: 2, windowMs: 60_000 }
            : { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      },
      (made) => {
        limit = made;
      },
    );
    const handles = limit as RateLimit;
    const alice = { "x-user": "alice" };
    expect([await status(url, alice), await status(url, alice)]).toEqual([200, 429]);
    expect([await status(url), await status(url)]).toEqual([200, 429]);
    expect((await handles.peek("alice")).allowed).toBe(false);
    expect((await handles.peek({ address: "127.0.0.1" })).allowed).toBe(false);
    await handles.reset("alice");
    expect(await status(url, alice)).toBe(200);
    expect(await status(url)).toBe(429);
    await handles.reset({ address: "::ffff:127.0.0.1" });
    expect(await status(url)).toBe(200);
  });
});
