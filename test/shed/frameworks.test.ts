// loadShed on every framework, on real servers: shed requests get 503, Retry-After and a
// problem body; a reserve lets critical requests through a full limit; and every admitted
// request leaves the in-flight count exactly once — finished, thrown, or with its socket
// destroyed mid-response (before the handler answered, and after the first body chunk).
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { Redis } from "ioredis";
import Koa from "koa";
import { loadShed as expressShed } from "sluice/express";
import { loadShed as fastifyShed } from "sluice/fastify";
import { loadShed as honoShed } from "sluice/hono";
import { type LoadShedHandle, loadShed } from "sluice/http";
import { loadShed as koaShed } from "sluice/koa";
import { RedisStore } from "sluice/redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { deferred } from "../http/conformance.ts";
import { type Listening, listening } from "../support/listening.ts";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

/** What the handlers share: a gate the slow routes wait on, and counters of how far they got. */
class Routes {
  gate = deferred();
  entered = 0;
  done = 0;
  #waiters: (() => void)[] = [];
  enter(): void {
    this.entered++;
    for (const w of this.#waiters.splice(0)) w();
  }
  /** Resolves once `n` handlers entered a slow route. */
  async enteredAt(n: number): Promise<void> {
    while (this.entered < n) await new Promise<void>((r) => this.#waiters.push(r));
  }
  open(): void {
    this.gate.resolve();
  }
}

type Options = Parameters<typeof loadShed>[0];
interface Started extends Listening {
  shed: LoadShedHandle;
  routes: Routes;
  /** The server's open connections. */
  server: Pick<Server, "getConnections">;
}

const priorityHeader = (value: string | string[] | undefined | null) => (value == null ? 5 : Number(value));

/** A body whose first chunk goes out at once and whose end waits for the gate. */
function slowBody(routes: Routes): Readable {
  return Readable.from(
    (async function* () {
      yield "first ";
      routes.enter();
      await routes.gate.promise;
      routes.done++;
      yield "last";
    })(),
  );
}

const frameworks: Record<string, (options: Options) => Promise<Started>> = {
  async "node http"(options) {
    const routes = new Routes();
    const shed = loadShed({
      ...options,
      priority: (req) => priorityHeader((req as IncomingMessage).headers["x-priority"]),
    });
    const server = createServer(async (req, res) => {
      try {
        if (!(await shed(req, res))) return;
      } catch {
        // Without `next`, a failing priority function throws to the caller (as a connect stack's `next(error)` would say).
        res.statusCode = 500;
        return void res.end();
      }
      if (req.url === "/throw") return void res.destroy(new Error("handler failed"));
      if (req.url === "/hang") {
        routes.enter();
        await routes.gate.promise;
        routes.done++;
        return void res.end("late");
      }
      if (req.url === "/stream") return void slowBody(routes).pipe(res);
      res.end("ok");
    }).listen(0, "127.0.0.1");
    return { ...(await listening(server)), shed, routes, server };
  },
  async express(options) {
    const routes = new Routes();
    const app = express();
    const shed = expressShed({ ...options, priority: (req) => priorityHeader(req.headers["x-priority"]) });
    app.use(shed);
    app.get("/throw", () => {
      throw new Error("handler failed");
    });
    app.get("/hang", async (_req, res) => {
      routes.enter();
      await routes.gate.promise;
      routes.done++;
      res.send("late");
    });
    app.get("/stream", (_req, res) => void slowBody(routes).pipe(res));
    app.get("/ok", (_req, res) => void res.send("ok"));
    const server = app.listen(0, "127.0.0.1");
    return { ...(await listening(server)), shed, routes, server };
  },
  async koa(options) {
    const routes = new Routes();
    const app = new Koa();
    app.silent = true;
    const shed = koaShed({ ...options, priority: (ctx) => priorityHeader(ctx.get("x-priority") || undefined) });
    app.use(shed);
    app.use(async (ctx) => {
      if (ctx.path === "/throw") throw new Error("handler failed");
      if (ctx.path === "/hang") {
        routes.enter();
        await routes.gate.promise;
        routes.done++;
        ctx.body = "late";
        return;
      }
      ctx.body = ctx.path === "/stream" ? slowBody(routes) : "ok";
    });
    const server = app.listen(0, "127.0.0.1");
    return { ...(await listening(server)), shed, routes, server };
  },
  async fastify(options) {
    const routes = new Routes();
    const app = Fastify();
    const shed = fastifyShed({ ...options, priority: (req) => priorityHeader(req.headers["x-priority"]) });
    await app.register(shed);
    app.get("/throw", async () => {
      throw new Error("handler failed");
    });
    app.get("/hang", async () => {
      routes.enter();
      await routes.gate.promise;
      routes.done++;
      return "late";
    });
    app.get("/stream", (_req, reply) => reply.send(slowBody(routes)));
    app.get("/ok", async () => "ok");
    await app.listen({ port: 0, host: "127.0.0.1" });
    return { ...(await listening(app.server, "127.0.0.1", () => app.close())), shed, routes, server: app.server };
  },
  async "hono (node-server)"(options) {
    const routes = new Routes();
    const app = new Hono();
    const shed = honoShed({ ...options, priority: (c) => priorityHeader(c.req.header("x-priority")) });
    app.use(shed);
    app.get("/throw", () => {
      throw new Error("handler failed");
    });
    app.get("/hang", async (c) => {
      routes.enter();
      await routes.gate.promise;
      routes.done++;
      return c.text("late");
    });
    app.get("/stream", (c) =>
      c.body(Readable.toWeb(slowBody(routes)) as ReadableStream, 200, { "content-type": "text/plain" }),
    );
    app.get("/ok", (c) => c.text("ok"));
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }) as Server;
    return { ...(await listening(server)), shed, routes, server };
  },
};

