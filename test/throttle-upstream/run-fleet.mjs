// Runs a fleet of fleet-child.mjs processes against an upstream simulator and sums up what the
// upstream saw (test/throttle-upstream/upstream-fleet.test.ts and bench/throttle-upstream.mjs).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startUpstream } from "../support/upstream-server.mjs";

const CHILD = fileURLToPath(new URL("./fleet-child.mjs", import.meta.url));

function child(args) {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  let text = "";
  proc.stdout.setEncoding("utf8");
  const output = new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => (text += d));
    proc.on("error", reject);
    proc.on("close", (code) =>
      code === 0 ? resolve(text) : reject(new Error(`fleet child exited ${code}:\n${text}`)),
    );
  });
  return new Promise((resolve) => {
    const ready = () => (text.includes("ready\n") ? resolve({ proc, output }) : proc.stdout.once("data", ready));
    proc.stdout.once("data", ready);
  });
}

/**
 * `processes` children of `mode` each send `jobs` requests to a fresh upstream admitting `limit`
 * a window of `windowMs` (headers of `header`). Returns what the callers got and what the
 * upstream saw: requests, 429s, windows that saw a 429, the most 429s of one window, how many ms
 * after its window's first 429 each later one arrived, elapsed ms.
 */
export async function runFleet({
  mode,
  redisUrl,
  prefix,
  processes = 4,
  jobs,
  options = {},
  limit,
  windowMs = 1000,
  header = "retry-after",
}) {
  const upstream = await startUpstream({ limit, windowMs, mode: header });
  try {
    const children = await Promise.all(
      // One prefix (bottleneck: one id) for every process: one fleet.
      Array.from({ length: processes }, () =>
        child([mode, redisUrl, prefix, upstream.url, String(jobs), JSON.stringify(options)]),
      ),
    );
    const began = Date.now();
    for (const c of children) c.proc.stdin.end("go\n");
    const outputs = await Promise.all(children.map((c) => c.output));
    const elapsedMs = Date.now() - began;
    const done = outputs.map((o) =>
      JSON.parse(
        o
          .split("\n")
          .find((l) => l.startsWith("D "))
          .slice(2),
      ),
    );
    const per = new Map();
    for (const e of upstream.log) if (e.status === 429) per.set(e.window, (per.get(e.window) ?? 0) + 1);
    const tooMany = [...per.values()];
    // Each 429 after its window's first: how many ms after that first one it reached the upstream
    // (sent before the fleet could hear the first, or not).
    const first = new Map();
    const after429Ms = [];
    for (const e of upstream.log) {
      if (e.status !== 429) continue;
      if (!first.has(e.window)) first.set(e.window, e.at);
      else after429Ms.push(e.at - first.get(e.window));
    }
    return {
      statuses: done.flatMap((d) => d.statuses),
      pauses: done.reduce((s, d) => s + d.pauses, 0),
      sentPaused: done.reduce((s, d) => s + (d.sentPaused ?? 0), 0),
      heard: Object.fromEntries(done.map((d) => [String(d.pid), d.heard ?? []])),
      requests: upstream.log.length,
      ok: upstream.log.filter((e) => e.status === 200).length,
      tooMany: tooMany.reduce((s, n) => s + n, 0),
      windowsWith429: tooMany.length,
      most429InAWindow: Math.max(0, ...tooMany),
      after429Ms,
      elapsedMs,
      log: upstream.log,
    };
  } finally {
    await upstream.close();
  }
}
