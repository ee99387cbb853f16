/**
 * One answer per decision: the same events answered by the Express middleware and by
 * `sluice serve`'s forward-auth (both at one ManualClock) give the same status, Retry-After and
 * problem body, for allowed, limited and banned requests; and a store failure is a 503 with
 * Retry-After on both.
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rateLimit } from "../../src/http/express.ts";
import { ManualClock } from "../../src/index.ts";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
// Mid-day at today's epoch, so window alignment and ban arithmetic run on real-sized instants.
const clock = new ManualClock(1_800_000_000_000 + 12_345);
const rules = tmp.file(
  "rules.yaml",
  `rules:
  login:
    spec: { algorithm: fixed-window, limit: 2, windowMs: 1m }
    ban: { after: 2, withinMs: 1m, forMs: 10m }
`,
);
let service: RunningServer;
let app: ReturnType<ReturnType<typeof express>["listen"]>;
let appUrl: string;

beforeAll(async () => {
  service = await startServer({
    config: rules,
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 65536,
    maxBatch: 100,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
    clock,
  });
  const e = express();
  e.use(
    rateLimit({
      spec: { algorithm: "fixed-window", limit: 2, windowMs: 60_000 },
      ban: { after: 2, withinMs: 60_000, forMs: 600_000 },
      name: "login",
      key: () => "alice",
      clock,
    }),
  );
  e.get("/", (_req, res) => void res.status(200).end());
  await new Promise<void>((resolve) => {
    app = e.listen(0, "127.0.0.1", () => resolve());
  });
  appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => app?.close(resolve));
  await service?.close();
  tmp.cleanup();
});

interface Seen {
  status: number;
  retryAfter: string | null;
  type: string | null;
  body: unknown;
}

async function seen(res: Response): Promise<Seen> {
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    type: res.headers.get("content-type"),
    body: text === "" ? null : JSON.parse(text),
  };
}

describe("a ban answered alike by every door", () => {
  it("Express and forward-auth give the same status, Retry-After and problem for each decision", async () => {
    const middleware: Seen[] = [];
    const forward: Seen[] = [];
    for (let i = 0; i < 6; i++) {
      middleware.push(await seen(await fetch(appUrl)));
      forward.push(await seen(await fetch(`${service.url}/v1/forward-auth?rule=login&key=alice`)));
      clock.advance(1000);
    }
    expect(forward.map((s) => s.status)).toEqual([200, 200, 429, 403, 403, 403]);
    expect(forward[3]?.body).toEqual({
      type: "urn:sluice:problem:banned",
      title: "Banned",
      status: 403,
      detail: "Too many requests were refused; this client is banned for 600 more seconds.",
    });
    expect(forward[2]?.body).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      status: 429,
      "violated-policies": ["login"],
    });
    expect(forward[3]?.retryAfter).toBe("600");
    expect(forward[3]?.type).toBe("application/problem+json");
    expect(middleware).toEqual(forward);
  });
});

describe("a store failure answered alike", () => {
  it("forward-auth under deny and the JSON API under throw: 503 store-unavailable with Retry-After", async () => {
    // A Redis that refuses every connection (port 1 on loopback).
    const start = (onError: "deny" | "throw") =>
      startServer({
        config: rules,
        port: 0,
        host: "127.0.0.1",
        maxBodyBytes: 65536,
        maxBatch: 100,
        watch: false,
        shutdownTimeoutMs: 1000,
        log: () => undefined,
        redis: "redis://127.0.0.1:1",
        timeoutMs: 200,
        onError,
      });
    const [deny, raise] = await Promise.all([start("deny"), start("throw")]);
    try {
      const fa = await seen(await fetch(`${deny.url}/v1/forward-auth?rule=login&key=bob`));
      expect(fa).toMatchObject({ status: 503, retryAfter: "1", type: "application/problem+json" });
      expect(fa.body).toMatchObject({ type: "urn:sluice:problem:store-unavailable", status: 503 });
      // Counted as an outage, apart from real denials, in metrics and on the status page.
      const metrics = await (await fetch(`${deny.url}/metrics`)).text();
      expect(metrics).toContain('sluice_decisions_total{rule="login",outcome="failure"} 1');
      expect(metrics).toContain('sluice_decisions_total{rule="login",outcome="denied"} 0');
      const status = (await (await fetch(`${deny.url}/v1/status`)).json()) as {
        rules: Array<{ name: string; denied: number; failure: number; byTier: unknown[] }>;
      };
      expect(status.rules[0]).toMatchObject({
        name: "login",
        denied: 0,
        failure: 1,
        byTier: [{ tier: null, totals: { allowed: 0, denied: 0, failure: 1 }, topDenied: [] }],
      });
      const api = await seen(
        await fetch(`${raise.url}/v1/check`, {
          method: "POST",
          body: '{"rule":"login","key":"bob"}',
          headers: { "content-type": "application/json" },
        }),
      );
      expect(api).toMatchObject({ status: 503, retryAfter: "1", type: "application/problem+json" });
      expect(api.body).toMatchObject({ type: "urn:sluice:problem:store-unavailable", title: "Store unavailable" });
    } finally {
      await Promise.all([deny.close(), raise.close()]);
    }
  });
});
