// Memory of `sluice serve` on a rules file of many rules, each called (docs/operations.md,
// "Sizing"): starts the bin with RULES fixed-window rules, checks every rule once allowed and
// once denied (1,000 checks a batch, the default --max-batch), then reports RSS before and after, the peak, and the size
// of one /v1/status and one /metrics answer. Each rule tier that sees traffic holds its totals;
// its status-page details (per-second figures, a sketch of denied keys) are kept for at most
// 1,000 tiers, and /metrics names at most --max-metric-series rules.
// Run: npm run build && node bench/serve-rules-memory.mjs   Env: RULES (default 10000)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const N = Number(process.env.RULES ?? 10_000);
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-rules-mem-"));
const config = join(dir, "rules.yaml");
let text = "rules:\n";
for (let i = 0; i < N; i++) text += `  r${i}: { algorithm: fixed-window, limit: 1, windowMs: 1h }\n`;
writeFileSync(config, text);

const args = [join(ROOT, "dist/cli/main.js"), "serve", "--config", config, "--port", "0", "--no-watch"];
args.push("--max-config-bytes", "16mb");
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
// A failed run must not leave the service running.
process.on("exit", () => child.kill("SIGKILL"));
const url = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d) => {
    out += d;
    const m = /listening on (http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
  child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
});
const kb = (field) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))[1]);
const before = kb("VmRSS");
for (let round = 0; round < 2; round++) {
  for (let i = 0; i < N; i += 1000) {
    const body = JSON.stringify(
      Array.from({ length: Math.min(1000, N - i) }, (_, j) => ({ rule: `r${i + j}`, key: "k" })),
    );
    const res = await fetch(`${url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    if (res.status !== 200) throw new Error(`check answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
}
const status = await (await fetch(`${url}/v1/status`)).text();
const metrics = await (await fetch(`${url}/metrics`)).text();
const after = kb("VmRSS");
const peak = kb("VmHWM");
child.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });
const mb = (k) => Math.round(k / 1024);
console.table([
  {
    rules: N,
    "RSS before traffic MB": mb(before),
    "RSS after MB": mb(after),
    "peak MB": mb(peak),
    "/v1/status KB": Math.round(status.length / 1000),
    "/metrics KB": Math.round(metrics.length / 1000),
  },
]);
