// Which gRPC stack answers Envoy's ShouldRateLimit cheapest: server CPU per check (the server's
// own process.cpuUsage() over a fixed number of calls, driven from this process) of
// @grpc/grpc-js, @connectrpc/connect-node + @bufbuild/protobuf, and sluice's own unary gRPC on
// node:http2, all in one server process on the same Envoy state and decide function, beside the
// JSON API's /v1/check doing the same checks. Rounds interleave the four so background load hits
// all alike; the median round is reported. One descriptor per call, and five (JSON: a batch of 5).
//
// Run: npm run build && node bench/grpc-servers.mjs
// Env: BENCH_CALLS per round (default 20000), BENCH_ROUNDS (default 3), BENCH_INFLIGHT (default 32),
//      BENCH_STACKS (default grpc-js,connect,sluice)
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { grpcCalls, jsonCalls, rlsClient, serverCpuUs } from "./grpc-load.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = Number(process.env.BENCH_INFLIGHT ?? 32);
const dir = mkdtempSync(join(tmpdir(), "sluice-bench-grpc-"));
const config = join(dir, "rules.yaml");
writeFileSync(config, "rules:\n  api: { algorithm: fixed-window, limit: 1000000000, windowMs: 1m }\n");
const envoyConfig = join(dir, "envoy.yaml");
writeFileSync(
  envoyConfig,
  "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 1000000000 }\n",
);

const child = spawn(process.execPath, [join(ROOT, "bench/grpc-alt-servers.mjs"), config, envoyConfig], {
  stdio: ["ignore", "pipe", "inherit", "ipc"],
});
const addresses = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d) => {
    out += d;
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (line !== undefined && out.includes("\n")) resolve(JSON.parse(line));
  });
  child.on("exit", (code) => reject(new Error(`server exited with ${code}`)));
});

const proto = join(ROOT, "dist/server/envoy/ratelimit.proto");
const rls = (n) => ({
  domain: "bench",
  descriptors: Array.from({ length: n }, (_, i) => ({ entries: [{ key: "user", value: `bench-${i}` }] })),
});
const json = (n) =>
  n === 1
    ? JSON.stringify({ rule: "api", key: "bench-0" })
    : JSON.stringify(Array.from({ length: n }, (_, i) => ({ rule: "api", key: `bench-${i}` })));
const stacks = (process.env.BENCH_STACKS ?? "grpc-js,connect,sluice").split(",");
const clients = Object.fromEntries(stacks.map((s) => [s, rlsClient(addresses[s], proto)]));

const rows = [];
for (const n of [1, 5]) {
  const loads = {
    "JSON /v1/check": () => jsonCalls(addresses.http, json(n), IN_FLIGHT, CALLS),
    ...Object.fromEntries(stacks.map((s) => [s, () => grpcCalls(clients[s], rls(n), IN_FLIGHT, CALLS)])),
  };
  for (const load of Object.values(loads)) await load(); // warm-up: JIT, connections
  const per = Object.fromEntries(Object.keys(loads).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, load] of Object.entries(loads)) {
      const before = await serverCpuUs(child);
      await load();
      per[name].push(((await serverCpuUs(child)) - before) / (CALLS * n));
    }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const jsonUs = median(per["JSON /v1/check"]);
  for (const [name, xs] of Object.entries(per))
    rows.push({
      checks: n === 1 ? "1 per call" : `${n} per call`,
      server: name,
      "µs CPU/check (median)": Number(median(xs).toFixed(1)),
      "÷ JSON": Number((median(xs) / jsonUs).toFixed(2)),
      rounds: xs.map((x) => x.toFixed(1)).join(" "),
    });
}
for (const c of Object.values(clients)) c.close();
child.send("stop");
rmSync(dir, { recursive: true, force: true });
console.log(`server CPU per check, ${CALLS} calls per round, ${IN_FLIGHT} in flight, ${ROUNDS} rounds:`);
console.table(rows);
