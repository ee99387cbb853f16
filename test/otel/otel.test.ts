// sluice/otel with the OpenTelemetry SDK's real MeterProvider and a MetricReader collected on demand.
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Attributes } from "@opentelemetry/api";
import {
  AggregationTemporality,
  DataPointType,
  type HistogramMetricData,
  MeterProvider,
  MetricReader,
  type SumMetricData,
} from "@opentelemetry/sdk-metrics";
import express from "express";
import { Redis } from "ioredis";
import { createLimiter, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { rateLimit } from "sluice/express";
import { decisionMetrics, instrument, instrumentMiddleware, instrumentStore } from "sluice/otel";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeEach, describe, expect, test } from "vitest";
import { deadIoredis } from "../support/redis-server.ts";

class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

let reader: TestReader;
let meter: ReturnType<MeterProvider["getMeter"]>;
beforeEach(() => {
  reader = new TestReader({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  meter = new MeterProvider({ readers: [reader] }).getMeter("test");
});

/** The collected points of one instrument: [attributes, value] (sums) or [attributes, count] (histograms). */
async function points(name: string): Promise<Array<[Attributes, number]>> {
  const { resourceMetrics, errors } = await reader.collect();
  expect(errors).toEqual([]);
  const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  if (metric === undefined) return [];
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    return (metric as HistogramMetricData).dataPoints.map((p) => [p.attributes, p.value.count]);
  }
  return (metric as SumMetricData).dataPoints.map((p) => [p.attributes, p.value]);
}

const fixed = (limit: number) => ({ algorithm: "fixed-window", limit, windowMs: 60_000 }) as const;
const attrs = (rule: string, outcome: string, store = "memory") => ({
  "sluice.rule": rule,
  "sluice.outcome": outcome,
  "sluice.store": store,
});

describe("sluice/otel", () => {
  test("decisionMetrics() on the core onDecision hook: a service's rules and tiers, a named limiter; checks only", async () => {
    const onDecision = decisionMetrics({ meter, store: "memory" });
    const service = new RateLimiterService({ clock: new ManualClock(0), onDecision }).addRule("login", fixed(1), {
      tiers: { pro: fixed(5) },
    });
    service.check("login", "k");
    service.check("login", "k");
    service.check("login", "k", { tier: "pro" });
    service.peek("login", "k");
    service.refund("login", "k");
    const limiter = createLimiter(fixed(1), { clock: new ManualClock(0), name: "api", onDecision });
    limiter.tryAcquire("k");
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("login", "allowed"), 2],
        [attrs("login", "denied"), 1],
        [attrs("api", "allowed"), 1],
      ]),
    );
    expect(await points("sluice.decisions")).toHaveLength(3);
    expect(await points("sluice.decision.duration")).toEqual(expect.arrayContaining([[attrs("login", "allowed"), 2]]));
  });

  test("labels come only from configured rules; unknown names are one _OTHER series, counted as refusals by kind", async () => {
    const service = instrument(new RateLimiterService(new ManualClock(0)).addRule("api", fixed(5)), { meter });
    for (let i = 0; i < 300; i++) expect(() => service.check(`caller-chosen-${i}`, "k")).toThrow(/unknown rule/);
    expect(() => service.check("api", "k", { tier: "gold" })).toThrow(/unknown tier/);
    service.check("api", "k");
    expect(await points("sluice.errors")).toEqual(
      expect.arrayContaining([
        [{ "sluice.rule": "_OTHER", "error.type": "ERR_UNKNOWN_RULE" }, 300],
        [{ "sluice.rule": "api", "error.type": "ERR_INVALID_ARGUMENT" }, 1],
      ]),
    );
    expect(await points("sluice.errors")).toHaveLength(2);
    expect(await points("sluice.store.errors")).toEqual([]);
    expect(await points("sluice.decisions")).toEqual([[attrs("api", "allowed"), 1]]);
  });

  test("a limiter: decisions by outcome, a duration per decision; peeks are not decisions", async () => {
    const limiter = instrument(createLimiter(fixed(2), new ManualClock(0)), { meter, rule: "api", store: "memory" });
    for (let i = 0; i < 3; i++) limiter.tryAcquire("k");
    limiter.peek("k");
    await limiter.acquire("other");
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("api", "allowed"), 3],
        [attrs("api", "denied"), 1],
      ]),
    );
    expect(await points("sluice.decisions")).toHaveLength(2);
    expect(await points("sluice.decision.duration")).toEqual(
      expect.arrayContaining([
        [attrs("api", "allowed"), 3],
        [attrs("api", "denied"), 1],
      ]),
    );
    const { resourceMetrics } = await reader.collect();
    const duration = resourceMetrics.scopeMetrics[0]?.metrics.find(
      (m) => m.descriptor.name === "sluice.decision.duration",
    );
    expect(duration?.descriptor.unit).toBe("s");
    expect(await points("sluice.store.errors")).toEqual([]);
  });

  test("a service reports each rule by name, stays synchronous on memory, and keeps its other methods", async () => {
    const service = instrument(new RateLimiterService(new ManualClock(0)).addRule("login", fixed(1)), { meter });
    const decision = service.check("login", "ann");
    expect(decision.allowed).toBe(true); // a Decision, not a promise
    expect(service.check("login", "ann").allowed).toBe(false);
    expect(service.peek("login", "ann").allowed).toBe(false);
    expect(service.hasRule("login")).toBe(true);
    expect(service instanceof RateLimiterService).toBe(true);
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("login", "allowed"), 1],
        [attrs("login", "denied"), 1],
      ]),
    );
  });

  test.each([
    // A fixed clock: two requests straddling a real minute boundary would both pass.
    [
      "a spec, under its policy name",
      () => instrumentMiddleware({ spec: fixed(1), policyName: "web", clock: new ManualClock(0) }, { meter }),
    ],
    [
      "a service, under the rule's name",
      () =>
        instrumentMiddleware(
          { service: new RateLimiterService(new ManualClock(0)).addRule("web", fixed(1)), rule: "web" },
          { meter },
        ),
    ],
  ])("middleware: instrumentMiddleware reports an Express app's decisions (%s)", async (_name, options) => {
    const app = express();
    app.use(rateLimit(options()));
    app.use((_req, res) => {
      res.send("ok");
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect([(await fetch(url)).status, (await fetch(url)).status]).toEqual([200, 429]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("web", "allowed"), 1],
        [attrs("web", "denied"), 1],
      ]),
    );
  });

  test("an instrumented store names service rules and keeps the store's own methods", async () => {
    const store = instrumentStore(new MemoryStore(), { meter });
    expect(store instanceof MemoryStore).toBe(true);
    const service = new RateLimiterService({ store, clock: new ManualClock(0) })
      .addRule("search", fixed(5), { tiers: { pro: fixed(50) } })
      .addRule("a:b", fixed(5));
    service.check("search", "k");
    service.check("search", "k", { tier: "pro" });
    service.check("a:b", "k");
    expect(typeof store.stats().keys).toBe("number");
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("search", "allowed"), 2],
        [attrs("a:b", "allowed"), 1],
      ]),
    );
  });
  test("an instrumented store labels limiters as the decisionMetrics hook does: a name, else default", async () => {
    const store = instrumentStore(new MemoryStore(), { meter });
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    createLimiter(fixed(5), { store, clock, name: "uploads" }).tryAcquire("k");
    createLimiter(fixed(5), { store, clock }).tryAcquire("k");
    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("uploads", "allowed"), 1],
        [attrs("default", "allowed"), 1],
      ]),
    );
    expect(await points("sluice.decisions")).toHaveLength(2);
  });
});

