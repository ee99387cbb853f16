// A reserve that holds every slot of a small limit (attack2 finding 6: `limit: 1, reserve:
// { 0: 0.1 }` shed priorities 1–9 on an idle server forever, also on a fleet store). A fixed
// limit is refused when built, naming `reserve`; an adaptive limit that shrinks that far
// admits a request whenever none is in flight, and the reserve still holds for priority 0.
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
  ])("fixed limit %i, reserve %j: refused when built, naming reserve", (limit, reserve) => {
    expect(() => loadShed({ limit, reserve, priority })).toThrow(/`reserve`.*least critical/);
    // The same with a fleet store.
    expect(() => loadShed({ limit, reserve, priority, store: new MemoryStore() })).toThrow(/`reserve`/);
  });

  it.each([
    [3, { 1: 0.2, 4: 0.3 }],
    [2, { 0: 0.01 }],
    [2, { 0: 0.5 }],
  ])("fixed limit %i, reserve %j leaves a slot: accepted, an idle server serves priority 9", async (limit, reserve) => {
    const shed = loadShed({ limit, reserve, priority });
    expect((await shed.fetch(ask(9), ok)).status).toBe(200);
  });

  it("an adaptive limit held at 1 with reserve { 0: 0.1 }: idle serves every level, and priority 0 keeps its slot", async () => {
    const shed = loadShed({
      limit: "adaptive",
      adaptive: { minLimit: 1, maxLimit: 1, initialLimit: 1 },
      reserve: { 0: 0.1 },
      priority,
      clock: new ManualClock(0),
    });
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
  });
});
