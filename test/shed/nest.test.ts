// SluiceModule's `loadShed` option on a real Nest 11 app (platform-express): shed requests get
// the 503 problem with Retry-After, priority 0 uses its reserve, and every admitted request
// (finished, its socket destroyed while the handler waits or after the first chunk of its body,
// or while a Redis fleet store was still deciding) leaves the in-flight count.
import "reflect-metadata";
import { connect, type Socket } from "node:net";
import { Readable } from "node:stream";
import { Controller, Get, Module, StreamableFile } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import type { Request } from "express";
import { Redis } from "ioredis";
import type { LoadShedOptions } from "sluice/http";
import { SluiceLimits, SluiceModule } from "sluice/nest";
import { RedisStore } from "sluice/redis";
import { expect, test } from "vitest";
import { deferred } from "../http/conformance.ts";
import { listening } from "../support/listening.ts";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";

test("SluiceModule({ loadShed }) sheds with 503 problems, keeps the reserve, releases every request", async () => {
  const gate = deferred();
  let entered = 0;
  @Controller()
  class Routes {
    @Get("hang")
    async hang(): Promise<string> {
      entered++;
      await gate.promise;
      return "late";
    }
    @Get("ok")
    ok(): string {
      return "ok";
    }
  }
  @Module({
    imports: [
      SluiceModule.forRoot({
        loadShed: {
          limit: 2,
          reserve: { 0: 0.5 },
          priority: (req) => ((req as Request).headers["x-priority"] === "0" ? 0 : 5),
        },
      }),
    ],
    controllers: [Routes],
  })
  class AppModule {}
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, "127.0.0.1");
  const { url, close } = await listening(app.getHttpServer(), "127.0.0.1", () => app.close());
  const shed = app.get(SluiceLimits).loadShed;
  try {
    expect(shed).toBeDefined();
    const hanging = fetch(`${url}/hang`);
    for (const more = within(); entered < 1 && more(); ) await new Promise((r) => setTimeout(r, 5));
    const refused = await fetch(`${url}/ok`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await refused.json()).toMatchObject({ type: "urn:sluice:problem:overloaded", status: 503 });
    expect((await fetch(`${url}/ok`, { headers: { "x-priority": "0" } })).status).toBe(200);
    // A second hanging request whose client leaves: released on the disconnect.
    const { port } = new URL(url);
    const socket = connect(Number(port), "127.0.0.1", () =>
      socket.write("GET /hang HTTP/1.1\r\nHost: x\r\nx-priority: 0\r\n\r\n"),
    );
    for (const more = within(); entered < 2 && more(); ) await new Promise((r) => setTimeout(r, 5));
    expect(shed?.stats().inFlight).toBe(2);
    socket.destroy();
    for (const more = within(); shed?.stats().inFlight !== 1 && more(); ) await new Promise((r) => setTimeout(r, 5));
    expect(shed?.stats().inFlight).toBe(1);
    gate.resolve();
    expect(await (await hanging).text()).toBe("late");
    for (const more = within(); shed?.stats().inFlight !== 0 && more(); ) await new Promise((r) => setTimeout(r, 5));
    expect(shed?.stats()).toMatchObject({ inFlight: 0, admitted: 3, shed: 1 });
  } finally {
    await close();
  }
});

/** A Nest app with SluiceModule({ loadShed: options }): GET /stream writes a first chunk, then waits for `gate`. */
async function streamingApp(options: LoadShedOptions<unknown>, gate: Promise<void>, state: { entered: number }) {
  @Controller()
  class Routes {
    @Get("stream")
    stream(): StreamableFile {
      return new StreamableFile(
        Readable.from(
          (async function* () {
            yield Buffer.from("first ");
            state.entered++;
            await gate;
            yield Buffer.from("last");
          })(),
        ),
      );
    }
  }
  @Module({ imports: [SluiceModule.forRoot({ loadShed: options as never })], controllers: [Routes] })
  class AppModule {}
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, "127.0.0.1");
  const { url, close } = await listening(app.getHttpServer(), "127.0.0.1", () => app.close());
  const shed = app.get(SluiceLimits).loadShed;
  if (shed === undefined) throw new Error("no loadShed handle");
  return { port: Number(new URL(url).port), close, shed };
}