describe("sluice/otel on Redis", () => {
  const clients: Redis[] = [];
  const prefix = `test-otel-${randomUUID()}:`;
  afterAll(async () => {
    const client = new Redis({ host: "127.0.0.1", port: 6379 });
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
    for (const c of clients) c.disconnect();
  });

  test("async decisions are timed, and store failures are counted whether answered by onError or thrown", async () => {
    const live = new Redis({ host: "127.0.0.1", port: 6379 });
    clients.push(live);
    const service = instrument(
      new RateLimiterService({ store: new RedisStore({ client: live, prefix }) }).addRule("api", fixed(1)),
      { meter },
    );
    expect((await service.check("api", "k")).allowed).toBe(true);
    expect((await service.check("api", "k")).allowed).toBe(false);

    const dead = () => {
      const client = deadIoredis();
      clients.push(client);
      return client;
    };
    const denying = instrument(createLimiter(fixed(1), { store: new RedisStore({ client: dead(), prefix }) }), {
      meter,
      rule: "deny",
      store: "redis",
    });
    const failed = await denying.tryAcquire("k");
    expect(failed.failure?.policy).toBe("deny");
    const throwing = instrument(
      createLimiter(fixed(1), { store: new RedisStore({ client: dead(), prefix, onError: "throw" }) }),
      { meter, rule: "throw", store: "redis" },
    );
    await expect(throwing.tryAcquire("k")).rejects.toThrow();

    expect(await points("sluice.decisions")).toEqual(
      expect.arrayContaining([
        [attrs("api", "allowed", "redis"), 1],
        [attrs("api", "denied", "redis"), 1],
        [attrs("deny", "denied", "redis"), 1],
      ]),
    );
    const errors = await points("sluice.store.errors");
    expect(errors).toHaveLength(2);
    expect(errors).toEqual(
      expect.arrayContaining([
        [
          {
            "sluice.rule": "deny",
            "sluice.store": "redis",
            "error.type": expect.stringMatching(/^ERR_STORE/),
          },
          1,
        ],
        [expect.objectContaining({ "sluice.rule": "throw", "sluice.store": "redis" }), 1],
      ]),
    );
  });
});
