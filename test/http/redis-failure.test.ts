// The HTTP middleware over RedisStore: a live Redis limits as the memory store does, and a dead
// Redis under onError "deny" answers 503 (not 429, not a pass); under "allow" it passes with
// no made-up remaining counts. The live Redis is found by findRedis() (REDIS_URL, 6379, or one
// started here); without one the live test skips loudly, and fails under CI.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { rateLimit } from "sluice/http";
import { RedisStore } from "sluice/redis";
import { afterAll, describe, expect, test } from "vitest";
import { freePort } from "../support/net.ts";
import { deadIoredis, standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

const redis = await standaloneRedis("HTTP over a live RedisStore");

async function serve(limit: ReturnType<typeof rateLimit>) {
  const server = http.createServer(async (req, res) => {
    if (!(await limit(req, res))) return;
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const clients: Redis[] = [];
afterAll(async () => {
  for (const client of clients) client.disconnect();
});

/** An ioredis client for a port nobody listens on: every command fails at once. */
async function deadClient(): Promise<Redis> {
  const client = deadIoredis(await freePort());
  clients.push(client);
  return client;
}

describe("HTTP over RedisStore", () => {
  const spec = { algorithm: "fixed-window", limit: 2, windowMs: 60_000 } as const;

  test("a dead Redis under onError 'deny' answers 503 with its own problem body", async () => {
    const store = new RedisStore({ client: await deadClient(), onError: "deny", timeoutMs: 500 });
    const served = await serve(rateLimit({ spec, store }));
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(served.url);
        expect(res.status).toBe(503);
        expect(res.headers.get("content-type")).toBe("application/problem+json");
        expect(res.headers.get("retry-after")).toBe("1"); // a store outage says when to come back
        expect(res.headers.get("ratelimit")).toBeNull();
        const body = await res.json();
        expect(body).toMatchObject({
          status: 503,
          title: "Store unavailable",
          type: "urn:sluice:problem:store-unavailable",
        });
        expect(body["violated-policies"]).toBeUndefined();
      }
    } finally {
      await served.close();
    }
  });

  test("a dead Redis under onError 'allow' passes without remaining-count headers", async () => {
    const store = new RedisStore({ client: await deadClient(), onError: "allow", timeoutMs: 500 });
    const served = await serve(rateLimit({ spec, store }));
    try {
      const res = await fetch(served.url);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit")).toBeNull();
      expect(res.headers.get("ratelimit-policy")).toBe('"default";q=2;w=60');
    } finally {
      await served.close();
    }
  });

  test.skipIf(redis === undefined)("a live Redis limits: 200, 200, 429 with Retry-After", async () => {
    const client = new Redis(redis?.url ?? "", { lazyConnect: true, maxRetriesPerRequest: 1 });
    clients.push(client);
    await client.connect();
    const store = new RedisStore({ client, prefix: uniquePrefix("http-redis-failure") });
    // A sliding log, so no window boundary can fall between the three requests.
    const log = { algorithm: "sliding-log", limit: 2, windowMs: 60_000 } as const;
    const served = await serve(rateLimit({ spec: log, store, key: () => "one-client" }));
    try {
      const statuses = [];
      let last: Response | undefined;
      for (let i = 0; i < 3; i++) {
        last = await fetch(served.url);
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      const retry = Number(last?.headers.get("retry-after"));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
    } finally {
      await served.close();
    }
  });
});