/** GET /stream on a raw socket; resolves once `bytes` of the answer arrived (0: once sent). */
function rawStream(port: number, bytes: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    let got = 0;
    const socket = connect(port, "127.0.0.1", () => {
      socket.write("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
      if (bytes === 0) resolve(socket);
    });
    socket.on("data", (chunk: Buffer) => {
      got += chunk.length;
      if (bytes > 0 && got >= bytes) resolve(socket);
    });
    socket.on("error", reject);
  });
}

const poll = async (done: () => boolean | Promise<boolean>) => {
  for (const more = within(); !(await done()) && more(); ) await new Promise((r) => setTimeout(r, 5));
};

test("SluiceModule({ loadShed }) releases a request whose client left after the first chunk of its body", async () => {
  const gate = deferred();
  const state = { entered: 0 };
  const { port, close, shed } = await streamingApp({ limit: 5 }, gate.promise, state);
  try {
    const sockets = [await rawStream(port, 20), await rawStream(port, 20)];
    await poll(() => state.entered === 2);
    expect(shed.stats().inFlight).toBe(2);
    for (const socket of sockets) socket.destroy();
    await poll(() => shed.stats().inFlight === 0);
    expect(shed.stats().inFlight).toBe(0);
    gate.resolve();
    await new Promise((r) => setTimeout(r, 20));
    expect(shed.stats()).toMatchObject({ inFlight: 0, admitted: 2 });
  } finally {
    gate.resolve();
    await close();
  }
});

const redis = await standaloneRedis("SluiceModule loadShed with a Redis fleet store");

test.skipIf(redis === undefined)(
  "SluiceModule({ loadShed: { store } }) releases a request whose client left while the fleet store was deciding",
  async () => {
    const url = (redis as { url: string }).url;
    // The store's connection is held by a BLPOP: the admission queues behind it until the LPUSH.
    const held = new Redis(url);
    const control = new Redis(url);
    const gate = deferred();
    const prefix = uniquePrefix("shed-nest-left");
    const state = { entered: 0 };
    const app = await streamingApp(
      { limit: 2, store: new RedisStore({ client: held, prefix }), name: "fleet" },
      gate.promise,
      state,
    );
    try {
      await held.ping();
      const id = String(await held.client("ID"));
      void held.blpop(`${prefix}:gate`, 0);
      const queued = async () => {
        const info = (await control.client("LIST", "ID", id)) as string;
        return /cmd=blpop/.test(info) && Number(/ qbuf=(\d+)/.exec(info)?.[1]) > 0;
      };
      const server = app.shed;
      const socket = await rawStream(app.port, 0);
      await poll(queued);
      expect(await queued()).toBe(true);
      socket.destroy();
      await new Promise((r) => setTimeout(r, 100)); // the server sees the socket close
      await control.lpush(`${prefix}:gate`, "go");
      await poll(() => server.stats().admitted === 1);
      await poll(() => server.stats().inFlight === 0);
      expect(server.stats()).toMatchObject({ inFlight: 0, admitted: 1 });
      // The fleet lease came back: two requests of a fresh connection both get a slot.
      const entered = state.entered; // 0 or 1: the guard let the gone client's request through
      const ok = [await rawStream(app.port, 20), await rawStream(app.port, 20)];
      await poll(() => state.entered === entered + 2);
      expect(server.stats()).toMatchObject({ inFlight: 2, shed: 0 });
      for (const s of ok) s.destroy();
      await poll(() => server.stats().inFlight === 0);
    } finally {
      gate.resolve();
      await app.close();
      held.disconnect();
      control.disconnect();
    }
  },
);
