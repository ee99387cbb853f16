/**
 * `sluice serve --shed-limit`: the service protects itself with loadShed's shedder (issue 33).
 * Calls in flight are held open from outside with slow bodies on raw sockets, so the count is
 * exact and nothing is timed: past the limit a decision is answered 503 with Retry-After and
 * problem+json (gRPC: UNAVAILABLE), /metrics still passes on its reserve and reports the shed
 * calls, health probes are never shed, and once the held calls end, calls pass again.
 */
import { writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { rlsClient } from "./envoy-client.ts";

const tmp = tempDir();
const rules = join(tmp.dir, "rules.yaml");
const envoy = join(tmp.dir, "envoy.yaml");
const LIMIT = 20;
/** Decisions admitted at once: the limit less the 5 % /metrics keeps (one slot of 20). */
const DECISION_SLOTS = LIMIT - 1;

beforeAll(() => {
  ensureBuilt();
  writeFileSync(rules, "rules:\n  api: { algorithm: fixed-window, limit: 1000, windowMs: 60000 }\n");
  writeFileSync(
    envoy,
    "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 50 }\n",
  );
});
afterAll(() => tmp.cleanup());

function grpcAddress(s: Served): string {
  const m = /envoy grpc\s+(\S+)/.exec(s.stdout());
  if (m === null) throw new Error(`no gRPC address in:\n${s.stdout()}`);
  return m[1] as string;
}

const BODY = JSON.stringify({ rule: "api", key: "held" });

/** A /v1/check whose body has not all arrived: admitted, and in flight until `finish`. */
async function held(url: string): Promise<{ finish(): Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect({ host: hostname, port: Number(port) });
  socket.on("error", () => undefined);
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.write(
    `POST /v1/check HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\nconnection: close\r\n\r\n${BODY.slice(0, 5)}`,
  );
  let text = "";
  socket.on("data", (d: Buffer) => {
    text += d.toString("latin1");
  });
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return {
    finish: async () => {
      socket.write(BODY.slice(5));
      await ended;
      return text.slice(0, text.indexOf("\r\n"));
    },
  };
}

async function check(s: Served): Promise<Response> {
  return fetch(`${s.url}/v1/check`, { method: "POST", headers: { "content-type": "application/json" }, body: BODY });
}

/** Polls until `count` calls are in flight, as the service's own metrics say (its own reserve lets /metrics through). */
async function inFlight(s: Served): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return Number(/^sluice_shed_in_flight\{name="sluice_serve"\} (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}

describe("sluice serve --shed-limit", () => {
  it("sheds decisions past the limit (503 + Retry-After, gRPC UNAVAILABLE); /metrics and probes pass; calls pass again once the held ones end", async () => {
    const s = await serve([
      "--config",
      rules,
      "--grpc-port",
      "0",
      "--envoy-config",
      envoy,
      "--shed-limit",
      String(LIMIT),
    ]);
    const rls = rlsClient(grpcAddress(s));
    try {
      expect((await check(s)).status).toBe(200);
      const holding = [];
      for (let i = 0; i < DECISION_SLOTS; i++) holding.push(await held(s.url));
      // Each held call was admitted before the next was sent (the headers arrived): poll until all are counted.
      while ((await inFlight(s)) < DECISION_SLOTS + 1) await new Promise((r) => setTimeout(r, 20));
      const shed = await check(s);
      expect(shed.status).toBe(503);
      expect(shed.headers.get("retry-after")).toBe("1");
      expect(shed.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(((await shed.json()) as { type: string }).type).toBe("urn:sluice:problem:overloaded");
      expect((await fetch(`${s.url}/v1/status`)).status).toBe(503); // least critical: shed too
      const grpcShed = await rls.ask("app", [{ entries: [["user", "u"]] }]).then(
        () => undefined,
        (e: grpc.ServiceError) => e,
      );
      expect(grpcShed?.code).toBe(14); // UNAVAILABLE
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${s.url}/metrics`)).text();
      expect(metrics).toMatch(/^sluice_shed_limit\{name="sluice_serve"\} 20$/m);
      expect(metrics).toMatch(/^sluice_shed_shed_total\{name="sluice_serve",priority="5"\} 2$/m);
      expect(metrics).toMatch(/^sluice_shed_shed_total\{name="sluice_serve",priority="9"\} 1$/m);
      for (const h of holding) expect(await h.finish()).toBe("HTTP/1.1 200 OK");
      expect((await check(s)).status).toBe(200);
      expect((await rls.ask("app", [{ entries: [["user", "u"]] }])).overall_code).toBe("OK");
      expect(await inFlight(s)).toBe(1); // the /metrics call asking
    } finally {
      rls.close();
      await s.stop();
    }
  }, 60_000);

  it("refuses a bad --shed-limit", async () => {
    const { run } = await import("../cli/helpers.ts");
    const r = await run(["serve", "--config", rules, "--port", "0", "--shed-limit", "lots"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--shed-limit must be a positive integer or "adaptive" \(got "lots"\)/);
  });
});
