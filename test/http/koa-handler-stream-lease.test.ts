// SPEC §16 "releases when the response ends" (attack2 finding 2): Koa's `rateLimit` with
// `countOn: "handler"` and a concurrency spec holds the slot while Koa writes a streamed
// `ctx.body` (after the middleware chain returned), as Express does with the same options.
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import express from "express";
import Koa from "koa";
import { rateLimit as expressRateLimit } from "sluice/express";
import { rateLimit as koaRateLimit } from "sluice/koa";
import { describe, expect, it } from "vitest";

const spec = { algorithm: "concurrency", limit: 1, leaseMs: 60_000 } as const;

/** A body that sends one chunk, then ends only when `end` is called. */
function gatedStream(ended: Promise<void>): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (sent) return;
      sent = true;
      this.push("first chunk\n");
      void ended.then(() => this.push(null));
    },
  });
}

async function secondWhileFirstStreams(listen: (ended: Promise<void>) => import("node:http").Server): Promise<number> {
  let finish: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const server = listen(ended);
  try {
    if (!server.listening) await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const first = await fetch(url);
    expect(first.status).toBe(200);
    const second = await fetch(url);
    finish();
    await Promise.all([first.text(), second.text()]);
    return second.status;
  } finally {
    finish();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('countOn "handler" with a concurrency spec and a streamed body', () => {
  it("control: Express holds the slot until the stream ends", { timeout: 20_000 }, async () => {
    const status = await secondWhileFirstStreams((ended) => {
      const app = express();
      app.use(expressRateLimit({ spec, key: () => "k", countOn: "handler" }));
      app.get("/", (_req, res) => {
        gatedStream(ended).pipe(res);
      });
      return app.listen(0, "127.0.0.1");
    });
    expect(status).toBe(429);
  });

  it("Koa holds the slot until the stream ends", {
    timeout: 20_000,
  }, async () => {
    const status = await secondWhileFirstStreams((ended) => {
      const app = new Koa();
      app.use(koaRateLimit({ spec, key: () => "k", countOn: "handler" }));
      app.use(async (ctx) => {
        ctx.body = gatedStream(ended);
      });
      return app.listen(0, "127.0.0.1");
    });
    expect(status).toBe(429);
  });
});
