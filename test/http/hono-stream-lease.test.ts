// SPEC §16 "releases when the response ends" (attack2 finding 1): Hono's `rateLimit` on
// @hono/node-server holds a concurrency slot until a streamed body (a ReadableStream, as
// Hono's `stream()`/`streamSSE()` return) is sent, not until the handler returns its Response;
// it releases on the raw Node response's end, as Hono's `loadShed` does (src/http/hono-node.ts).
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { rateLimit } from "sluice/hono";
import { describe, expect, it } from "vitest";

describe("Hono rateLimit with a concurrency spec and a streamed body", () => {
  it("holds the slot until the streamed body ends, then frees it", {
    timeout: 20_000,
  }, async () => {
    const limit = rateLimit({ spec: { algorithm: "concurrency", limit: 1, leaseMs: 60_000 }, key: () => "k" });
    let finish: () => void = () => {};
    const ended = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const app = new Hono();
    app.use("*", limit);
    app.get("/stream", () => {
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("first chunk\n"));
          await ended; // the stream goes on until the test lets it end
          controller.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/plain" } });
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    try {
      await new Promise<void>((resolve) => server.once("listening", () => resolve()));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/stream`;
      const first = await fetch(url); // headers in, body still streaming: this request is in flight
      expect(first.status).toBe(200);
      const second = await fetch(url);
      const secondStatus = second.status;
      finish();
      await Promise.all([first.text(), second.text()]);
      // limit 1 and one request in flight: the second must be refused.
      expect(secondStatus).toBe(429);
      // The body ended: the slot is free again.
      await expect.poll(async () => (await limit.peek("k")).allowed).toBe(true);
      const third = await fetch(url);
      const thirdStatus = third.status;
      await third.text();
      expect(thirdStatus).toBe(200);
    } finally {
      finish();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
