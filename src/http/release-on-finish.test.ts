// The releases of loadShed on the paths a per-socket slot could lose one: keep-alive sockets
// reused and destroyed mid-response, pipelined requests (their response waits for its socket),
// two loadSheds on one request, upgrades, responses that never start, Fastify's inject() (no
// real socket), Express. Each ends with the in-flight count back at 0 at rest.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import express from "express";
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { listening } from "../../test/support/listening.ts";
import { within } from "../../test/support/poll.ts";
import { releaseMode } from "./release-on-finish.ts";
import { type LoadShedHandle, loadShed } from "./shed.ts";
import { loadShed as expressShed } from "./shed-express.ts";
import { loadShed as fastifyShed } from "./shed-fastify.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Resolves when `check()` holds (polled), failing the test past the poll's deadline. */
async function until(check: () => boolean): Promise<void> {
  for (const more = within(); !check() && more(); ) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

/** In flight back to `n` (polled: a release on 'close' comes a tick after the socket closes). */
const settled = (shed: LoadShedHandle, n = 0) => until(() => shed.stats().inFlight === n);

/** A gate the /hang route waits on, and how many handlers entered it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open, entered: 0 };
}

/** A node:http server behind `shed` (/hang waits for the gate; /stream writes a chunk, then waits). */
async function nodeServer(shed: (req: IncomingMessage, res: ServerResponse) => unknown, wait = gate()) {
  const server = createServer(async (req, res) => {
    if ((await shed(req, res)) !== true) return;
    if (req.url === "/hang" || req.url === "/stream") {
      if (req.url === "/stream") res.write("first ");
      wait.entered++;
      await wait.opened;
      if (!res.destroyed) res.end("late");
      return;
    }
    if (req.url === "/never") return; // never answers
    res.end("ok");
  });
  server.listen(0, "127.0.0.1");
  const started = await listening(server);
  cleanups.push(() => {
    wait.open();
    return started.close();
  });
  const { port } = new URL(started.url);
  return { server, port: Number(port), wait };
}

/** An open keep-alive socket to `port` that collects what it reads. */
async function keepAlive(port: number): Promise<{ socket: Socket; text: () => string }> {
  let got = "";
  const socket = connect(port, "127.0.0.1");
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    got += chunk;
  });
  socket.on("error", () => {});
  await new Promise((r) => socket.once("connect", r));
  cleanups.push(() => void socket.destroy());
  return { socket, text: () => got };
}

const get = (path: string, extra = "") => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
const answers = (text: string) => text.split("HTTP/1.1 ").length - 1;

