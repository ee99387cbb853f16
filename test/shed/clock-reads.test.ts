// The shedder reads its clock per request only for the adaptive limit (the one user of request
// latencies): a fixed limit, or event-loop pressure alone, reads none (issue 33 "Speed": two
// `performance.now()` calls were ~700 instructions of loadShed's cost per request on Fastify).
import { ManualClock } from "sluice";
import { loadShed } from "sluice/http";
import { describe, expect, it } from "vitest";

/** A ManualClock that counts its reads. */
class CountingClock extends ManualClock {
  reads = 0;
  override now(): number {
    this.reads++;
    return super.now();
  }
}

async function readsPerRequest(options: Record<string, unknown>): Promise<number> {
  const clock = new CountingClock(0);
  const shed = loadShed({ ...options, clock } as never);
  try {
    const before = clock.reads;
    for (let i = 0; i < 10; i++)
      expect((await shed.fetch(new Request("http://x/"), () => new Response("ok"))).status).toBe(200);
    return (clock.reads - before) / 10;
  } finally {
    shed.close();
  }
}

describe("loadShed's clock reads per request", () => {
  it("none with a fixed limit, with a reserve, or with event-loop pressure alone", async () => {
    expect(await readsPerRequest({ limit: 10 })).toBe(0);
    expect(await readsPerRequest({ limit: 10, reserve: { 0: 0.2 } })).toBe(0);
    expect(await readsPerRequest({ maxEventLoopDelayMs: 1000 })).toBe(0);
  });

  it("two with the adaptive limit (start and end: its latency sample)", async () => {
    expect(await readsPerRequest({ limit: "adaptive" })).toBeGreaterThanOrEqual(2);
  });
});
