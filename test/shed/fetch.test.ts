// loadShed's fetch-handler flavour (sluice/http called with a Web Request, or `.fetch`):
// shed answers, and a release exactly once whether the handler answers, throws, or the
// request is aborted first (and answers later) — also aborted before it was admitted, and on a
// real server whose clients destroy their sockets (fetch handlers on @hono/node-server, and
// Hono's own middleware called as a plain fetch handler, without its Node bindings).
import { connect } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { loadShed as honoShed } from "sluice/hono";
import { type LoadShedHandle, loadShed } from "sluice/http";
import { describe, expect, it } from "vitest";
import { deferred } from "../http/conformance.ts";
import { listening } from "../support/listening.ts";
import { within } from "../support/poll.ts";

const request = (priority = 5, signal?: AbortSignal) =>
  new Request("http://x/", { headers: { "x-priority": String(priority) }, ...(signal ? { signal } : {}) });
const priority = (r: unknown) => Number((r as Request).headers.get("x-priority"));

describe("loadShed for fetch handlers", () => {
  it("answers a shed request 503 with Retry-After and a problem body; the reserve admits priority 0", async () => {
    const shed = loadShed({ limit: 2, reserve: { 0: 0.5 }, priority });
    const gate = deferred();
    const slow = shed(request(), async () => {
      await gate.promise;
      return new Response("late");
    });
    const refused = await shed(request(), () => new Response("ok"));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    expect(await refused.json()).toEqual({
      type: "urn:sluice:problem:overloaded",
      title: "Service overloaded",
      status: 503,
      detail: "The server is shedding load to stay responsive; retry after 1 second.",
    });
    expect((await shed.fetch(request(0), () => new Response("ok"))).status).toBe(200);
    gate.resolve();
    expect(await (await slow).text()).toBe("late");
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 2, shed: 1 });
  });

  it("releases once when the handler throws, and once when the request is aborted before it answers", async () => {
    const shed = loadShed({ limit: 3, priority });
    await expect(shed(request(), () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(shed.stats().inFlight).toBe(0);
    const aborter = new AbortController();
    const gate = deferred();
    const pending = shed(request(5, aborter.signal), async () => {
      await gate.promise;
      return new Response("late");
    });
    expect(shed.stats().inFlight).toBe(1);
    aborter.abort();
    expect(shed.stats().inFlight).toBe(0);
    gate.resolve();
    await pending;
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 2 });
  });

  it("releases at once a request already aborted when it is admitted (its client left while a store decided)", async () => {
    const shed = loadShed({ limit: 3, priority });
    const aborter = new AbortController();
    aborter.abort();
    const gate = deferred();
    const pending = shed(request(5, aborter.signal), async () => {
      await gate.promise;
      return new Response("late");
    });
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 1 });
    gate.resolve();
    await pending;
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 1 });
  });

  it.each(["sluice/http on @hono/node-server", "Hono without its Node bindings"])(
    "%s: a client that destroys its socket while the handler waits leaves in flight at once",
    async (kind) => {
      const gate = deferred();
      let entered = 0;
      let done = 0;
      const handle = async () => {
        entered++;
        await gate.promise;
        done++;
        return new Response("late");
      };
      let shed: LoadShedHandle;
      let fetchHandler: (request: Request) => Promise<Response> | Response;
      if (kind.startsWith("sluice/http")) {
        const s = loadShed({ limit: 5 });
        shed = s;
        fetchHandler = (req) => s(req, handle);
      } else {
        const app = new Hono();
        const s = honoShed({ limit: 5 });
        shed = s;
        app.use(s);
        app.get("/hang", handle);
        // Called as a plain fetch handler (no env: as on Bun, Deno or a worker).
        fetchHandler = (req) => app.fetch(req);
      }
      const server = serve({ fetch: fetchHandler, port: 0, hostname: "127.0.0.1" });
      const { url, close } = await listening(server as never);
      try {
        const { port } = new URL(url);
        const sockets = [0, 1].map(() => {
          const socket = connect(Number(port), "127.0.0.1", () =>
            socket.write("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n"),
          );
          socket.on("error", () => {});
          return socket;
        });
        for (const more = within(); entered < 2 && more(); ) await new Promise((r) => setTimeout(r, 5));
        expect(shed.stats().inFlight).toBe(2);
        for (const socket of sockets) socket.destroy();
        for (const more = within(); shed.stats().inFlight > 0 && more(); ) await new Promise((r) => setTimeout(r, 5));
        expect(shed.stats().inFlight).toBe(0);
        expect(done).toBe(0); // released on the disconnect, while the handlers still wait
        gate.resolve();
        for (const more = within(); done < 2 && more(); ) await new Promise((r) => setTimeout(r, 5));
        expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 2, shed: 0 });
      } finally {
        gate.resolve();
        await close();
      }
    },
  );

  it("reports stats and Prometheus text", async () => {
    const shed = loadShed({ limit: 1, name: "api", priority });
    const gate = deferred();
    const slow = shed(request(), async () => {
      await gate.promise;
      return new Response("x");
    });
    await shed(request(7), () => new Response("x"));
    expect(shed.stats()).toEqual({
      limit: 1,
      inFlight: 1,
      admitted: 1,
      shed: 1,
      shedByPriority: [0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
      shedFromPriority: 10,
      eventLoopDelayMs: undefined,
      eventLoopUtilization: undefined,
    });
    const text = shed.prometheus();
    expect(text).toContain('sluice_shed_limit{name="api"} 1\n');
    expect(text).toContain('sluice_shed_in_flight{name="api"} 1\n');
    expect(text).toContain('sluice_shed_shed_total{name="api",priority="7"} 1\n');
    expect(text).toContain("# TYPE sluice_shed_shed_total counter\n");
    gate.resolve();
    await slow;
  });
});
