// A reserve that holds every slot of a small limit (attack2 finding 6: `limit: 1, reserve:
// { 0: 0.1 }` shed priorities 1–9 on an idle server forever, also on a fleet store). In one
// process (fixed or adaptive limit) a request is admitted whenever none is in flight, and the
// reserve still holds for priority 0; with a fleet store the config is refused when built,
// naming `reserve` (the fleet cannot see it is idle).
import { ManualClock, MemoryStore } from "sluice";
import { loadShed } from "sluice/http";
import { describe, expect, it } from "vitest";
import { deferred } from "../http/conformance.ts";

const priority = (request: unknown) => Number((request as Request).headers.get("p"));
const ask = (p: number) => new Request("http://app.invalid/", { headers: { p: String(p) } });
const ok = () => new Response("ok");

describe("a reserve that rounds up to the whole of a small limit", () => {
  it("attack2's repro: limit 1, reserve { 0: 0.1 } is refused when built, or an idle server serves priority 5", async () => {
    let shed: ReturnType<typeof loadShed>;
    try {
      shed = loadShed({ limit: 1, reserve: { 0: 0.1 }, priority });
    } catch (error) {
      expect((error as Error).message).toMatch(/reserve/);
      return;
    }
    expect((await shed.fetch(ask(0), ok)).status).toBe(200);
    expect(shed.stats().inFlight).toBe(0);
    expect((await shed.fetch(ask(5), ok)).status).toBe(200);
  });

  it.each([
    [1, { 0: 0.1 }],
    [1, { 0: 0.5 }],
    [2, { 1: 0.6 }],
    [3, { 1: 0.2, 4: 0.5 }],
  ])("fixed limit %i, reserve %j: a fleet store refuses it when built, naming reserve", (limit, reserve) => {
    expect(() => loadShed({ limit, reserve, priority, store: new MemoryStore() })).toThrow(/`reserve`.*least critical/);
  });

  it.each([
    [1, { 0: 0.1 }],
    [1, { 0: 0.5 }],
    [2, { 1: 0.6 }],
  ])("fixed limit %i, reserve %j in one process: an idle server serves every level", async (limit, reserve) => {
    const shed = loadShed({ limit, reserve, priority });
    for (const p of [9, 5, 2, 1, 0]) expect((await shed.fetch(ask(p), ok)).status).toBe(200);
    expect(shed.stats().inFlight).toBe(0);
  });

  it.each([
    [3, { 1: 0.2, 4: 0.3 }],
    [2, { 0: 0.01 }],
    [2, { 0: 0.5 }],
  ])("fixed limit %i, reserve %j leaves a slot: accepted with a fleet store too", async (limit, reserve) => {
    const shed = loadShed({ limit, reserve, priority, store: new MemoryStore() });
    expect((await shed.fetch(ask(9), ok)).status).toBe(200);
  });

  it.each([
    ["a fixed", { limit: 1 }],
    ["an adaptive", { limit: "adaptive", adaptive: { minLimit: 1, maxLimit: 1, initialLimit: 1 } }],
  ] as const)(
    "a %s limit of 1 with reserve { 0: 0.1 }: idle serves every level, and priority 0 keeps its slot",
    async (_, limit) => {
      const shed = loadShed({ ...limit, reserve: { 0: 0.1 }, priority, clock: new ManualClock(0) });
      for (const p of [9, 5, 1, 0]) expect((await shed.fetch(ask(p), ok)).status).toBe(200);
      expect(shed.stats().inFlight).toBe(0);
      // A priority 5 running (admitted on the idle server): another 5 is shed, a 0 still fits.
      const gate = deferred();
      const running = shed.fetch(ask(5), async () => {
        await gate.promise;
        return ok();
      });
      expect(shed.stats().inFlight).toBe(1);
      expect((await shed.fetch(ask(5), ok)).status).toBe(503);
      expect((await shed.fetch(ask(0), ok)).status).toBe(200);
      gate.resolve();
      expect((await running).status).toBe(200);
      expect(shed.stats().inFlight).toBe(0);
    },
  );
});
