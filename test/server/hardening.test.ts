import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, type Served, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
const rules = tmp.file("rules.yaml", "rules:\n  api: { algorithm: sliding-log, limit: 5, windowMs: 1h }\n");
let s: Served;
let cors: Served;

beforeAll(async () => {
  ensureBuilt();
  [s, cors] = await Promise.all([
    serve(["--config", rules]),
    serve(["--config", rules, "--cors-origin", "https://app.example, https://admin.example"]),
  ]);
});
afterAll(async () => {
  await Promise.all([s?.stop(), cors?.stop()]);
  tmp.cleanup();
});

/** POSTs `body` as `type` (null: no Content-Type header at all). */
function post(base: Served, body: string, type: string | null = "application/json", path = "/v1/check") {
  const bytes = new TextEncoder().encode(body); // a byte body gets no Content-Type of its own
  return fetch(`${base.url}${path}`, {
    method: "POST",
    headers: type === null ? {} : { "content-type": type },
    body: bytes,
  });
}

async function problem(res: Response): Promise<Record<string, unknown>> {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  return (await res.json()) as Record<string, unknown>;
}

async function storeKeys(base: Served): Promise<number> {
  const text = await (await fetch(`${base.url}/metrics`)).text();
  return Number(/^sluice_store_keys (\d+)$/m.exec(text)?.[1]);
}

