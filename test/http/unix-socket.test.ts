// A server listening on a Unix socket behind a proxy (nginx `proxy_pass http://unix:/run/app.sock`):
// the socket has no peer address, the peer is the proxy by definition, so with `trustProxy` the
// client comes from the forwarding header; without it every request shares one bucket, and a
// warning says which option fixes it.
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import { rateLimit as expressRateLimit } from "sluice/express";
import { rateLimit } from "sluice/http";
import { afterEach, describe, expect, test } from "vitest";

const SPEC = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 } as const;

interface UnixServer {
  path: string;
  close(): Promise<void>;
}

const dirs: string[] = [];
let served: UnixServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Listens on a fresh socket path with `handler`. */
async function listenUnix(handler: http.RequestListener): Promise<UnixServer> {
  const dir = mkdtempSync(join(tmpdir(), "sluice-unix-"));
  dirs.push(dir);
  const path = join(dir, "app.sock");
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** GET / over the socket with `headers`; resolves to the status. */
function get(path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: path, path: "/", headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The node `rateLimit` in front of a 200 handler. */
function nodeServer(options: Parameters<typeof rateLimit>[0]): Promise<UnixServer> {
  const limit = rateLimit(options);
  return listenUnix(async (req, res) => {
    if (await limit(req, res)) res.end("ok");
  });
}

const CLIENTS = ["203.0.113.1", "203.0.113.2", "2001:db8::1", "198.51.100.7"];

describe("Unix-socket servers behind a proxy", () => {
  test("with trustProxy: 1, four clients behind the proxy get four buckets", async () => {
    served = await nodeServer({ spec: SPEC, trustProxy: 1 });
    for (const ip of CLIENTS) expect(await get(served.path, { "x-forwarded-for": ip })).toBe(200);
    for (const ip of CLIENTS) expect(await get(served.path, { "x-forwarded-for": ip })).toBe(429);
  });

  test("the last header entry is the proxy's peer; earlier entries count only through trusted hops", async () => {
    served = await nodeServer({ spec: SPEC, trustProxy: 1 });
    // One trusted hop (the Unix peer): the forged first entry is ignored, 203.0.113.1 is the client.
    expect(await get(served.path, { "x-forwarded-for": "198.51.100.99, 203.0.113.1" })).toBe(200);
    expect(await get(served.path, { "x-forwarded-for": "198.51.100.98, 203.0.113.1" })).toBe(429);
  });

  test("with two trusted hops the chain walks one further; Forwarded works too", async () => {
    served = await nodeServer({ spec: SPEC, trustProxy: 2 });
    expect(await get(served.path, { "x-forwarded-for": "198.51.100.1, 10.0.0.2" })).toBe(200);
    expect(await get(served.path, { "x-forwarded-for": "198.51.100.2, 10.0.0.2" })).toBe(200);
    expect(await get(served.path, { "x-forwarded-for": "198.51.100.2, 10.0.0.3" })).toBe(429);
    await served.close();
    served = await nodeServer({ spec: SPEC, trustProxy: ["10.0.0.0/8"], proxyHeader: "forwarded" });
    expect(await get(served.path, { forwarded: "for=198.51.100.1, for=10.0.0.2" })).toBe(200);
    expect(await get(served.path, { forwarded: "for=198.51.100.2, for=10.0.0.2" })).toBe(200);
  });

  test("without trustProxy (or without a usable header) all share one bucket, with a warning naming the fix", async () => {
    const warnings: Array<{ code?: string | undefined; message: string }> = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push({ code: w.code, message: w.message });
    process.on("warning", onWarning);
    try {
      served = await nodeServer({ spec: SPEC });
      expect(await get(served.path, { "x-forwarded-for": CLIENTS[0] as string })).toBe(200);
      expect(await get(served.path, { "x-forwarded-for": CLIENTS[1] as string })).toBe(429);
      await served.close();
      served = await nodeServer({ spec: SPEC, trustProxy: 1 });
      expect(await get(served.path)).toBe(200);
      expect(await get(served.path, { "x-forwarded-for": "not-an-address" })).toBe(429);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.find((w) => w.code === "SLUICE_UNIX_SOCKET_NO_TRUST")?.message).toMatch(/set `trustProxy`/);
    expect(warnings.find((w) => w.code === "SLUICE_TRUST_PROXY_NO_HEADER")?.message).toMatch(/Unix socket/);
  });

  test("Express: app.listen(path) with trustProxy keys each forwarded client", async () => {
    const app = express();
    app.use(expressRateLimit({ spec: SPEC, trustProxy: 1 }));
    app.get("/", (_req, res) => {
      res.send("ok");
    });
    served = await listenUnix(app);
    for (const ip of CLIENTS) expect(await get(served.path, { "x-forwarded-for": ip })).toBe(200);
    expect(await get(served.path, { "x-forwarded-for": CLIENTS[2] as string })).toBe(429);
  });
});
