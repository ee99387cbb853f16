// SluiceModule's `loadShed` option on a real Nest 11 app (platform-express): shed requests get
// the 503 problem with Retry-After, priority 0 uses its reserve, and every admitted request
// (finished, or its socket destroyed while the handler waits) leaves the in-flight count.
import "reflect-metadata";
import { connect } from "node:net";
import { Controller, Get, Module } from "@nestjs/common";
import { NestFactory } from "@nestjs/core";
import type { Request } from "express";
import { SluiceLimits, SluiceModule } from "sluice/nest";
import { expect, test } from "vitest";
import { deferred } from "../http/conformance.ts";
import { listening } from "../support/listening.ts";
import { within } from "../support/poll.ts";

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