describe("sluice serve under hostile input", () => {
  it("answers deeply nested JSON with 400, never 500, and stays up", async () => {
    const bodies = [
      "[".repeat(5000) + "]".repeat(5000),
      '{"a":'.repeat(2000) + "1" + "}".repeat(2000),
      `{"rule":"api","key":${"[".repeat(5000)}${"]".repeat(5000)}}`,
      `[${"[".repeat(5000)}${"]".repeat(5000)}]`,
    ];
    for (const body of bodies) {
      for (const path of ["/v1/check", "/v1/peek", "/v1/reset"]) {
        const res = await post(s, body, "application/json", path);
        expect(res.status).toBe(400);
        const p = await problem(res);
        expect(p.type).toBe("urn:sluice:problem:invalid-json");
        expect(p.detail).toContain("deeper than 32");
      }
    }
    // Nesting inside strings is not nesting.
    const fine = await post(s, JSON.stringify({ rule: "api", key: "[".repeat(300) }));
    expect(fine.status).toBe(200);
    expect(s.log()).not.toMatch(/error handling|RangeError/);
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });

  it("refuses keys past --max-key-length with 400 naming the limit, and stores none", async () => {
    const before = await storeKeys(s);
    // The attack of issue 9: many checks with 60 KB keys (under --max-body) must not grow the store.
    for (let i = 0; i < 50; i++) {
      const res = await post(s, JSON.stringify({ rule: "api", key: `${i}:${"x".repeat(60_000)}` }));
      expect(res.status).toBe(400);
    }
    const long = await post(s, JSON.stringify({ rule: "api", key: "k".repeat(513) }));
    expect(long.status).toBe(400);
    const p = await problem(long);
    expect(p).toMatchObject({ type: "urn:sluice:problem:key-too-long", maxKeyLength: 512 });
    expect(p.detail).toBe("`key` must be at most 512 bytes (got 513 bytes)");
    // Counted in UTF-8 bytes: 171 three-byte characters are 513 bytes.
    expect((await post(s, JSON.stringify({ rule: "api", key: "€".repeat(171) }))).status).toBe(400);
    const batch = await post(
      s,
      JSON.stringify([
        { rule: "api", key: "ok" },
        { rule: "api", key: "k".repeat(600) },
      ]),
    );
    expect(await problem(batch)).toMatchObject({ index: 1, maxKeyLength: 512 });
    expect(await storeKeys(s)).toBe(before);
    expect((await post(s, JSON.stringify({ rule: "api", key: "k".repeat(512) }))).status).toBe(200);
    expect(await storeKeys(s)).toBe(before + 1);
    const small = await serve(["--config", rules, "--max-key-length", "8"]);
    try {
      expect((await post(small, JSON.stringify({ rule: "api", key: "123456789" }))).status).toBe(400);
      expect((await fetch(`${small.url}/v1/forward-auth?rule=api&key=123456789`)).status).toBe(400);
      expect((await post(small, JSON.stringify({ rule: "api", key: "12345678" }))).status).toBe(200);
    } finally {
      await small.stop();
    }
  });

  it("accepts POST bodies only as application/json (415 otherwise)", async () => {
    const body = JSON.stringify({ rule: "api", key: "media" });
    for (const type of [
      "text/plain",
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json; charset=latin1",
      "application/jsonx",
      null,
    ]) {
      const res = await post(s, body, type);
      expect(res.status, String(type)).toBe(415);
      expect(await problem(res)).toMatchObject({ type: "urn:sluice:problem:unsupported-media-type", status: 415 });
      expect(res.headers.get("accept-post")).toBe("application/json");
    }
    for (const type of ["application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8"]) {
      expect((await post(s, body, type)).status, type).toBe(200);
    }
    expect(
      await (await post(s, JSON.stringify({ rule: "api", key: "media" }), "application/json", "/v1/peek")).json(),
    ).toMatchObject({ remaining: 1 }); // 3 of 5 taken, plus the 1 a check would take: the refused bodies counted nothing
  });

  it("sends no CORS headers unless --cors-origin is set, and then answers preflights", async () => {
    const origin = { origin: "https://app.example" };
    const plain = await fetch(`${s.url}/v1/check`, {
      method: "POST",
      headers: { ...origin, "content-type": "application/json" },
      body: JSON.stringify({ rule: "api", key: "cors" }),
    });
    expect([...plain.headers.keys()].filter((h) => h.startsWith("access-control-"))).toEqual([]);
    const noPreflight = await fetch(`${s.url}/v1/check`, {
      method: "OPTIONS",
      headers: { ...origin, "access-control-request-method": "POST" },
    });
    expect(noPreflight.status).toBe(405);
    expect(noPreflight.headers.get("access-control-allow-origin")).toBeNull();

    const preflight = await fetch(`${cors.url}/v1/check`, {
      method: "OPTIONS",
      headers: { ...origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(preflight.headers.get("access-control-allow-methods")).toBe("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("Authorization, Content-Type");
    const actual = await fetch(`${cors.url}/v1/check`, {
      method: "POST",
      headers: { ...origin, "content-type": "application/json" },
      body: JSON.stringify({ rule: "api", key: "cors" }),
    });
    expect(actual.status).toBe(200);
    expect(actual.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(actual.headers.get("vary")).toBe("Origin");
    const stranger = await fetch(`${cors.url}/v1/check`, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
    const strangerGet = await fetch(`${cors.url}/v1/rules`, { headers: { origin: "https://evil.example" } });
    expect(strangerGet.status).toBe(200);
    expect(strangerGet.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("a client that aborts mid-body is not an internal error: nothing logged, the service answers on", async () => {
    const { connect } = await import("node:net");
    const url = new URL(s.url);
    for (let i = 0; i < 5; i++) {
      const socket = connect(Number(url.port), url.hostname);
      socket.on("error", () => undefined);
      socket.write(
        'POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ru',
      );
      await new Promise((r) => setTimeout(r, 20));
      socket.destroy();
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(s.log()).not.toMatch(/error handling/);
    expect((await post(s, JSON.stringify({ rule: "api", key: "after-aborts" }))).status).toBe(200);
  });

  it("keeps a tier or rule named __proto__ / constructor, end to end", async () => {
    const file = tmp.file(
      "proto.yaml",
      `rules:
  __proto__:
    spec: { algorithm: sliding-log, limit: 1, windowMs: 1h }
    tiers:
      __proto__: { algorithm: sliding-log, limit: 2, windowMs: 1h }
      constructor: { algorithm: sliding-log, limit: 3, windowMs: 1h }
      toString: { algorithm: sliding-log, limit: 4, windowMs: 1h }
  constructor: { algorithm: sliding-log, limit: 7, windowMs: 1h }
`,
    );
    const checked = await run(["check-config", file]);
    expect(checked.status).toBe(0);
    expect(checked.stdout).toContain("__proto__ [tier __proto__]");
    expect(checked.stdout).toContain("__proto__ [tier constructor]");
    const p = await serve(["--config", file]);
    try {
      const listed = (await (await fetch(`${p.url}/v1/rules`)).json()) as {
        rules: Array<{ name: string; tiers: Record<string, unknown> }>;
      };
      expect(listed.rules.map((r) => r.name)).toEqual(["__proto__", "constructor"]);
      expect(Object.keys(listed.rules[0]?.tiers ?? {})).toEqual(["__proto__", "constructor", "toString"]);
      const limits = [];
      for (const tier of [undefined, "__proto__", "constructor", "toString"]) {
        const body = { rule: "__proto__", key: "k", ...(tier === undefined ? {} : { tier }) };
        limits.push(((await (await post(p, JSON.stringify(body))).json()) as { limit: number }).limit);
      }
      expect(limits).toEqual([1, 2, 3, 4]);
      const unknown = await post(p, JSON.stringify({ rule: "__proto__", key: "k", tier: "hasOwnProperty" }));
      const refused = (await problem(unknown)) as { type: string; detail: string };
      expect(refused.type).toBe("urn:sluice:problem:unknown-tier");
      // The refusal names no tier the rule has: a caller cannot learn tier names by probing.
      for (const tier of ["constructor", "toString"]) expect(refused.detail).not.toContain(tier);
      const fa = await fetch(`${p.url}/v1/forward-auth?rule=constructor&key=k`);
      expect(fa.headers.get("ratelimit-policy")).toBe('"constructor";q=7;w=3600');
      expect((await post(p, JSON.stringify({ rule: "toString", key: "k" }))).status).toBe(404);
    } finally {
      await p.stop();
    }
  });
});

describe("sluice serve: rules file size limit", () => {
  it("refuses to start on a file over --max-config-bytes, naming the limit", async () => {
    const big = tmp.file(
      "big.yaml",
      `rules:\n  api: { algorithm: sliding-log, limit: 5, windowMs: 1h }\n${"#".repeat(2000)}\n`,
    );
    const r = await run(["serve", "--port", "0", "--config", big, "--max-config-bytes", "1kb"]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^sluice: rules file ".*big\.yaml" is \d+ bytes, more than the limit of 1024 bytes/,
    );
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("on reload, a 30 MB file is refused without reading it, and the service keeps answering", async () => {
    const file = tmp.file("reload.yaml", "rules:\n  api: { algorithm: sliding-log, limit: 5, windowMs: 1h }\n");
    const r = await serve(["--config", file, "--no-watch"]);
    try {
      writeFileSync(
        file,
        `rules:\n  api: { algorithm: sliding-log, limit: 9, windowMs: 1h }\n${"#".repeat(30 * 1024 * 1024)}\n`,
      );
      r.child.kill("SIGHUP");
      await r.waitForLog(/config reload failed \(SIGHUP\): rules file .* more than the limit of 1048576 bytes/);
      const d = await post(r, JSON.stringify({ rule: "api", key: "k" }));
      expect(await d.json()).toMatchObject({ allowed: true, limit: 5 });
      expect(await (await fetch(`${r.url}/healthz`)).json()).toMatchObject({ config: { lastReloadOk: false } });
    } finally {
      await r.stop();
    }
  });
});

describe("sluice serve: start-up failures", () => {
  let busy: Server;
  beforeAll(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  it("a busy port or an address not on this machine: one clear line, exit 1", async () => {
    const port = (busy.address() as { port: number }).port;
    const inUse = await run(["serve", "--config", rules, "--port", String(port)]);
    expect(inUse.status).toBe(1);
    expect(inUse.stderr).toBe(
      `sluice: cannot listen on "127.0.0.1" port ${port}: the port is already in use (EADDRINUSE); see --host and --port\n`,
    );
    // 192.0.2.0/24 is TEST-NET-1: never an address of this machine.
    const foreign = await run(["serve", "--config", rules, "--port", "0", "--host", "192.0.2.1"]);
    expect(foreign.status).toBe(1);
    expect(foreign.stderr).toBe(
      `sluice: cannot listen on "192.0.2.1" port 0: that address is not on this machine (EADDRNOTAVAIL); see --host and --port\n`,
    );
  });

  it("refuses bad --trust-proxy, --proxy-header and --max-config-bytes values as usage errors", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--trust-proxy", "somewhere"], /--trust-proxy must be a hop count or a comma-separated list/],
      [["--proxy-header", "x-client"], /--proxy-header must be one of x-forwarded-for, forwarded, x-real-ip/],
      [["--max-config-bytes", "lots"], /--max-config-bytes must be a size like 1mb/],
      [["--max-key-length", "0"], /--max-key-length must be a positive integer/],
    ];
    for (const [flags, message] of cases) {
      const r = await run(["serve", "--config", rules, "--port", "0", ...flags]);
      expect(r.status, flags.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });

  it("an unreachable --redis: says what it waits for, then why it gave up", async () => {
    const r = await serve(["--config", rules, "--redis", "redis://127.0.0.1:1"]);
    try {
      await r.waitForLog(/sluice: waiting up to 5s for Redis at redis:\/\/127\.0\.0\.1:1/);
      await r.waitForLog(
        /sluice: error: Redis at redis:\/\/127\.0\.0\.1:1 did not answer within 5s \(.*ECONNREFUSED.*\); starting anyway/,
      );
      expect(r.log()).not.toMatch(/\n\s+at /); // no stack
      // It answers by its policy (deny): forward-auth says 503, not 429, and makes up no figures.
      const fa = await fetch(`${r.url}/v1/forward-auth?rule=api&key=k&deny=403`);
      expect(fa.status).toBe(503);
      expect(fa.headers.get("ratelimit-policy")).toBe('"api";q=5;w=3600');
      expect(fa.headers.get("ratelimit")).toBeNull();
      expect(fa.headers.get("retry-after")).toBe("1"); // an outage says when to retry
    } finally {
      await r.stop();
    }
  });
});