describe("loadShed's release on node:http, one socket at a time", () => {
  it("keep-alive: many requests on one socket release each; one destroyed mid-response releases too", async () => {
    const shed = loadShed({ limit: 100 });
    const { port, wait } = await nodeServer(shed);
    const { socket, text } = await keepAlive(port);
    for (let i = 1; i <= 5; i++) {
      socket.write(get("/ok"));
      await until(() => answers(text()) === i);
      await settled(shed);
    }
    // (A real server's finish is on the diagnostics channel by now: this test covers that path.)
    expect(releaseMode()).toBe("channel");
    socket.write(get("/stream"));
    await until(() => wait.entered === 1 && text().includes("first"));
    expect(shed.stats().inFlight).toBe(1);
    socket.destroy();
    await settled(shed);
    wait.open();
    await new Promise((r) => setTimeout(r, 20));
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 6 });
  });

  it("sockets destroyed mid-response after keep-alive reuse, many at once: none leaks", async () => {
    const shed = loadShed({ limit: 1000 });
    const { port, wait } = await nodeServer(shed);
    const clients = await Promise.all(Array.from({ length: 20 }, () => keepAlive(port)));
    for (const { socket } of clients) socket.write(get("/ok") + get("/ok"));
    await until(() => clients.every((c) => answers(c.text()) === 2));
    await settled(shed);
    for (const { socket } of clients) socket.write(get("/hang"));
    await until(() => wait.entered === 20);
    expect(shed.stats().inFlight).toBe(20);
    for (const [i, { socket }] of clients.entries()) if (i % 2 === 0) socket.destroy();
    await settled(shed, 10);
    wait.open();
    await until(() => clients.every((c, i) => i % 2 === 0 || answers(c.text()) === 3));
    await settled(shed);
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 60 });
  });

  it("pipelined requests (their responses wait for the socket) release, finished or cut", async () => {
    const shed = loadShed({ limit: 100 });
    const { port, wait } = await nodeServer(shed);
    const first = await keepAlive(port);
    first.socket.write(get("/hang") + get("/ok") + get("/ok"));
    await until(() => wait.entered === 1 && shed.stats().admitted === 3);
    expect(shed.stats().inFlight).toBe(3);
    wait.open();
    await until(() => answers(first.text()) === 3);
    await settled(shed);
    const wait2 = gate();
    const second = await nodeServer(shed, wait2);
    const cut = await keepAlive(second.port);
    cut.socket.write(get("/ok") + get("/hang") + get("/ok") + get("/ok"));
    await until(() => wait2.entered === 1 && shed.stats().admitted === 7);
    expect(shed.stats().inFlight).toBe(3);
    // The two behind /hang never get their socket: Node drops them with it, and they never emit
    // 'close' (a listener per response leaked both).
    cut.socket.destroy();
    await settled(shed);
  });

  it("two loadSheds on one request each release", async () => {
    const outer = loadShed({ limit: 100 });
    const inner = loadShed({ limit: 100 });
    const { port, wait } = await nodeServer((req, res) => outer(req, res) === true && inner(req, res));
    const { socket, text } = await keepAlive(port);
    socket.write(get("/ok") + get("/ok"));
    await until(() => answers(text()) === 2);
    await settled(outer);
    await settled(inner);
    socket.write(get("/hang"));
    await until(() => wait.entered === 1);
    socket.destroy();
    await settled(outer);
    await settled(inner);
  });

  it("a response that never starts is released when its connection is closed", async () => {
    const shed = loadShed({ limit: 100 });
    const { server, port } = await nodeServer(shed);
    const { socket, text } = await keepAlive(port);
    socket.write(get("/ok") + get("/never"));
    await until(() => answers(text()) === 1 && shed.stats().admitted === 2);
    expect(shed.stats().inFlight).toBe(1);
    (server as Server).closeAllConnections();
    await settled(shed);
  });

  it("upgrades: an upgrade listener takes the socket after a kept-alive request; nothing leaks or doubles", async () => {
    const shed = loadShed({ limit: 100 });
    const { server, port } = await nodeServer(shed);
    const upgraded: Socket[] = [];
    server.on("upgrade", (_req, socket: Socket) => {
      upgraded.push(socket);
      // (Its own now: the server keeps it half-open, as the protocol it switched to would.)
      socket.on("end", () => socket.destroy());
      socket.on("error", () => {});
      cleanups.push(() => void socket.destroy());
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n");
    });
    const { socket, text } = await keepAlive(port);
    socket.write(get("/ok"));
    await until(() => answers(text()) === 1);
    socket.write(get("/", "Upgrade: x\r\nConnection: Upgrade\r\n"));
    await until(() => upgraded.length === 1 && text().includes("101"));
    socket.destroy();
    await until(() => (upgraded[0] as Socket).destroyed);
    await new Promise((r) => setTimeout(r, 20));
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 1 });
  });
});

describe("loadShed's release without a real socket, and on Express", () => {
  it("Fastify inject(): released (a mock socket has no parser: its response keeps its own listener)", async () => {
    const app = Fastify();
    const shed = fastifyShed({ limit: 100 });
    await app.register(shed);
    app.get("/ok", async () => "ok");
    cleanups.push(() => app.close());
    for (let i = 0; i < 5; i++) expect((await app.inject({ url: "/ok" })).statusCode).toBe(200);
    await settled(shed);
    expect(shed.stats().admitted).toBe(5);
  });

  it("Express: keep-alive reuse, then a socket destroyed mid-response", async () => {
    const app = express();
    const shed = expressShed({ limit: 100 });
    const wait = gate();
    app.use(shed);
    app.get("/ok", (_req, res) => void res.send("ok"));
    app.get("/hang", async (_req, res) => {
      wait.entered++;
      await wait.opened;
      if (!res.destroyed) res.send("late");
    });
    const server = app.listen(0, "127.0.0.1");
    const started = await listening(server);
    cleanups.push(() => {
      wait.open();
      return started.close();
    });
    const { socket, text } = await keepAlive(Number(new URL(started.url).port));
    socket.write(get("/ok") + get("/ok"));
    await until(() => answers(text()) === 2);
    await settled(shed);
    socket.write(get("/hang"));
    await until(() => wait.entered === 1);
    socket.destroy();
    await settled(shed);
  });
});
