// docs/edge.md's Workers example, bundled as a Workers build would bundle it, then run in a V8
// context that has only the Web platform (fetch, Request/Response, TextEncoder, timers, Web
// Crypto, console): no `process`, no `Buffer`, no `setImmediate`, no `require`, no Node
// built-ins. It reaches a real Redis through @upstash/redis/cloudflare and the Upstash REST
// bridge, and must count, deny and share state as RedisStore does anywhere else.
import { join } from "node:path";
import { createContext, runInContext } from "node:vm";
import { Redis } from "ioredis";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { findRedis, noRedis, type SharedRedis, uniquePrefix } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge.ts";

const redis: SharedRedis | undefined = await findRedis();
if (redis === undefined) noRedis("Workers bundle");

interface Worker {
  fetch(request: Request, env: Record<string, string>): Promise<Response>;
}

/** The fixture bundled into one script (IIFE), as a Workers build would ship it. */
async function bundle(): Promise<string> {
  const out = await build({
    logLevel: "silent",
    configFile: false,
    build: {
      write: false,
      minify: false,
      lib: {
        entry: join(ROOT, "test/edge/fixtures/worker.mjs"),
        formats: ["iife"],
        name: "worker",
        fileName: "worker",
      },
      rollupOptions: {
        // RedisStore.connect(url) imports ioredis on demand; an edge bundle leaves it out.
        external: ["ioredis"],
        output: { globals: { ioredis: "ioredis" } },
      },
    },
  });
  const outputs = (Array.isArray(out) ? out : [out]) as Array<{ output: Array<{ code?: string }> }>;
  const code = outputs.flatMap((o) => o.output).map((c) => c.code ?? "");
  expect(code.filter((c) => c !== "")).toHaveLength(1);
  return code[0] as string;
}

describe.skipIf(redis === undefined)("the Workers example, bundled, where only Web APIs exist", () => {
  let bridge: UpstashBridge;
  let io: Redis;
  beforeAll(async () => {
    ensureBuilt();
    bridge = await startUpstashBridge(redis?.url ?? "");
    io = new Redis(redis?.url ?? "", { lazyConnect: true });
    await io.connect();
  });
  afterAll(async () => {
    await bridge?.close();
    io?.disconnect();
    await redis?.owned?.dispose();
  });

  it("bundles without Node built-ins and counts, denies and keeps state in Redis", async () => {
    const code = await bundle();
    expect(code).not.toMatch(/["']node:[a-z_/]+["']/);
    const web = {
      fetch,
      Request,
      Response,
      Headers,
      URL,
      TextEncoder,
      TextDecoder,
      AbortController,
      AbortSignal,
      Blob,
      EventTarget,
      Event,
      ReadableStream,
      WritableStream,
      TransformStream,
      FormData,
      atob,
      btoa,
      crypto: globalThis.crypto,
      performance,
      queueMicrotask,
      structuredClone,
      setTimeout,
      clearTimeout,
      setInterval,
      clearInterval,
      console,
    };
    const context = createContext({ ...web });
    runInContext(`${code}\nglobalThis.worker = worker;`, context, { filename: "worker.js" });
    for (const absent of ["process", "Buffer", "setImmediate", "require"]) {
      expect(runInContext(`typeof ${absent}`, context), absent).toBe("undefined");
    }
    // (An IIFE of a module with only a default export is that export.)
    const exported = context.worker as Worker & { default?: Worker };
    const worker = exported.default ?? exported;
    const prefix = uniquePrefix("worker");
    const env = { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, PREFIX: prefix };
    const ask = () =>
      worker.fetch(new Request("https://edge.test/", { headers: { "cf-connecting-ip": "203.0.113.9" } }), env);
    const bodies: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await ask();
      expect(res.status).toBe(200);
      bodies.push(await res.text());
    }
    expect(bodies).toEqual(["ok, 2 left", "ok, 1 left", "ok, 0 left"]);
    const denied = await ask();
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get("retry-after"))).toBeGreaterThan(0);
    // The state is in Redis, under the prefix: one record for this key.
    expect((await io.keys(`${prefix}*`)).length).toBe(1);
  });
});
