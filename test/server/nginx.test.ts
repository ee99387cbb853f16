/**
 * The README's nginx recipe, run as written in a real nginx (Debian's `nginx`, started in the
 * foreground on loopback, everything in a temp dir): the only changes are the addresses, which
 * point at this test's sluice, upstream app and nginx ports.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";
import { leastSecondsLeft, stopwatch } from "../support/elapsed.ts";
import { freePort } from "../support/net.ts";
import { accepting, call, readmeBlock, stop } from "../support/proxies.ts";

const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
if (NGINX === undefined) {
  // .ci/run installs it: under CI a missing binary is a failure, never a silent skip.
  if (process.env.CI) throw new Error("nginx is missing under CI: .ci/run should have installed it");
  console.warn("nginx tests skipped: nginx is not installed (.ci/run installs it)");
}

const tmp = tempDir();
let sluice: Served;
let app: Server;
let nginx: ChildProcess;
let port: number;
let nginxLog = "";
const seen: string[] = [];

describe.skipIf(NGINX === undefined)("the README's nginx recipe, in a real nginx", () => {
  beforeAll(async () => {
    ensureBuilt();
    const rules = tmp.file("rules.yaml", "rules:\n  api: { algorithm: sliding-log, limit: 3, windowMs: 1h }\n");
    sluice = await serve(["--config", rules, "--trust-proxy", "127.0.0.1"]);
    app = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(req.url === "/forbidden" ? 403 : 200, { "content-type": "text/plain" });
      res.end(req.url === "/forbidden" ? "the app says no\n" : "hello from the app\n");
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const appPort = (app.address() as { port: number }).port;
    port = await freePort();
    const sluicePort = new URL(sluice.url).port;
    const text = readmeBlock("<!-- nginx recipe:", "nginx");
    expect(text).toContain("server 127.0.0.1:8080;");
    expect(text).toContain("server 127.0.0.1:3000;");
    expect(text).toContain("listen 80;");
    const server = text
      .replace("server 127.0.0.1:8080;", `server 127.0.0.1:${sluicePort};`)
      .replace("server 127.0.0.1:3000;", `server 127.0.0.1:${appPort};`)
      .replace("listen 80;", `listen 127.0.0.1:${port};`);
    const dir = tmp.dir;
    // Everything nginx writes goes to the temp dir (Debian's build defaults point at /var).
    const conf = tmp.file(
      "nginx.conf",
      `worker_processes 1;
events { worker_connections 64; }
http {
  access_log ${join(dir, "access.log")};
  client_body_temp_path ${join(dir, "body")};
  proxy_temp_path ${join(dir, "proxy")};
  fastcgi_temp_path ${join(dir, "fastcgi")};
  uwsgi_temp_path ${join(dir, "uwsgi")};
  scgi_temp_path ${join(dir, "scgi")};
${server}
}
`,
    );
    nginx = spawn(
      NGINX as string,
      [
        "-p",
        dir,
        "-c",
        conf,
        "-g",
        `daemon off; pid ${join(dir, "nginx.pid")}; error_log ${join(dir, "error.log")} info;`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    nginx.stdout?.setEncoding("utf8").on("data", (d: string) => (nginxLog += d));
    nginx.stderr?.setEncoding("utf8").on("data", (d: string) => (nginxLog += d));
    try {
      await accepting(port, nginx);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${nginxLog}\n${readFileSync(join(dir, "error.log"), "utf8")}`);
    }
  });
  afterAll(async () => {
    await stop(nginx);
    await sluice?.stop();
    await new Promise((resolve) => (app ? app.close(resolve) : resolve(undefined)));
    tmp.cleanup();
  });

  it("passes allowed requests with RateLimit headers, then answers 429 with Retry-After", async () => {
    const first = await call(port, "GET", "/");
    expect(first.status).toBe(200);
    expect(first.body).toBe("hello from the app\n");
    expect(first.headers["ratelimit-policy"]).toBe('"api";q=3;w=3600');
    expect(first.headers.ratelimit).toBe('"api";r=2;t=3600');
    // The app's own 403 reaches the client as a 403: only sluice's denial becomes a 429.
    const forbidden = await call(port, "GET", "/forbidden");
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toBe("the app says no\n");
    // A POST is checked too (the auth subrequest is sent as a GET without the body).
    const sincePosted = stopwatch();
    const posted = await call(port, "POST", "/orders", { "content-type": "application/json" });
    expect(posted.status).toBe(200);
    expect(posted.headers.ratelimit).toBe('"api";r=0;t=3600');

    const denied = await call(port, "GET", "/");
    const posted2denied = sincePosted();
    expect(denied.status).toBe(429);
    const retry = Number(denied.headers["retry-after"]);
    expect(retry).toBeGreaterThan(3500);
    expect(retry).toBeLessThanOrEqual(3600);
    // t= counts down from the newest entry (the POST): exactly 3600 on a fast run, less by the
    // seconds a loaded machine spent since.
    const t = Number(/^"api";r=0;t=(\d+)$/.exec(String(denied.headers.ratelimit))?.[1]);
    expect(t, String(denied.headers.ratelimit)).toBeGreaterThanOrEqual(leastSecondsLeft(3_600_000, posted2denied));
    expect(t).toBeLessThanOrEqual(3600);
    expect(denied.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(denied.body)).toMatchObject({ status: 429 });
    // The denied request never reached the app.
    expect(seen).toEqual(["GET /", "GET /forbidden", "POST /orders"]);
  });

  it("keys by the client address nginx saw, not by a forged X-Forwarded-For", async () => {
    const forged = await call(port, "GET", "/", { "x-forwarded-for": "203.0.113.50" });
    expect(forged.status).toBe(429);
    const peek = await fetch(`${sluice.url}/v1/peek`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rule: "api", key: "203.0.113.50" }),
    });
    expect(await peek.json()).toMatchObject({ remaining: 2 });
  });
});
