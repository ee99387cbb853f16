// loadShed's own work per request in a loop, on real Node objects: an http.IncomingMessage and an
// http.ServerResponse on a loopback connection's server-side socket, made per call as Node's
// server makes them, then what Node's server does once the response finished: the
// 'http.server.response.finish' diagnostics channel (when subscribed: loadShed releases there on a
// socket of Node's server, which the loop's socket is marked as), then the response's 'close'. For
// callgrind: the instructions per call are the difference of an N and a 3N run over 2N, so the
// process's start-up and warm-up cancel out; "none" runs the same loop without loadShed (the
// objects' own cost), so each variant's figure less none's is what loadShed adds.
//
//   node bench/shed-loop.mjs [what] [n]
//     what: none, shed (loadShed({ limit: 1e6 }) from sluice/http, Node style), shed-express
//     (the Express middleware, with next), shed-priority (with a priority function), sluice
//     (sluice/http's rateLimit, a fixed window never reached, with its headers); each as
//     base-<what> too: the same from BENCH_BASE_DIST (another build's dist/, e.g. a copy made
//     before a change), side by side in one run
//   for w in none shed; do for n in 100000 300000; do
//     valgrind --tool=callgrind --callgrind-out-file=/dev/null node --single-threaded bench/shed-loop.mjs $w $n 2>&1 | grep Collected
//   done; done
//   or: node bench/shed-loop.mjs --callgrind (runs that and prints the table)
import { spawnSync } from "node:child_process";
import { channel } from "node:diagnostics_channel";
import { IncomingMessage, ServerResponse } from "node:http";
import { connect, createServer } from "node:net";
import { loadavg } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const VARIANTS = ["none", "shed", "shed-express", "shed-priority", "sluice"];
const SPEC = { algorithm: "fixed-window", limit: 1_000_000_000, windowMs: 3_600_000 };

async function loop(variant, n) {
  const base = variant.startsWith("base-");
  const what = base ? variant.slice(5) : variant;
  const dist = base ? pathToFileURL(`${process.env.BENCH_BASE_DIST}/`).href : new URL("../dist/", import.meta.url).href;
  const socket = await new Promise((resolve) => {
    const server = createServer((s) => resolve(s));
    server.listen(0, "127.0.0.1", () => connect(server.address().port, "127.0.0.1"));
  });
  // Node's http server sets its parser on its sockets: loadShed's per-socket release looks for it.
  socket.parser = {};
  const finished = channel("http.server.response.finish");
  let gate = (_req, _res) => true;
  if (what === "shed" || what === "shed-priority") {
    const { loadShed } = await import(`${dist}http/index.js`);
    gate = loadShed(what === "shed" ? { limit: 1_000_000 } : { limit: 1_000_000, priority: () => 3 });
  } else if (what === "shed-express") {
    const { loadShed } = await import(`${dist}http/express.js`);
    const shed = loadShed({ limit: 1_000_000 });
    let passed = false;
    const next = () => {
      passed = true;
    };
    gate = (req, res) => {
      passed = false;
      shed(req, res, next);
      return passed;
    };
  } else if (what === "sluice") {
    const { rateLimit } = await import(`${dist}http/index.js`);
    gate = rateLimit({ spec: SPEC });
  } else if (what !== "none") throw new Error(`unknown ${what}`);
  let sink = 0;
  const one = () => {
    const req = new IncomingMessage(socket);
    req.method = "GET";
    req.url = "/";
    const res = new ServerResponse(req);
    // What assignSocket() does: the response the socket serves.
    socket._httpMessage = res;
    if (gate(req, res) === true) sink++;
    // What Node's server does on 'finish' (resOnFinish), then (emitCloseNT) the response's one 'close'.
    res.finished = true;
    if (finished.hasSubscribers) finished.publish({ request: req, response: res, socket, server: undefined });
    socket._httpMessage = null;
    res._closed = true;
    res.destroyed = true;
    res.emit("close");
  };
  for (let i = 0; i < 20_000; i++) one();
  for (let i = 0; i < n; i++) one();
  if (sink < 0) console.log(sink);
  socket.destroy();
  process.exit(0);
}

function instructions(what, n) {
  const result = spawnSync(
    "valgrind",
    [
      "--tool=callgrind",
      "--callgrind-out-file=/dev/null",
      "--cache-sim=no",
      process.execPath,
      "--single-threaded",
      "--random-seed=7",
      "--hash-seed=7",
      fileURLToPath(import.meta.url),
      what,
      String(n),
    ],
    { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"] },
  );
  const total = Number(/Collected : (\d+)/.exec(result.stderr)?.[1]);
  if (!Number.isFinite(total)) throw new Error(`${what} ${n}: no count\n${result.stderr.slice(-2000)}`);
  return total;
}

if (process.argv[2] === "--callgrind") {
  const n = Number(process.env.BENCH_N ?? 50_000);
  let chosen = process.env.BENCH_VARIANTS?.split(",") ?? VARIANTS;
  if (process.env.BENCH_BASE_DIST) chosen = chosen.flatMap((v) => (v === "none" ? [v] : [`base-${v}`, v]));
  console.log(
    `loadShed per call, instructions (callgrind, ${n} and ${3 * n} calls, difference over ${2 * n}); load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  const per = {};
  for (const what of ["none", ...chosen.filter((v) => v !== "none")]) {
    per[what] = (instructions(what, 3 * n) - instructions(what, n)) / (2 * n);
    const added = what === "none" ? "" : `  +${(per[what] - per.none).toFixed(0)} over none`;
    console.log(`  ${what.padEnd(14)} ${per[what].toFixed(0).padStart(7)}${added}`);
  }
} else await loop(process.argv[2] ?? "shed", Number(process.argv[3] ?? 200_000));
