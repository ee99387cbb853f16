/**
 * The gRPC door under the HTTP door's rules, against the real bin: the bearer token as metadata,
 * the descriptor/entry/message bounds (refused before any work, /healthz answering meanwhile),
 * the health service, RateLimit-* response headers, TLS and mTLS with certificates made here.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { type ClientOptions, encodeRequest, type RlsClient, rlsClient, type TestDescriptor } from "./envoy-client.ts";
import { makePki, type TestPki } from "./tls-certs.ts";

const tmp = tempDir();
const config = join(tmp.dir, "envoy");
let pki: TestPki;
const clients: RlsClient[] = [];

beforeAll(() => {
  ensureBuilt();
  mkdirSync(config);
  writeFileSync(
    join(config, "app.yaml"),
    "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n",
  );
  pki = makePki(tmp.dir);
});
afterAll(() => {
  for (const c of clients) c.close();
  tmp.cleanup();
});

function grpcAddress(s: Served): string {
  const m = /envoy grpc\s+(\S+)/.exec(s.stdout());
  if (m === null) throw new Error(`no gRPC address in:\n${s.stdout()}`);
  return m[1] as string;
}

function client(s: Served, options: ClientOptions = {}, host?: string): RlsClient {
  const address = grpcAddress(s);
  const c = rlsClient(host === undefined ? address : address.replace(/^[^:]+/, host), options);
  clients.push(c);
  return c;
}

async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error("expected the call to be refused");
}

const user = (name: string): TestDescriptor[] => [{ entries: [["user", name]] }];

describe("gRPC bearer token", () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(["--grpc-port", "0", "--envoy-config", config], { SLUICE_TOKEN: "s3cret" });
  });
  afterAll(() => s?.stop());

  it("answers UNAUTHENTICATED without the token or with a wrong one, and spends nothing", async () => {
    const none = await refusal(client(s).ask("app", user("victim")));
    expect(none.code).toBe(grpcStatus.UNAUTHENTICATED);
    expect(none.details).toBe("this service needs `authorization: Bearer <token>` metadata");
    for (let i = 0; i < 10; i++) {
      const wrong = await refusal(client(s, { token: "guess" }).ask("app", user("victim")));
      expect(wrong.code).toBe(grpcStatus.UNAUTHENTICATED);
      expect(wrong.details).toBe("the bearer token is not valid");
    }
    // The victim's descriptor is untouched: the first authorised call sees 4 of 5 left.
    const right = await client(s, { token: "s3cret" }).ask("app", user("victim"));
    expect(right.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 4 });
  });

  it("leaves the health service open (probes send no credentials)", async () => {
    expect(await client(s).health()).toBe("SERVING");
  });
});

describe("gRPC request bounds", () => {
  let s: Served;
  let c: RlsClient;
  beforeAll(async () => {
    s = await serve(["--grpc-port", "0", "--envoy-config", config, "--grpc-max-message", "8mb"]);
    c = client(s);
  });
  afterAll(() => s?.stop());

  it("refuses more descriptors than --max-descriptors with RESOURCE_EXHAUSTED, counting none", async () => {
    const many = Array.from({ length: 1001 }, () => ({ entries: [["user", "bulk"]] as Array<[string, string]> }));
    const e = await refusal(c.ask("app", many));
    expect(e.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    expect(e.details).toBe("the request has more than 1000 descriptors (the service's bound per request)");
    // 1000 pass the bound (and are decided as one batch: over the limit of 5, so none is spent).
    const ok = await c.ask("app", many.slice(0, 1000));
    expect(ok.overall_code).toBe("OVER_LIMIT");
    expect((await c.ask("app", user("bulk"))).statuses[0]).toMatchObject({ code: "OK", limit_remaining: 4 });
  });

  it("refuses a descriptor of more than --max-entries entries", async () => {
    const entries = Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"] as [string, string]);
    const e = await refusal(c.ask("app", [{ entries }]));
    expect(e.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    expect(e.details).toBe("a descriptor has more than 64 entries (the service's bound per descriptor)");
    const fine = await c.ask("app", [{ entries: entries.slice(0, 64) }]);
    expect(fine.overall_code).toBe("OK");
  });

  it("refuses 100,000 descriptors once past the bound (the rest never decoded), /healthz answering under 300 ms meanwhile (one probe may wait on the test side)", async () => {
    const bytes = encodeRequest(
      "app",
      Array.from({ length: 100_000 }, (_, i) => ({ entries: [["user", `u${i}`]] as Array<[string, string]> })),
    );
    expect(bytes.length).toBeLessThan(8 * 1024 * 1024);
    // Warm both sides first (fetch's first use and the gRPC connection), so the probes time /healthz alone.
    await (await fetch(`${s.url}/healthz`)).arrayBuffer();
    await c.ask("app", user("warm"));
    let settled = false;
    const call = refusal(c.askBytes(bytes)).finally(() => (settled = true));
    const probes: number[] = [];
    while (!settled || probes.length < 3) {
      const started = performance.now();
      const res = await fetch(`${s.url}/healthz`);
      await res.arrayBuffer();
      probes.push(performance.now() - started);
      expect(res.status).toBe(200);
    }
    const e = await call;
    expect(e.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    // Timed from this process, which also sends the 8 MB request: on a loaded machine one probe
    // can wait on this side. A server that decoded the whole request would hold its loop for
    // seconds (2-4.5 s before the bound): at most one probe past 300 ms, none near a second.
    const seen = `healthz latencies ${probes.map((p) => p.toFixed(0)).join(",")} ms`;
    expect(probes.filter((p) => p >= 300).length, seen).toBeLessThanOrEqual(1);
    expect(Math.max(...probes), seen).toBeLessThan(1_000);
  });

  it("refuses a message past --grpc-max-message", async () => {
    const small = await serve(["--grpc-port", "0", "--envoy-config", config, "--grpc-max-message", "4kb"]);
    try {
      const e = await refusal(client(small).ask("app", [{ entries: [["user", "x".repeat(5000)]] }]));
      expect(e.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
      expect((await client(small).ask("app", user("small"))).overall_code).toBe("OK");
    } finally {
      await small.stop();
    }
  });
});

describe("gRPC health and response headers", () => {
  it("health: SERVING, NOT_FOUND for another service, NOT_SERVING while the envoy config failed", async () => {
    const dir = join(tmp.dir, "health");
    mkdirSync(dir);
    const file = join(dir, "h.yaml");
    writeFileSync(file, "domain: h\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n");
    const s = await serve(["--grpc-port", "0", "--envoy-config", dir]);
    try {
      const c = client(s);
      expect(await c.health()).toBe("SERVING");
      expect(await c.health("envoy.service.ratelimit.v3.RateLimitService")).toBe("SERVING");
      expect((await refusal(c.health("nope"))).code).toBe(grpcStatus.NOT_FOUND);
      writeFileSync(file, "domain: h\ndescriptors:\n  - key: k\n    bogus: 1\n");
      s.child.kill("SIGHUP");
      await s.waitForLog(/envoy config reload failed \(SIGHUP\)/);
      expect(await c.health()).toBe("NOT_SERVING");
      writeFileSync(
        file,
        "domain: h\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 1 }\n",
      );
      s.child.kill("SIGHUP");
      await s.waitForLog(/envoy config reloaded \(SIGHUP\)/);
      expect(await c.health()).toBe("SERVING");
    } finally {
      await s.stop();
    }
  });

  it("--envoy-response-headers: RateLimit-Limit/Remaining/Reset of the descriptor nearest its limit", async () => {
    const s = await serve(["--grpc-port", "0", "--envoy-config", config, "--envoy-response-headers"]);
    const plain = await serve(["--grpc-port", "0", "--envoy-config", config]);
    try {
      const c = client(s);
      await c.ask("app", user("h1"));
      const r = await c.ask("app", [...user("h2"), ...user("h1"), { entries: [["other", "x"]] }]);
      const headers = Object.fromEntries((r.response_headers_to_add ?? []).map((h) => [h.key, h.value]));
      expect(Object.keys(headers)).toEqual(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]);
      expect(headers["RateLimit-Limit"]).toBe("5");
      expect(headers["RateLimit-Remaining"]).toBe("3"); // h1: its second hit
      const reset = Number(headers["RateLimit-Reset"]);
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(3600);
      // Without the flag: none, as envoyproxy/ratelimit without LIMIT_RESPONSE_HEADERS_ENABLED.
      expect((await client(plain).ask("app", user("h1"))).response_headers_to_add).toEqual([]);
    } finally {
      await Promise.all([s.stop(), plain.stop()]);
    }
  });
});

describe("gRPC over TLS and mTLS", () => {
  it("TLS: a client trusting the CA is answered; a plaintext client is not", async () => {
    const s = await serve([
      "--grpc-port",
      "0",
      "--envoy-config",
      config,
      "--grpc-tls-cert",
      pki.serverCertPath,
      "--grpc-tls-key",
      pki.serverKeyPath,
    ]);
    try {
      const ok = await client(s, { tls: { ca: pki.ca } }).ask("app", user("tls"));
      expect(ok.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 4 });
      expect((await client(s, { tls: { ca: pki.ca } }, "localhost").ask("app", user("tls"))).overall_code).toBe("OK");
      const plain = await refusal(client(s).ask("app", user("tls")));
      expect(plain.code).toBe(grpcStatus.UNAVAILABLE);
    } finally {
      await s.stop();
    }
  });

  it("mTLS: only a client certificate signed by --grpc-tls-ca is answered", async () => {
    const s = await serve([
      "--grpc-port",
      "0",
      "--envoy-config",
      config,
      "--grpc-tls-cert",
      pki.serverCertPath,
      "--grpc-tls-key",
      pki.serverKeyPath,
      "--grpc-tls-ca",
      pki.caPath,
    ]);
    try {
      const ok = await client(s, { tls: { ca: pki.ca, ...pki.client } }).ask("app", user("mtls"));
      expect(ok.overall_code).toBe("OK");
      const anonymous = await refusal(client(s, { tls: { ca: pki.ca } }).ask("app", user("mtls")));
      expect(anonymous.code).toBe(grpcStatus.UNAVAILABLE);
      const stranger = await refusal(
        client(s, { tls: { ca: pki.ca, cert: pki.stranger.cert, key: pki.stranger.key } }).ask("app", user("mtls")),
      );
      expect(stranger.code).toBe(grpcStatus.UNAVAILABLE);
      // Neither refused client spent anything.
      expect(
        (await client(s, { tls: { ca: pki.ca, ...pki.client } }).ask("app", user("mtls"))).statuses[0],
      ).toMatchObject({
        limit_remaining: 3,
      });
    } finally {
      await s.stop();
    }
  });
});
