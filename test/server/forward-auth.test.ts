import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { leastSecondsLeft, stopwatch } from "../support/elapsed.ts";

const tmp = tempDir();
// Rolling windows of an hour: nothing is restored while the test runs, whatever the clock says.
const rules = tmp.file(
  "rules.yaml",
  `rules:
  fa: { algorithm: sliding-log, limit: 2, windowMs: 1h }
  tiered:
    spec: { algorithm: sliding-log, limit: 1, windowMs: 1h }
    tiers:
      pro: { algorithm: sliding-log, limit: 3, windowMs: 1h }
  both:
    - { algorithm: sliding-log, limit: 5, windowMs: 1h }
    - { algorithm: sliding-log, limit: 1, windowMs: 1h }
`,
);
let plain: Served;
let proxied: Served;
let realIp: Served;
let authed: Served;

beforeAll(async () => {
  ensureBuilt();
  [plain, proxied, realIp, authed] = await Promise.all([
    serve(["--config", rules]),
    serve(["--config", rules, "--trust-proxy", "1"]),
    serve(["--config", rules, "--trust-proxy", "127.0.0.1", "--proxy-header", "x-real-ip"]),
    serve(["--config", rules], { SLUICE_TOKEN: "s3cret" }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain?.stop(), proxied?.stop(), realIp?.stop(), authed?.stop()]);
  tmp.cleanup();
});

const auth = (base: Served, query: string, headers: Record<string, string> = {}) =>
  fetch(`${base.url}/v1/forward-auth?${query}`, { headers });

const post = (base: Served, path: string, body: unknown) =>
  fetch(`${base.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("GET /v1/forward-auth", () => {
  it("answers 200 with RateLimit headers, then 429 with Retry-After and a problem body", async () => {
    const sinceFirst = stopwatch();
    const first = await auth(plain, "rule=fa&key=alice");
    expect(first.status).toBe(200);
    expect(await first.text()).toBe("");
    expect(first.headers.get("ratelimit-policy")).toBe('"fa";q=2;w=3600');
    expect(first.headers.get("ratelimit")).toBe('"fa";r=1;t=3600');
    expect(first.headers.get("retry-after")).toBeNull();
    const sinceSecond = stopwatch();
    expect((await auth(plain, "rule=fa&key=alice")).status).toBe(200);
    const denied = await auth(plain, "rule=fa&key=alice");
    const [first2denied, second2denied] = [sinceFirst(), sinceSecond()];
    expect(denied.status).toBe(429);
    // t= counts down from the newest entry (the second request), Retry-After from the oldest
    // (the first): exactly 3600 on a fast run, less by the seconds a loaded machine spent since.
    const t = Number(/^"fa";r=0;t=(\d+)$/.exec(denied.headers.get("ratelimit") ?? "")?.[1]);
    expect(t, denied.headers.get("ratelimit") ?? "").toBeGreaterThanOrEqual(leastSecondsLeft(3_600_000, second2denied));
    expect(t).toBeLessThanOrEqual(3600);
    const retry = Number(denied.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(leastSecondsLeft(3_600_000, first2denied));
    expect(retry).toBeLessThanOrEqual(3600);
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(await denied.json()).toMatchObject({ status: 429, "violated-policies": ["fa"] });
    // The JSON API sees the same state: forward-auth is a check like any other.
    expect(await (await post(plain, "/v1/peek", { rule: "fa", key: "alice" })).json()).toMatchObject({
      allowed: false,
      remaining: 0,
    });
  });

  it("answers the `deny` status instead of 429 (nginx passes only 401/403)", async () => {
    expect((await auth(plain, "rule=fa&key=bob&deny=403&cost=2")).status).toBe(200);
    const denied = await auth(plain, "rule=fa&key=bob&deny=403");
    expect(denied.status).toBe(403);
    expect(denied.headers.get("retry-after")).not.toBeNull();
    expect(((await denied.json()) as { status: number }).status).toBe(403);
    // A cost that can never pass has no Retry-After (there is no time at which it would).
    const never = await auth(plain, "rule=fa&key=carol&cost=3");
    expect(never.status).toBe(429);
    expect(never.headers.get("retry-after")).toBeNull();
  });

  it("uses tiers and reports every member of a composite", async () => {
    expect((await auth(plain, "rule=tiered&key=t&tier=pro")).headers.get("ratelimit-policy")).toBe(
      '"tiered";q=3;w=3600',
    );
    const both = await auth(plain, "rule=both&key=b");
    expect(both.headers.get("ratelimit-policy")).toBe('"both-1";q=5;w=3600, "both-2";q=1;w=3600');
    const denied = await auth(plain, "rule=both&key=b");
    expect(denied.status).toBe(429);
    expect(((await denied.json()) as Record<string, unknown>)["violated-policies"]).toEqual(["both-2"]);
  });

  it("refuses bad queries with problem JSON, deciding nothing", async () => {
    const cases: Array<[string, number, string]> = [
      ["", 400, "invalid-query"],
      ["rule=fa&key=x&bogus=1", 400, "invalid-query"],
      ["rule=fa&key=x&key=y", 400, "invalid-query"],
      ["rule=fa&key=x&cost=0", 400, "invalid-query"],
      ["rule=fa&key=x&cost=1.5", 400, "invalid-query"],
      ["rule=fa&key=x&deny=200", 400, "invalid-query"],
      ["rule=nope&key=x", 404, "unknown-rule"],
      ["rule=tiered&key=x&tier=gold", 400, "unknown-tier"],
      [`rule=fa&key=${"k".repeat(513)}`, 400, "key-too-long"],
    ];
    for (const [query, status, slug] of cases) {
      const res = await auth(plain, query);
      expect(res.status, query.slice(0, 40)).toBe(status);
      expect(((await res.json()) as { type: string }).type).toBe(`urn:sluice:problem:${slug}`);
    }
    expect((await auth(plain, "rule=fa&key=x")).headers.get("ratelimit")).toBe('"fa";r=1;t=3600');
  });

  it("without key, uses the peer address, or what a trusted proxy wrote", async () => {
    // Untrusted: a client-written X-Forwarded-For is ignored; the key is the peer (127.0.0.1).
    expect((await auth(plain, "rule=fa", { "x-forwarded-for": "203.0.113.1" })).status).toBe(200);
    expect((await auth(plain, "rule=fa", { "x-forwarded-for": "203.0.113.2" })).status).toBe(200);
    expect((await auth(plain, "rule=fa")).status).toBe(429);
    expect(await (await post(plain, "/v1/peek", { rule: "fa", key: "127.0.0.1" })).json()).toMatchObject({
      remaining: 0,
    });
    await plain.waitForLog(/--trust-proxy is not set/);
    // One trusted hop: the address the proxy appended (the rightmost), not what the client forged.
    for (let i = 0; i < 2; i++) {
      const res = await auth(proxied, "rule=fa", { "x-forwarded-for": `10.9.9.${i}, 198.51.100.7` });
      expect(res.status).toBe(200);
    }
    expect((await auth(proxied, "rule=fa", { "x-forwarded-for": "198.51.100.7" })).status).toBe(429);
    expect((await auth(proxied, "rule=fa", { "x-forwarded-for": "198.51.100.8" })).status).toBe(200);
    // X-Real-IP from a trusted proxy address; X-Forwarded-For is then not read at all.
    expect((await auth(realIp, "rule=tiered", { "x-real-ip": "192.0.2.5" })).status).toBe(200);
    expect((await auth(realIp, "rule=tiered", { "x-real-ip": "192.0.2.5", "x-forwarded-for": "1.1.1.1" })).status).toBe(
      429,
    );
    // IPv6 clients are grouped by /56, as the middleware does.
    expect((await auth(realIp, "rule=tiered", { "x-real-ip": "2001:db8:1:100::1" })).status).toBe(200);
    expect((await auth(realIp, "rule=tiered", { "x-real-ip": "2001:db8:1:1ff::9" })).status).toBe(429);
  });

  it("needs the token like every API call", async () => {
    const refused = await auth(authed, "rule=fa&key=z");
    expect(refused.status).toBe(401);
    // A refused GET keeps its connection: proxies hold a pool of them to the service.
    expect(refused.headers.get("connection")).toBe("keep-alive");
    expect((await auth(authed, "rule=fa&key=z", { authorization: "Bearer s3cret" })).status).toBe(200);
  });
});

describe("POST /v1/peek and /v1/reset", () => {
  it("peek changes nothing; reset forgets the key in every tier and answers what peek would then say", async () => {
    expect(await (await post(plain, "/v1/check", { rule: "tiered", key: "p", tier: "pro" })).json()).toMatchObject({
      remaining: 2,
    });
    expect((await (await post(plain, "/v1/check", { rule: "tiered", key: "p" })).json()) as object).toMatchObject({
      remaining: 0,
    });
    for (let i = 0; i < 3; i++) {
      expect(await (await post(plain, "/v1/peek", { rule: "tiered", key: "p", tier: "pro" })).json()).toMatchObject({
        allowed: true,
        remaining: 1,
      });
    }
    const batch = await post(plain, "/v1/peek", [
      { rule: "tiered", key: "p" },
      { rule: "tiered", key: "p", tier: "pro", cost: 3 },
    ]);
    expect(((await batch.json()) as Array<{ allowed: boolean }>).map((d) => d.allowed)).toEqual([false, false]);
    const reset = await post(plain, "/v1/reset", { rule: "tiered", key: "p", tier: "pro" });
    expect(reset.status).toBe(200);
    expect(await reset.json()).toMatchObject({ allowed: true, remaining: 2, limit: 3 });
    expect(await (await post(plain, "/v1/peek", { rule: "tiered", key: "p" })).json()).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    const resetBatch = await post(plain, "/v1/reset", [{ rule: "fa", key: "alice" }]);
    expect(((await resetBatch.json()) as Array<{ remaining: number }>)[0]?.remaining).toBe(1);
    expect((await auth(plain, "rule=fa&key=alice")).status).toBe(200);
    expect((await auth(plain, "rule=fa&key=alice")).status).toBe(200);
    // Bad items are refused before anything is reset.
    const bad = await post(plain, "/v1/reset", [
      { rule: "fa", key: "alice" },
      { rule: "nope", key: "alice" },
    ]);
    expect(bad.status).toBe(404);
    expect((await auth(plain, "rule=fa&key=alice")).status).toBe(429);
  });
});
