// sluice's Express middleware per request in a loop, on real Node objects given an Express app's
// prototypes: an http.IncomingMessage and an http.ServerResponse on a loopback connection's
// server-side socket, made per call as Node's server makes them, their prototypes then set to
// the app's `request` and `response` as Express 5's app.handle does, then the response's
// 'close' emitted as Node emits it after 'finish'. For callgrind: the instructions per call are
// the difference of an N and a 3N run over 2N (start-up and warm-up cancel out). "none" runs the
// same loop without a middleware (the objects' own cost), so each variant less none is what the
// middleware adds; the Express server's own per-request cost (~700,000 instructions counted by
// bench/http-callgrind.mjs) is what it is a share of. Unlike that benchmark, a run takes seconds.
//
//   node bench/express-loop.mjs --callgrind     (BENCH_N, default 20000; BENCH_VARIANTS;
//   BENCH_BASE_DIST=<another build's dist> adds base-<variant> beside each, side by side)
//   variants: none, headers (a middleware setting the two draft-11 headers as constants: the
//   floor), sluice (sluice/express's rateLimit, a fixed window never reached), peer
//   (express-rate-limit, draft-8 headers)
import { spawnSync } from "node:child_process";
import { IncomingMessage, ServerResponse } from "node:http";
import { connect, createServer } from "node:net";
import { loadavg } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const VARIANTS = ["none", "headers", "sluice", "peer"];
const SPEC = { algorithm: "fixed-window", limit: 1_000_000_000, windowMs: 3_600_000 };

async function loop(variant, n) {
  const base = variant.startsWith("base-");
  const what = base ? variant.slice(5) : variant;
  const dist = base ? pathToFileURL(`${process.env.BENCH_BASE_DIST}/`).href : new URL("../dist/", import.meta.url).href;
  const { default: express } = await import("express");
  const app = express();
  const socket = await new Promise((resolve) => {
    const server = createServer((s) => resolve(s));
    server.listen(0, "127.0.0.1", () => connect(server.address().port, "127.0.0.1"));
  });
  let middleware = (_req, _res, next) => next();
  if (what === "sluice") {
    const { rateLimit } = await import(`${dist}http/express.js`);
    middleware = rateLimit({ spec: SPEC });
  } else if (what === "headers") {
    middleware = (_req, res, next) => {
      res.setHeader("RateLimit-Policy", '"default";q=1000000000;w=3600');
      res.setHeader("RateLimit", '"default";r=999999999;t=3600');
      next();
    };
  } else if (what === "peer") {
    const { rateLimit } = await import("express-rate-limit");
    middleware = rateLimit({
      windowMs: 3_600_000,
      limit: 1_000_000_000,
      standardHeaders: "draft-8",
      legacyHeaders: false,
    });
  } else if (what !== "none") throw new Error(`unknown ${what}`);
  let passed = 0;
  const next = () => {
    passed++;
  };
  const one = () => {
    const req = new IncomingMessage(socket);
    req.method = "GET";
    req.url = "/";
    req.headers.host = "127.0.0.1";
    const res = new ServerResponse(req);
    Object.setPrototypeOf(req, app.request);
    Object.setPrototypeOf(res, app.response);
    req.res = res;
    res.req = req;
    middleware(req, res, next);
    res._closed = true;
    res.destroyed = true;
    res.emit("close");
  };
  for (let i = 0; i < 20_000; i++) one();
  // express-rate-limit answers asynchronously: let its promises run between batches.
  for (let i = 0; i < n; i += 100) {
    for (let j = 0; j < 100; j++) one();
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (passed < n) console.log(`${what}: ${passed} passed of ${n + 20_000}`);
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
  const n = Number(process.env.BENCH_N ?? 20_000);
  let chosen = process.env.BENCH_VARIANTS?.split(",") ?? VARIANTS;
  if (process.env.BENCH_BASE_DIST) chosen = chosen.flatMap((v) => (v === "none" ? [v] : [`base-${v}`, v]));
  console.log(
    `Express middleware per request, instructions (callgrind, ${n} and ${3 * n} calls, difference over ${2 * n}); load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  const per = {};
  for (const what of ["none", ...chosen.filter((v) => v !== "none")]) {
    per[what] = (instructions(what, 3 * n) - instructions(what, n)) / (2 * n);
    const added = what === "none" ? "" : `  +${(per[what] - per.none).toFixed(0)} over none`;
    console.log(`  ${what.padEnd(14)} ${per[what].toFixed(0).padStart(7)}${added}`);
  }
} else await loop(process.argv[2] ?? "sluice", Number(process.argv[3] ?? 100_000));
