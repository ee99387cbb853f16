// rateLimitFetch: a Web Request/Response handler, served over loopback by @hono/node-server's
// plain fetch adaptor (so the peer address is real), plus direct calls.
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Decision, ManualClock } from "sluice";
import { rateLimitFetch } from "sluice/http";
import { describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { conformance, hangSignals, type Options, routeOf, twoChunks } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

const fetchAdapter = {
  serve: async (options: Options | Options[]) => {
    const limits = (Array.isArray(options) ? options : [options]).map(({ customLimited, ...rest }) => {
      if (customLimited) rest.onLimited = () => new Response("slow down", { status: 429 });
      return rateLimitFetch(rest as never);
    });
    const hang = hangSignals();
    const handle = async (request: Request, decision: Decision | undefined): Promise<Response> => {
      const route = routeOf(new URL(request.url).pathname);
      if (route.kind === "throw") throw new Error("handler failed");
      if (route.kind === "hang") {
        hang.enter();
        await new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true }));
        hang.leave();
        return new Response("late", { status: route.late ?? 200 });
      }
      if (route.kind === "decision") return Response.json(decision ?? null);
      if (route.kind === "stream") return new Response(twoChunks());
      return new Response("ok", { status: route.kind === "status" ? route.code : 200 });
    };
    // Stacked: each limiter wraps the next; the handler sees the innermost decision.
    const chain = (request: Request, address: string | undefined, i: number): Promise<Response> => {
      const limit = limits[i];
      if (limit === undefined) throw new Error("no limiter");
      return limit(
        request,
        (decision) => (i + 1 < limits.length ? chain(request, address, i + 1) : handle(request, decision)),
        address,
      );
    };
    const server = serve({
      fetch: async (request: Request, env: { incoming: { socket: { remoteAddress?: string | undefined } } }) => {
        try {
          return await chain(request, env.incoming.socket.remoteAddress, 0);
        } catch (error) {
          return new Response(String(error), { status: 500 });
        }
      },
      port: 0,
      hostname: "127.0.0.1",
    });
    return { ...(await listening(server as never)), hang: hang.served, handles: limits[0] };
  },
  header: (request: unknown, name: string) => (request as Request).headers.get(name) ?? undefined,
  path: (request: unknown) => new URL((request as Request).url).pathname,
};
conformance("fetch handler", fetchAdapter);
features("fetch handler", fetchAdapter);
leases("fetch handler", fetchAdapter);

describe("rateLimitFetch direct", () => {
  test("without an address every client shares a bucket, and that is reported once", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push(w.code ?? "");
    process.on("warning", onWarning);
    try {
      const limit = rateLimitFetch({
        spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
        clock: new ManualClock(),
      });
      expect(limit.name).toBe("sluiceFetch");
      const ok = () => new Response("ok");
      expect((await limit(new Request("http://x/"), ok)).status).toBe(200);
      expect((await limit(new Request("http://x/"), ok)).status).toBe(429);
      expect((await limit(new Request("http://x/"), ok, "192.0.2.1")).status).toBe(200);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w === "SLUICE_NO_CLIENT_ADDRESS")).toHaveLength(1);
  });
});

describe("rateLimit from sluice/http also answers Web Requests", () => {
  test("called with a Request it behaves like rateLimitFetch; .fetch is the same handler", async () => {
    const { rateLimit } = await import("sluice/http");
    const limit = rateLimit({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 },
      clock: new ManualClock(),
    });
    const ok = await limit(new Request("http://x/"), () => new Response("ok"), "192.0.2.1");
    expect(ok.status).toBe(200);
    expect(ok.headers.get("ratelimit")).toBe('"default";r=0;t=1');
    const limited = await limit.fetch(new Request("http://x/"), () => new Response("ok"), "192.0.2.1");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    expect(limited.headers.get("content-type")).toBe("application/problem+json");
  });

  test("Node and Web requests share one limit; a Node-shaped onLimited never breaks the Web path", async () => {
    const http = await import("node:http");
    const { rateLimit } = await import("sluice/http");
    const limit = rateLimit({
      spec: { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      clock: new ManualClock(),
      onLimited: (_req, res) => res.end("slow down"),
    });
    const first = await limit.fetch(new Request("http://x/"), () => new Response("ok"), "127.0.0.1");
    expect(first.status).toBe(200);
    const server = http.createServer(async (req, res) => {
      if (await limit(req, res)) res.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const viaNode = await fetch(`http://127.0.0.1:${port}/`);
      expect(viaNode.status).toBe(429);
      expect(await viaNode.text()).toBe("slow down");
    } finally {
      server.close();
    }
    const again = await limit(new Request("http://x/"), () => new Response("ok"), "127.0.0.1");
    expect(again.status).toBe(429);
    expect(again.headers.get("content-type")).toBe("application/problem+json");
  });
});
