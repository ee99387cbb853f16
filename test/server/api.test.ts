import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
let s: Served;
let authed: Served;

beforeAll(async () => {
  ensureBuilt();
  s = await serve(["--config", "examples/rules.yaml", "--max-body", "1kb", "--max-batch", "5"]);
  authed = await serve(["--config", "examples/rules.yaml"], { SLUICE_TOKEN: "s3cret" });
});
afterAll(async () => {
  await Promise.all([s?.stop(), authed?.stop()]);
  tmp.cleanup();
});

const post = (base: Served, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base.url}/v1/check`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function metric(base: Served, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`${base.url}/metrics`, { headers: { authorization: "Bearer s3cret" } })).text();
  const m = pattern.exec(text);
  return m === null ? 0 : Number(m[1]);
}

describe("sluice serve: the API", () => {
  it("prints its address and curl examples", () => {
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.stdout()).toContain(`curl -s ${s.url}/v1/check --json '{"rule":"api","key":"alice"}'`);
  });

  it("answers a check with the Decision, and a batch in order", async () => {
    const one = await post(s, { rule: "pings", key: "u1" });
    expect(one.status).toBe(200);
    expect(one.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await one.json()).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1000,
      delayMs: 0,
      at: expect.any(Number), // the receipt /v1/refund takes
    });
    // One batch is decided in one pass: pings' 1-second window cannot pass between its items.
    const batch = await post(s, [
      { rule: "pings", key: "u2" },
      { rule: "pings", key: "u2" },
      { rule: "pings", key: "u2" },
      { rule: "api", key: "u1", cost: 3 },
      { rule: "search", key: "u1", tier: "pro" },
    ]);
    const decisions = (await batch.json()) as Array<{ allowed: boolean; limit: number; remaining: number }>;
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true, true]);
    expect(decisions[3]?.remaining).toBe(17);
    expect(decisions[4]?.limit).toBe(100);
  });

  it("writes Infinity as null and composite parts", async () => {
    const d = (await (await post(s, { rule: "login", key: "big", cost: 6 })).json()) as Record<string, unknown>;
    expect(d.allowed).toBe(false);
    expect(d.retryAfterMs).toBeNull();
    expect(d.parts).toHaveLength(2);
  });

  it("lists rules with summaries, health and metrics", async () => {
    const rules = (await (await fetch(`${s.url}/v1/rules`)).json()) as {
      rules: Array<{ name: string; summary: string; tiers: object }>;
    };
    expect(rules.rules.map((r) => r.name)).toEqual(["api", "login", "search", "pings", "webhooks"]);
    expect(rules.rules[0]?.summary).toBe("10 per second on average; bursts up to 20");
    expect(Object.keys(rules.rules[2]?.tiers ?? {})).toEqual(["pro"]);
    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok", store: "memory", rules: 5 });
    const metrics = await fetch(`${s.url}/metrics`);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    expect(text).toMatch(/^sluice_decisions_total\{rule="pings",outcome="denied"\} [1-9]/m);
    expect(text).toMatch(/^sluice_check_duration_seconds_bucket\{le="\+Inf"\} [1-9]/m);
    expect(text).toMatch(/^sluice_store_errors_total 0$/m);
    expect(text).toMatch(/^sluice_store_keys \d+$/m);
    // The capped store's tiers (issue 14): occupancy, evictions, approximate decisions, error bound.
    expect(text).toMatch(/^sluice_store_compact_keys \d+$/m);
    expect(text).toMatch(/^sluice_store_summary_error_bound [\d.e+-]+$/m);
  });

  it("refuses bad input with problem JSON and changes no state", async () => {
    const before = await (await post(s, { rule: "login", key: "fresh" })).json();
    // login (5 per rolling minute, 20 per hour): no window passes while the cases run, however
    // slow the machine, so the count after them shows exactly what they took.
    expect(before).toMatchObject({ allowed: true, remaining: 4 });
    const cases: Array<[unknown, number, string]> = [
      ["{not json", 400, "invalid-json"],
      ["", 400, "invalid-json"],
      [{ rule: "pings" }, 400, "invalid-check"],
      [{ rule: "pings", key: 5 }, 400, "invalid-check"],
      [{ rule: "login", key: "fresh", cost: 1.5 }, 400, "invalid-check"],
      [{ rule: "login", key: "fresh", cost: "1" }, 400, "invalid-check"],
      [{ rule: "login", key: "fresh", extra: true }, 400, "invalid-check"],
      [{ rule: "search", key: "fresh", tier: "gold" }, 400, "unknown-tier"],
      [{ rule: "nope", key: "fresh" }, 404, "unknown-rule"],
      [[], 400, "invalid-check"],
      [
        [
          { rule: "login", key: "fresh" },
          { rule: "nope", key: "fresh" },
        ],
        404,
        "unknown-rule",
      ],
      [[{ rule: "login", key: "fresh" }, 42], 400, "invalid-check"],
      [Array.from({ length: 6 }, () => ({ rule: "login", key: "fresh" })), 413, "batch-too-large"],
      [JSON.stringify({ rule: "pings", key: "x".repeat(2000) }), 413, "body-too-large"],
      [null, 400, "invalid-check"],
    ];
    for (const [body, status, slug] of cases) {
      const res = await post(s, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = (await res.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ type: `urn:sluice:problem:${slug}`, status });
      expect(typeof problem.detail).toBe("string");
    }
    const batchProblem = (await (
      await post(s, [
        { rule: "login", key: "fresh" },
        { rule: "pings", key: 1 },
      ])
    ).json()) as Record<string, unknown>;
    expect(batchProblem.index).toBe(1);
    expect(batchProblem.detail).toContain("[1]: `key` must be a string (got 1)");
    // The first valid item of every refused batch was not counted.
    expect(await (await post(s, { rule: "login", key: "fresh" })).json()).toMatchObject({
      allowed: true,
      remaining: 3,
    });
  });

  it("refuses a chunked body over the limit", async () => {
    const big = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 8; i++) controller.enqueue(new TextEncoder().encode(" ".repeat(512)));
        controller.close();
      },
    });
    const res = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: big,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
  });

  it("refuses an encoded body (Content-Encoding: gzip) with 415, not reading it as JSON", async () => {
    const { gzipSync } = await import("node:zlib");
    const res = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ rule: "pings", key: "gz" })),
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { detail: string }).detail).toBe(
      'request body must not be encoded (got Content-Encoding "gzip"); send plain JSON',
    );
  });

  it("answers 404 and 405 as problems and stays up", async () => {
    const missing = await fetch(`${s.url}/v2/nothing`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe("application/problem+json");
    const wrong = await fetch(`${s.url}/v1/check`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });

  it("with a token, every API call needs Authorization: Bearer", async () => {
    const none = await post(authed, { rule: "api", key: "a" });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="sluice"');
    expect(((await none.json()) as { type: string }).type).toBe("urn:sluice:problem:unauthorized");
    expect((await post(authed, { rule: "api", key: "a" }, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await fetch(`${authed.url}/v1/rules`)).status).toBe(401);
    expect((await fetch(`${authed.url}/metrics`)).status).toBe(401);
    // The token before the method: without it a wrong method says nothing either (401, not 405).
    expect((await fetch(`${authed.url}/v1/check`)).status).toBe(401);
    expect((await fetch(`${authed.url}/v1/check`, { headers: { authorization: "Bearer s3cret" } })).status).toBe(405);
    const ok = await post(authed, { rule: "api", key: "a" }, { authorization: "Bearer s3cret" });
    expect(ok.status).toBe(200);
    expect((await fetch(`${authed.url}/healthz`)).status).toBe(200);
    // Refused calls decided nothing: exactly one decision was counted.
    expect(await metric(authed, /^sluice_decisions_total\{rule="api",outcome="allowed"\} (\d+)$/m)).toBe(1);
  });
});
