// Drives a shed-server.mjs: starts it in its own process, runs autocannon against it from this
// one, and reads its stats over IPC. Shared by test/shed/overload.test.ts and bench/shed.mjs.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

const SERVER = fileURLToPath(new URL("./shed-server.mjs", import.meta.url));

/** Starts a server with `config`; resolves with its URL, stats() and stop(). */
export function startShedServer(config) {
  const child = fork(SERVER, [JSON.stringify(config)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const stats = () =>
    new Promise((resolve) => {
      child.once("message", resolve);
      child.send("stats");
    });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`shed server exited with ${code}`)));
    child.once("message", ({ port }) =>
      resolve({
        url: `http://127.0.0.1:${port}`,
        stats,
        stop: () =>
          new Promise((done) => {
            child.removeAllListeners("exit");
            child.once("exit", done);
            child.kill();
          }),
      }),
    );
  });
}

/**
 * Runs autocannon at `url` with `options`; resolves with its result plus the latencies (ms) of
 * the 2xx answers (autocannon's own histogram mixes in the fast 503s) and counts by status.
 */
export function drive(url, options) {
  return new Promise((resolve, reject) => {
    const ok = [];
    const statuses = {};
    const instance = autocannon({ url, ...options }, (error, result) => {
      if (error) reject(error);
      else resolve({ result, ok, statuses });
    });
    instance.on("response", (_client, status, _bytes, ms) => {
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status >= 200 && status < 300) ok.push(ms);
    });
  });
}

/** The `q` quantile (0–1) of `values`. */
export function quantile(values, q) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
