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

/**
 * An open-loop load: `rate` requests a second at even intervals for `seconds`, whatever the
 * answers (autocannon's `overallRate` sends each connection's quota at the start of every
 * second: bursts, not a rate). Each request gives up after `timeoutMs` (its socket destroyed,
 * as a client that stops waiting). Resolves like {@link drive}: 2xx latencies and counts by status,
 * and `split`: each 2xx answer's latency, when it was sent (ms from the start) and the server's
 * x-wait / x-hold headers (ms queued for a slot, holding it).
 */
export async function openLoop(url, { rate, seconds, timeoutMs = 2000, headers = {} }) {
  const { Agent, request } = await import("node:http");
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const ok = [];
  const split = [];
  const statuses = {};
  let timeouts = 0;
  let errors = 0;
  const pending = new Set();
  const one = () =>
    new Promise((resolve) => {
      const start = performance.now();
      const req = request(url, { agent, headers, timeout: timeoutMs }, (res) => {
        res.resume();
        res.on("end", () => {
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          if (res.statusCode >= 200 && res.statusCode < 300) {
            const ms = performance.now() - start;
            ok.push(ms);
            split.push({
              ms,
              at: start - begin,
              wait: Number(res.headers["x-wait"] ?? 0),
              hold: Number(res.headers["x-hold"] ?? 0),
            });
          }
          resolve();
        });
      });
      req.on("timeout", () => {
        timeouts++;
        req.destroy();
      });
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end();
    });
  const begin = performance.now();
  let sent = 0;
  const total = Math.round(rate * seconds);
  await new Promise((done) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - begin) / 1000) * rate));
      for (; sent < due; sent++) {
        const p = one();
        pending.add(p);
        void p.then(() => pending.delete(p));
      }
      if (sent >= total) {
        clearInterval(tick);
        done();
      }
    }, 2);
  });
  await Promise.all(pending);
  agent.destroy();
  return { ok, split, statuses, sent, timeouts, errors: errors - timeouts };
}
