// Memory of `sluice serve` per key held, for sizing `--max-keys`: starts the service (in-process
// store), fills it with N distinct keys through batches of /v1/check, and reports the growth of
// the process's resident memory (VmRSS, Linux) per key, for short and long keys.
//
// Run: npm run build && node bench/serve-memory.mjs
// Env: KEYS (default 1000000), KEY_LENGTHS (default "16,64,512")
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const KEYS = Number(process.env.KEYS ?? 1_000_000);
const LENGTHS = (process.env.KEY_LENGTHS ?? "16,64,512").split(",").map(Number);
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-mem-"));
const config = join(dir, "rules.yaml");
// An hour's window: every key checked stays held (not yet equivalent to a fresh key).
writeFileSync(config, "rules:\n  api: { algorithm: token-bucket, capacity: 100, refillPerSecond: 100/h }\n");

function start() {
  const args = [join(ROOT, "dist/cli/main.js"), "serve", "--config", config, "--port", "0", "--max-body", "4mb"];
  args.push("--max-keys", String(KEYS), "--max-batch", "2000", "--max-key-length", "1024");
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ url: m[1], child });
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;

const rows = [];
for (const length of LENGTHS) {
  const { url, child } = await start();
  try {
    const check = (body) =>
      fetch(`${url}/v1/check`, { method: "POST", headers: { "content-type": "application/json" }, body });
    await check(JSON.stringify({ rule: "api", key: "warm-up" }));
    const before = rss(child.pid);
    const batch = 2000;
    for (let i = 0; i < KEYS; i += batch) {
      const items = [];
      for (let j = i; j < Math.min(KEYS, i + batch); j++)
        items.push({ rule: "api", key: String(j).padStart(length, "k") });
      const res = await check(JSON.stringify(items));
      if (res.status !== 200) throw new Error(`status ${res.status}`);
      await res.arrayBuffer();
    }
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const held = Number(/^sluice_store_keys (\d+)$/m.exec(metrics)[1]);
    const after = rss(child.pid);
    rows.push({
      "key length": length,
      "keys held": held,
      "RSS growth MB": Math.round((after - before) / 1e6),
      "bytes per key": Math.round((after - before) / held),
    });
  } finally {
    child.kill("SIGTERM");
  }
}
rmSync(dir, { recursive: true, force: true });
console.table(rows);