/** Sends `GET path` on a raw socket; resolves with the socket once `bytes` of the answer arrived (0: once sent). */
function rawRequest(url: string, path: string, bytes = 0): Promise<import("node:net").Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      if (bytes === 0) resolve(socket);
    });
    let got = 0;
    socket.on("data", (chunk: Buffer) => {
      got += chunk.length;
      if (bytes > 0 && got >= bytes) resolve(socket);
    });
    socket.on("error", reject);
  });
}

async function settled(shed: LoadShedHandle, inFlight: number): Promise<void> {
  for (const more = within(); shed.stats().inFlight !== inFlight && more(); )
    await new Promise((r) => setTimeout(r, 5));
  expect(shed.stats().inFlight).toBe(inFlight);
}

let running: Started | undefined;
afterEach(async () => {
  running?.routes.open();
  running?.shed.close();
  await running?.close();
  running = undefined;
});

const startOn = (name: string) => async (options: Options) =>
  (running = await (frameworks[name] as (o: Options) => Promise<Started>)(options));

/** Past the limit (one slot for priority 5, two for 0): 503s for 5, 200 for 0; in flight back to 0. */
async function shedsWithReserve(start: (options: Options) => Promise<Started>, extra: Partial<Options> = {}) {
  const { url, shed, routes } = await start({ limit: 2, reserve: { 0: 0.5 }, retryAfterSeconds: 3, ...extra });
  const hanging = fetch(`${url}/hang`);
  await routes.enteredAt(1);
  const refused = await fetch(`${url}/ok`);
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("3");
  expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(await refused.json()).toMatchObject({ type: "urn:sluice:problem:overloaded", status: 503 });
  const critical = await fetch(`${url}/ok`, { headers: { "x-priority": "0" } });
  expect(critical.status).toBe(200);
  expect(shed.stats()).toMatchObject({ limit: 2, inFlight: 1, admitted: 2, shed: 1 });
  expect(shed.stats().shedByPriority[5]).toBe(1);
  routes.open();
  expect(await (await hanging).text()).toBe("late");
  await settled(shed, 0);
}

