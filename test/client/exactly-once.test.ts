// sluice/client never counts a call twice, never takes longer than timeoutMs, and keeps one
// turn's calls in order: against a proxy that forwards a request and then resets the client's
// connection (the service decided it; a resend would count it again), a server that stalls,
// and batches split into chunks (maxBatch) or re-split after a 413, through a proxy that holds
// the first chunk back (chunks sent side by side would be decided out of order).
import { createServer, type Server, Socket } from "node:net";
import { createClient } from "sluice/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/clock.ts";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
const RULES = "rules:\n  five: { algorithm: fixed-window, limit: 5, windowMs: 1h }\n";

async function serve(maxBatch = 1000): Promise<RunningServer> {
  return startServer({
    config: tmp.file(`rules-${maxBatch}.yaml`, RULES),
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 1024 * 1024,
    maxBatch,
    watch: false,
    shutdownTimeoutMs: 1000,
    log: () => undefined,
  });
}

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  return new Promise((r) => server.close(() => r()));
}

/**
 * A TCP proxy to `target` that, on each client connection, passes the first response back and
 * then, for the second request, forwards it, waits for the service's answer (so it was read
 * and decided), and resets the client's connection instead of answering.
 */
async function resettingProxy(target: number): Promise<{ port: number; resets(): number }> {
  const sockets = new Set<Socket>();
  let resets = 0;
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = new Socket();
    sockets.add(upstream);
    upstream.connect(target, "127.0.0.1");
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    client.on("data", (d) => upstream.write(d));
    let responses = 0;
    upstream.on("data", (d: Buffer) => {
      if (d.subarray(0, 9).toString() === "HTTP/1.1 ") responses++;
      if (responses <= 1) {
        client.write(d);
        return;
      }
      resets++;
      client.resetAndDestroy();
      upstream.destroy();
    });
    client.on("close", () => upstream.destroy());
  });
  const port = await listen(server);
  closers.push(() => closeServer(server, sockets));
  return { port, resets: () => resets };
}

/**
 * A TCP proxy to `target` that holds any request carrying `"cost":5` for 100 ms before
 * forwarding it: chunks sent side by side would then reach the service out of order.
 */
async function delayingProxy(target: number): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = new Socket();
    sockets.add(upstream);
    upstream.connect(target, "127.0.0.1");
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    let pending = Promise.resolve();
    client.on("data", (d: Buffer) => {
      const hold = d.includes('"cost":5');
      pending = pending.then(async () => {
        if (hold) await new Promise((r) => setTimeout(r, 100));
        upstream.write(d);
      });
    });
    upstream.on("data", (d) => client.write(d));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  const port = await listen(server);
  closers.push(() => closeServer(server, sockets));
  return `http://127.0.0.1:${port}`;
}

describe("sluice/client: exactly once, within timeoutMs, in order", () => {
  let service: RunningServer;
  let oneAtATime: RunningServer;
  beforeAll(async () => {
    service = await serve();
    oneAtATime = await serve(1);
  });
  afterAll(async () => {
    await service?.close();
    await oneAtATime?.close();
    tmp.cleanup();
  });

  it("a request the proxy forwarded before resetting is not sent again: 2 calls count 2 units, not 3", async () => {
    const proxy = await resettingProxy(Number(new URL(service.url).port));
    const client = createClient({ url: `http://127.0.0.1:${proxy.port}`, timeoutMs: 2000, onError: "deny" });
    closers.push(() => client.close());
    const first = await client.check("five", "victim");
    expect(first).toMatchObject({ allowed: true, remaining: 4 });
    expect(first.failure).toBeUndefined();
    // Same kept-alive socket: forwarded, decided by the service, then the connection is reset.
    const second = await client.check("five", "victim");
    expect(proxy.resets()).toBe(1);
    expect(second.failure?.policy).toBe("deny");
    const direct = createClient({ url: service.url });
    closers.push(() => direct.close());
    // Two checks were made; the service counted two (a resend would have made it three). A
    // peek says what one more check would leave: 5 - 2 - 1.
    expect(await direct.peek("five", "victim")).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("a server that stalls: one connection, one attempt, a deadline no later than timeoutMs from the call", async () => {
    const sockets = new Set<Socket>();
    const heads: string[] = [];
    const stalled = createServer((s) => {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("data", (d) => heads.push(d.toString()));
    });
    const port = await listen(stalled);
    closers.push(() => closeServer(stalled, sockets));
    const timeoutMs = 300;
    const client = createClient({ url: `http://127.0.0.1:${port}`, timeoutMs, onError: "allow" });
    closers.push(() => client.close());
    // The client's clock (epoch-anchored performance.now(), as the deadline header is made),
    // not Date.now(): the two drift apart by milliseconds in a long-lived process.
    const calledAt = systemClock.now();
    const d = await client.check("five", "k");
    expect(d.failure?.policy).toBe("allow");
    expect((d.failure?.error as { code?: string } | undefined)?.code).toBe("ERR_STORE_TIMEOUT");
    expect(sockets.size).toBe(1);
    expect(heads.length).toBe(1);
    const deadline = Number(/\r\nsluice-deadline: (\d+)\r\n/i.exec(heads[0] as string)?.[1]);
    // The service is told to refuse the call past the caller's own deadline, never later.
    expect(deadline).toBeLessThanOrEqual(calledAt + timeoutMs + 1);
  });

  it("a turn split into chunks (maxBatch: 1) is decided in call order: cost 5 then cost 1 on a limit of 5", async () => {
    const client = createClient({ url: await delayingProxy(Number(new URL(service.url).port)), maxBatch: 1 });
    closers.push(() => client.close());
    for (let trial = 0; trial < 10; trial++) {
      const key = `chunks-${trial}`;
      const [big, small] = await Promise.all([
        client.check("five", key, { cost: 5 }),
        client.check("five", key, { cost: 1 }),
      ]);
      expect([trial, big.allowed, small.allowed]).toEqual([trial, true, false]);
    }
  });

  it("a turn re-split after the service's 413 (batch too large) is decided in call order", async () => {
    const url = await delayingProxy(Number(new URL(oneAtATime.url).port));
    for (let trial = 0; trial < 10; trial++) {
      // A fresh client each time: it learns the service's batch size from the 413 and re-splits.
      const client = createClient({ url });
      const key = `resplit-${trial}`;
      const [big, small, third] = await Promise.all([
        client.check("five", key, { cost: 5 }),
        client.check("five", key, { cost: 1 }),
        client.peek("five", key),
      ]);
      await client.close();
      expect([trial, big.allowed, small.allowed, third.remaining]).toEqual([trial, true, false, 0]);
    }
  });
});
