import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { standaloneRedis } from "../support/redis-server.ts";

const shared = await standaloneRedis("sluice serve --redis");
const url = shared?.url ?? "redis://127.0.0.1:1";
const prefix = `sluice-serve-test:${randomUUID()}:`;
const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
let a: Served;
let b: Served;

beforeAll(async () => {
  if (shared === undefined) return;
  ensureBuilt();
  await redis.connect();
  // The example rules, with the 2-per-second "pings" stretched to 2 per hour: three requests
  // through two processes must not straddle a window on a loaded machine.
  const example = readFileSync("examples/rules.yaml", "utf8");
  const rules = example.replace(/(\n {2}pings:\n {4}type: sliding\n {4}limit: 2\n {4}windowMs: )1s\n/, "$11h\n");
  expect(rules, "examples/rules.yaml's pings rule moved").not.toBe(example);
  const args = ["--config", tempDir().file("rules.yaml", rules), "--redis", url, "--prefix", prefix];
  [a, b] = await Promise.all([serve(args), serve(args)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  if (shared !== undefined) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

const check = async (s: Served, body: unknown, path = "/v1/check") =>
  (
    await fetch(`${s.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
  ).json();

describe.skipIf(shared === undefined)("sluice serve --redis", () => {
  it("two service processes on one Redis share each limit", async () => {
    // The URL as printed: credentials in REDIS_URL are redacted.
    expect(a.stdout()).toContain(`redis store at ${url.replace(/\/\/[^@/]*@/, "//***@")}`);
    expect(await check(a, { rule: "pings", key: "shared" })).toMatchObject({ allowed: true, remaining: 1 });
    expect(await check(b, { rule: "pings", key: "shared" })).toMatchObject({ allowed: true, remaining: 0 });
    const third = (await check(a, { rule: "pings", key: "shared" })) as { allowed: boolean; retryAfterMs: number };
    expect(third.allowed).toBe(false);
    expect(third.retryAfterMs).toBeGreaterThan(0);
    expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
  });

  it("answers batches in order and reports the store in /healthz", async () => {
    const batch = (await check(b, [
      { rule: "login", key: "r" },
      { rule: "login", key: "r", cost: 4 },
      { rule: "login", key: "r" },
    ])) as Array<{ allowed: boolean; remaining: number }>;
    expect(batch.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 4],
      [true, 0],
      [false, 0],
    ]);
    const health = await fetch(`${b.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok", store: "redis" });
  });

  it("forward-auth, peek and reset share the same Redis state", async () => {
    // login: 5 per rolling minute and 20 per hour; nothing is restored while the test runs.
    const first = await fetch(`${a.url}/v1/forward-auth?rule=login&key=fa&cost=5`);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit")).toMatch(/^"login-1";r=0;t=\d+, "login-2";r=15;t=\d+$/);
    const denied = await fetch(`${b.url}/v1/forward-auth?rule=login&key=fa&deny=403`);
    expect(denied.status).toBe(403);
    expect(Number(denied.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await check(b, { rule: "login", key: "fa" }, "/v1/peek")).toMatchObject({ allowed: false });
    expect(await check(a, { rule: "login", key: "fa" }, "/v1/reset")).toMatchObject({ allowed: true, remaining: 4 });
    expect((await fetch(`${b.url}/v1/forward-auth?rule=login&key=fa`)).status).toBe(200);
  });
});
