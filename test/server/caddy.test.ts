/**
 * The README's Caddy recipe, run as written in a real Caddy (Debian's `caddy`, in the
 * foreground on loopback, its state in a temp dir): only the addresses change, and the site
 * is served over plain HTTP on a free port (no certificates, no admin endpoint).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { leastSecondsLeft, stopwatch } from "../support/elapsed.ts";
import { freePort } from "../support/net.ts";
import { accepting, call, readmeBlock, stop } from "../support/proxies.ts";

const CADDY = ["/usr/bin/caddy", "/usr/local/bin/caddy"].find((p) => existsSync(p));
if (CADDY === undefined) {
  // .ci/run installs it: under CI a missing binary is a failure, never a silent skip.
  if (process.env.CI) throw new Error("Caddy is missing under CI: .ci/run should have installed it");
  console.warn("Caddy tests skipped: caddy is not installed (.ci/run installs it)");
}

const TOKEN = "caddy-test-token";
const tmp = tempDir();
let sluice: Served;
let app: Server;
let caddy: ChildProcess;
let port: number;
let caddyLog = "";
const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];

describe.skipIf(CADDY === undefined)("the README's Caddy recipe, in a real Caddy", () => {
  beforeAll(async () => {
    ensureBuilt();
    const rules = tmp.file("rules.yaml", "rules:\n  api: { algorithm: sliding-log, limit: 2, windowMs: 1h }\n");
    sluice = await serve(["--config", rules, "--trust-proxy", "127.0.0.1"], { SLUICE_TOKEN: TOKEN });
    app = createServer((req, res) => {
      seen.push({ url: req.url ?? "", headers: req.headers });
      res.end("hello from the app\n");
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const appPort = (app.address() as { port: number }).port;
    port = await freePort();
    const text = readmeBlock("<!-- caddy recipe:", "caddyfile");
    for (const part of ["example.com {", "forward_auth 127.0.0.1:8080 {", "reverse_proxy 127.0.0.1:3000"]) {
      expect(text).toContain(part);
    }
    const site = text
      .replace("example.com {", `http://127.0.0.1:${port} {`)
      .replace("forward_auth 127.0.0.1:8080 {", `forward_auth 127.0.0.1:${new URL(sluice.url).port} {`)
      .replace("reverse_proxy 127.0.0.1:3000", `reverse_proxy 127.0.0.1:${appPort}`);
    const config = tmp.file("Caddyfile", `{\n\tadmin off\n\tauto_https off\n}\n${site}`);
    caddy = spawn(CADDY as string, ["run", "--config", config, "--adapter", "caddyfile"], {
      env: {
        ...process.env,
        SLUICE_TOKEN: TOKEN,
        HOME: tmp.dir,
        XDG_DATA_HOME: join(tmp.dir, "data"),
        XDG_CONFIG_HOME: join(tmp.dir, "config"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    caddy.stdout?.setEncoding("utf8").on("data", (d: string) => (caddyLog += d));
    caddy.stderr?.setEncoding("utf8").on("data", (d: string) => (caddyLog += d));
    try {
      await accepting(port, caddy);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${caddyLog}`);
    }
  });
  afterAll(async () => {
    await stop(caddy);
    await sluice?.stop();
    await new Promise((resolve) => (app ? app.close(resolve) : resolve(undefined)));
    tmp.cleanup();
  });

  it("passes allowed requests with the headers copied to the app, then returns sluice's 429", async () => {
    const own = { authorization: "Bearer the-clients-own", "x-forwarded-for": "203.0.113.9" };
    const first = await call(port, "GET", "/a", own);
    expect(first.status).toBe(200);
    expect(first.body).toBe("hello from the app\n");
    const sinceSecond = stopwatch();
    const second = await call(port, "POST", "/b", { ...own, "content-type": "application/json" });
    expect(second.status).toBe(200);
    // copy_headers puts the figures on the request the app gets; header_up put the token on
    // the auth request only: the app sees the client's own Authorization.
    expect(seen.map((r) => [r.url, r.headers.ratelimit, r.headers.authorization])).toEqual([
      ["/a", '"api";r=1;t=3600', "Bearer the-clients-own"],
      ["/b", '"api";r=0;t=3600', "Bearer the-clients-own"],
    ]);

    const denied = await call(port, "GET", "/c", own);
    const second2denied = sinceSecond();
    expect(denied.status).toBe(429);
    const retry = Number(denied.headers["retry-after"]);
    expect(retry).toBeGreaterThan(3500);
    expect(retry).toBeLessThanOrEqual(3600);
    // t= counts down from the newest entry (/b): exactly 3600 on a fast run, less by the seconds
    // a loaded machine spent since.
    const t = Number(/^"api";r=0;t=(\d+)$/.exec(String(denied.headers.ratelimit))?.[1]);
    expect(t, String(denied.headers.ratelimit)).toBeGreaterThanOrEqual(leastSecondsLeft(3_600_000, second2denied));
    expect(t).toBeLessThanOrEqual(3600);
    expect(JSON.parse(denied.body)).toMatchObject({ status: 429, "violated-policies": ["api"] });
    expect(seen).toHaveLength(2);
    // Keyed by the address Caddy saw (127.0.0.1), not the X-Forwarded-For the client forged.
    const peek = await fetch(`${sluice.url}/v1/peek`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify([
        { rule: "api", key: "127.0.0.1" },
        { rule: "api", key: "203.0.113.9" },
      ]),
    });
    expect(((await peek.json()) as Array<{ allowed: boolean }>).map((d) => d.allowed)).toEqual([false, true]);
  });
});
