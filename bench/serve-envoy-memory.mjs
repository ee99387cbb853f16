// Memory of `sluice serve` on a large Envoy config, for sizing its unit (docs/service.md, "A
// 20,000-descriptor config"): starts the bin with --envoy-config of DESCRIPTORS descriptors
// (a third exact values, a third wildcard values with detailed_metric, a third nested under a
// key-only parent), reports RSS after the load, then drives ShouldRateLimit traffic over every
// descriptor (CALLS calls, each of 10 descriptors with per-user values) and scrapes /metrics and
// /v1/status meanwhile, and reports the peak RSS (VmHWM) and the size of each scrape.
//
// Run: npm run build && node bench/serve-envoy-memory.mjs (NODE_OPTIONS=--max-old-space-size=384
// as docs/operations.md's unit; before /metrics was bounded to --max-metric-series paths, its
// 5.3 MB scrapes were garbage that took the peak to 593-722 MB without that cap, 286-295 MB now)
// Env: DESCRIPTORS (default 20000), CALLS (default 20000), USERS (default 5000), MAX_KEYS (the
// service's --max-keys, default 200000: what traffic may hold in the store is bounded there)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { rlsClient } from "./grpc-load.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const N = Number(process.env.DESCRIPTORS ?? 20_000);
const CALLS = Number(process.env.CALLS ?? 20_000);
const USERS = Number(process.env.USERS ?? 5000);
const MAX_KEYS = Number(process.env.MAX_KEYS ?? 200_000);
const third = Math.floor(N / 3);
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-envoy-mem-"));
const config = join(dir, "envoy.yaml");

let text = "domain: big\ndescriptors:\n";
for (let i = 0; i < third; i++)
  text += `  - key: path\n    value: "/api/v${i}"\n    rate_limit: { unit: minute, requests_per_unit: ${1000 + i} }\n`;
for (let i = 0; i < third; i++)
  text += `  - key: file\n    value: "/files/${i}/*"\n    detailed_metric: true\n    rate_limit: { unit: hour, requests_per_unit: ${1000 + i} }\n`;
text += "  - key: tenant\n    descriptors:\n";
for (let i = 0; i < N - 2 * third; i++)
  text += `      - key: plan\n        value: "p${i}"\n        rate_limit: { unit: second, requests_per_unit: ${1000 + i} }\n`;
writeFileSync(config, text);

const status = (pid) => readFileSync(`/proc/${pid}/status`, "utf8");
const kb = (pid, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status(pid))[1]) * 1024;
const mb = (bytes) => Math.round(bytes / 1e6);

const started = performance.now();
const args = [join(ROOT, "dist/cli/main.js"), "serve", "--port", "0", "--grpc-port", "0"];
args.push("--envoy-config", config, "--max-config-bytes", "16mb", "--no-watch", "--max-keys", String(MAX_KEYS));
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
const { url, grpc } = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d) => {
    out += d;
    const m = /listening on (http:\/\/\S+)/.exec(out);
    const g = /envoy grpc\s+(\S+)/.exec(out);
    if (m && g) resolve({ url: m[1], grpc: g[1] });
  });
  child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
});
const loadSeconds = (performance.now() - started) / 1000;
const afterLoad = kb(child.pid, "VmRSS");
const peakLoad = kb(child.pid, "VmHWM");

const client = rlsClient(grpc, join(ROOT, "dist/server/envoy/ratelimit.proto"));
const pick = (n) => Math.floor(Math.random() * n);
function descriptor() {
  const user = `u${pick(USERS)}`;
  switch (pick(3)) {
    case 0:
      return { entries: [{ key: "path", value: `/api/v${pick(third)}` }] };
    case 1:
      return { entries: [{ key: "file", value: `/files/${pick(third)}/${user}.png` }] };
    default:
      return {
        entries: [
          { key: "tenant", value: user },
          { key: "plan", value: `p${pick(N - 2 * third)}` },
        ],
      };
  }
}
const scrapes = { metrics: 0, status: 0 };
let sent = 0;
let errors = 0;
const call = () =>
  new Promise((resolve) => {
    const request = { domain: "big", descriptors: Array.from({ length: 10 }, descriptor) };
    client.ShouldRateLimit(request, (err) => {
      if (err !== null) errors++;
      resolve();
    });
  });
const scraper = (async () => {
  while (sent < CALLS) {
    const m = await (await fetch(`${url}/metrics`)).text();
    const s = await (await fetch(`${url}/v1/status`)).text();
    scrapes.metrics = Math.max(scrapes.metrics, m.length);
    scrapes.status = Math.max(scrapes.status, s.length);
    await new Promise((r) => setTimeout(r, 500));
  }
})();
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (sent < CALLS) {
      sent++;
      await call();
    }
  }),
);
await scraper;
const afterTraffic = kb(child.pid, "VmRSS");
const peak = kb(child.pid, "VmHWM");
client.close();
child.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });
console.table([
  {
    descriptors: N,
    "config MB": Math.round((text.length / 1e6) * 10) / 10,
    "load s": Math.round(loadSeconds * 10) / 10,
    "RSS after load MB": mb(afterLoad),
    "peak during load MB": mb(peakLoad),
    calls: CALLS,
    errors,
    "RSS after traffic MB": mb(afterTraffic),
    "peak RSS MB": mb(peak),
    "--max-keys": MAX_KEYS,
    "/metrics KB": Math.round(scrapes.metrics / 1000),
    "/v1/status KB": Math.round(scrapes.status / 1000),
  },
]);