describe.each(Object.keys(frameworks))("loadShed on %s", (name) => {
  const start = startOn(name);

  it("sheds past the limit with 503, Retry-After and problem+json; priority 0 uses its reserve", () =>
    shedsWithReserve(start));

  it("releases exactly once on every path: finished, thrown, socket destroyed before and during the body", async () => {
    const { url, shed, routes } = await start({ limit: 50 });
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/ok`)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await fetch(`${url}/throw`).catch(() => ({ status: 0 }))).status).not.toBe(200);
    await settled(shed, 0);
    // Destroyed while the handler waits, and after the first chunk of a streamed body.
    const sockets = [
      await rawRequest(url, "/hang"),
      await rawRequest(url, "/hang"),
      await rawRequest(url, "/stream", 20),
    ];
    await routes.enteredAt(3);
    expect(shed.stats().inFlight).toBe(3);
    for (const socket of sockets) socket.destroy();
    // Released on the disconnect, while the handlers still wait.
    await settled(shed, 0);
    expect(routes.done).toBe(0);
    routes.open();
    for (const more = within(); routes.done < 3 && more(); ) await new Promise((r) => setTimeout(r, 5));
    expect(routes.done).toBe(3);
    await new Promise((r) => setTimeout(r, 20));
    // The handlers' late answers released nothing twice.
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 8, shed: 0 });
  });

  it("a priority function that returns a bad value fails the request, admitting nothing", async () => {
    const { url, shed } = await start({ limit: 5 });
    const answer = await fetch(`${url}/ok`, { headers: { "x-priority": "12" } });
    expect(answer.status).toBe(500);
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 0 });
  });
});

// The same on a fleet limit in Redis (the async path of every adapter): leases, given back.
const redis = await standaloneRedis("loadShed fleet limit on Redis");
const client = new Redis(redis?.url ?? "redis://127.0.0.1:1", { lazyConnect: true, enableOfflineQueue: false });
beforeAll(async () => {
  if (redis !== undefined) await client.connect();
});
afterAll(async () => {
  // The last releases go out as the responses close: let them reach Redis before hanging up.
  await new Promise((resolve) => setTimeout(resolve, 200));
  client.disconnect();
});

describe.skipIf(redis === undefined).each(Object.keys(frameworks))(
  "loadShed with a fleet store (Redis) on %s",
  (name) => {
    it("sheds past the fleet limit; priority 0 uses its reserve; the leases come back", async () => {
      const store = new RedisStore({ client, prefix: uniquePrefix(`shed-${name.replace(/\W+/g, "-")}`) });
      await shedsWithReserve(startOn(name), { store, name: "fleet" });
      // Every lease was given back: a second shedder on the same store finds both slots free.
      const other = loadShed({ limit: 2, store, name: "fleet" });
      const hold = deferred();
      const first = other(new Request("http://x/"), async () => {
        await hold.promise;
        return new Response("ok");
      });
      const second = await other(new Request("http://x/"), () => new Response("ok"));
      expect(second.status).toBe(200);
      hold.resolve();
      expect((await first).status).toBe(200);
    });

    it("releases a request whose client left while the fleet store was deciding", async () => {
      // The store's connection is held by a BLPOP: the admission's commands queue behind it in
      // Redis until the LPUSH, so the client surely leaves before the admission answers.
      const url = (redis as { url: string }).url;
      const held = new Redis(url);
      const control = new Redis(url);
      try {
        const prefix = uniquePrefix(`shed-left-${name.replace(/\W+/g, "-")}`);
        const store = new RedisStore({ client: held, prefix });
        const { url: base, shed, server } = await startOn(name)({ limit: 2, store, name: "fleet" });
        await held.ping(); // connected, scripts aside
        const id = await held.client("ID");
        void held.blpop(`${prefix}:gate`, 0);
        const queued = async () => {
          const info = (await control.client("LIST", "ID", String(id))) as string;
          return /cmd=blpop/.test(info) && Number(/ qbuf=(\d+)/.exec(info)?.[1]) > 0;
        };
        const connections = () => new Promise<number>((r, j) => server.getConnections((e, n) => (e ? j(e) : r(n))));
        const before = await connections();
        const socket = await rawRequest(base, "/ok");
        for (const more = within(); !(await queued()) && more(); ) await new Promise((r) => setTimeout(r, 5));
        expect(await queued()).toBe(true);
        socket.destroy();
        for (const more = within(); (await connections()) > before && more(); )
          await new Promise((r) => setTimeout(r, 5));
        expect(await connections()).toBe(before);
        await control.lpush(`${prefix}:gate`, "go");
        for (const more = within(); shed.stats().admitted < 1 && more(); ) await new Promise((r) => setTimeout(r, 5));
        expect(shed.stats().admitted).toBe(1);
        await settled(shed, 0);
        // Its fleet lease came back too: another process's shedder finds both slots free.
        const other = loadShed({ limit: 2, store: new RedisStore({ client, prefix }), name: "fleet" });
        const gate = deferred();
        const slow = other(new Request("http://x/"), () => gate.promise.then(() => new Response("ok")));
        expect((await other(new Request("http://x/"), () => new Response("ok"))).status).toBe(200);
        gate.resolve();
        await slow;
      } finally {
        held.disconnect();
        control.disconnect();
      }
    });
  },
);
