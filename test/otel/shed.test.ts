// shedMetrics with the OpenTelemetry SDK's real MeterProvider, collected on demand: the limit,
// requests in flight, admitted and shed by priority, observed from a loadShed handle.
import type { Attributes } from "@opentelemetry/api";
import {
  AggregationTemporality,
  type GaugeMetricData,
  MeterProvider,
  MetricReader,
  type SumMetricData,
} from "@opentelemetry/sdk-metrics";
import { loadShed } from "sluice/http";
import { shedMetrics } from "sluice/otel";
import { expect, test } from "vitest";
import { deferred } from "../http/conformance.ts";

class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

test("shedMetrics observes a loadShed handle's limit, in flight, admitted and shed by priority", async () => {
  const reader = new TestReader({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  const meter = new MeterProvider({ readers: [reader] }).getMeter("test");
  const points = async (name: string): Promise<Array<[Attributes, number]>> => {
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    return ((metric as SumMetricData | GaugeMetricData | undefined)?.dataPoints ?? []).map((p) => [
      p.attributes,
      p.value,
    ]);
  };
  const shed = loadShed({ limit: 1, priority: (r) => Number((r as Request).headers.get("x-priority")) });
  const stop = shedMetrics(shed, { meter, name: "api" });
  const request = (priority: number) => new Request("http://x/", { headers: { "x-priority": String(priority) } });
  const gate = deferred();
  const slow = shed(request(5), async () => {
    await gate.promise;
    return new Response("x");
  });
  await shed(request(7), () => new Response("x"));
  await shed(request(7), () => new Response("x"));
  const name = { "sluice.shed.name": "api" };
  expect(await points("sluice.shed.limit")).toEqual([[name, 1]]);
  expect(await points("sluice.shed.in_flight")).toEqual([[name, 1]]);
  expect(await points("sluice.shed.admitted")).toEqual([[name, 1]]);
  const shedPoints = await points("sluice.shed.shed");
  expect(shedPoints).toHaveLength(10);
  expect(shedPoints).toContainEqual([{ ...name, "sluice.priority": 7 }, 2]);
  expect(shedPoints).toContainEqual([{ ...name, "sluice.priority": 0 }, 0]);
  gate.resolve();
  await slow;
  expect(await points("sluice.shed.in_flight")).toEqual([[name, 0]]);
  stop();
  await shed(request(5), () => new Response("x"));
  expect(shed.stats().admitted).toBe(2);
  // No longer observed: the SDK keeps the last value it saw.
  expect(await points("sluice.shed.admitted")).not.toContainEqual([name, 2]);
});
