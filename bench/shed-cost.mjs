// What loadShed costs per request, in instructions (load-independent: the machine's other work
// does not move a count): a Fastify and an Express hello-world app, bare, with loadShed (a fixed
// limit never reached: admit, count, release when the response finishes) and, on Fastify,
// with @fastify/under-pressure, each answering requests injected in-process
// (light-my-request: the whole framework path and the response's 'finish', no socket). Each
// variant runs twice under valgrind's callgrind, after the same warm-up, once with no measured
// requests and once with N; the difference of the two totals over N is its cost per request,
// and loadShed's ratio to the bare app is reported. Without sockets the bare request is cheaper
// than over a real connection, so the ratio overstates what loadShed adds to a real request.
//
//   npm run build && node bench/shed-cost.mjs
//
// Env: BENCH_N measured requests (default 4000), BENCH_WARMUP (default 4000), BENCH_FRAMEWORKS
// (default "fastify,express"), BENCH_VARIANTS (default "shed,pressure"; also "headers" (the two
// draft-11 headers as constants from a hook: the floor), "sluice" (rateLimit, a fixed window
// never reached), "peer" (@fastify/rate-limit / express-rate-limit alike); the bare app always runs). `node bench/shed-cost.mjs --run <framework> <variant> <n>` is one
// run without valgrind (what the driver starts under it).
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";

/** The two draft-11 headers sluice sends here, as constants: the floor of any limiter that advertises its limit. */
const FLOOR_HEADERS = [
  ["ratelimit-policy", '"default";q=1000000000;w=3600'],
  ["ratelimit", '"default";r=999999999;t=3600'],
];
const SPEC = { algorithm: "fixed-window", limit: 1_000_000_000, windowMs: 3_600_000 };

const N = Number(process.env.BENCH_N ?? 4000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 4000);
/** Requests in flight at once (as many connections would): 50, as bench/http.mjs. */
const CONCURRENCY = 50;

async function app(framework, variant) {
  if (framework === "express") {
    const { default: express } = await import("express");
    const server = express();
    server.disable("x-powered-by");
    if (variant === "shed") {
      const { loadShed } = await import("../dist/http/express.js");
      server.use(loadShed({ limit: 1_000_000 }));
    } else if (variant === "sluice") {
      const { rateLimit } = await import("../dist/http/express.js");
      server.use(rateLimit({ spec: SPEC }));
    } else if (variant === "peer") {
      const { rateLimit } = await import("express-rate-limit");
      server.use(
        rateLimit({ windowMs: SPEC.windowMs, limit: SPEC.limit, standardHeaders: "draft-8", legacyHeaders: false }),
      );
    } else if (variant === "headers") {
      server.use((_req, res, next) => {
        for (const [name, value] of FLOOR_HEADERS) res.setHeader(name, value);
        next();
      });
    }
    server.get("/", (_req, res) => {
      res.send("ok");
    });
    const { default: inject } = await import("light-my-request");
    return (count) => inject(server, { url: "/" }).then((r) => count(r.statusCode));
  }
  const { default: Fastify } = await import("fastify");
  const server = Fastify();
  if (variant === "shed") {
    const { loadShed } = await import("../dist/http/fastify.js");
    await server.register(loadShed({ limit: 1_000_000 }));
  } else if (variant === "pressure") {
    const { default: underPressure } = await import("@fastify/under-pressure");
    await server.register(underPressure, { maxEventLoopDelay: 1000, maxEventLoopUtilization: 0.98 });
  } else if (variant === "sluice") {
    const { rateLimit } = await import("../dist/http/fastify.js");
    await server.register(rateLimit, { spec: SPEC });
  } else if (variant === "peer") {
    const { default: fastifyRateLimit } = await import("@fastify/rate-limit");
    await server.register(fastifyRateLimit, { max: SPEC.limit, timeWindow: SPEC.windowMs });
  } else if (variant === "headers") {
    server.addHook("onRequest", (_request, reply, done) => {
      for (const [name, value] of FLOOR_HEADERS) reply.header(name, value);
      done();
    });
  }
  server.get("/", async () => "ok");
  await server.ready();
  return (count) => server.inject({ url: "/" }).then((r) => count(r.statusCode));
}

/** `n` requests, CONCURRENCY at a time; every one must be answered 200. */
async function drive(request, n) {
  let ok = 0;
  const count = (status) => {
    if (status === 200) ok++;
  };
  for (let sent = 0; sent < n; ) {
    const batch = [];
    for (let i = 0; i < CONCURRENCY && sent < n; i++, sent++) batch.push(request(count));
    await Promise.all(batch);
  }
  if (ok !== n) throw new Error(`${ok} of ${n} answered 200`);
}

async function run(framework, variant, n) {
  const request = await app(framework, variant);
  await drive(request, WARMUP);
  await drive(request, n);
  // under-pressure's sampling timer would keep the process alive.
  process.exit(0);
}

/** Total instructions of one run under callgrind (main thread: V8's compiler on it too, at the same points each run). */
function instructions(framework, variant, n) {
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
      "--run",
      framework,
      variant,
      String(n),
    ],
    { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, BENCH_WARMUP: String(WARMUP) } },
  );
  // valgrind reports on stderr.
  const out = result.stderr;
  const total = Number(/Collected : (\d+)/.exec(out)?.[1]);
  if (!Number.isFinite(total))
    throw new Error(`${framework} ${variant} ${n}: no count from valgrind\n${out.slice(-2000)}`);
  return total;
}

async function main() {
  const started = loadavg().map((x) => x.toFixed(2));
  console.log(
    `loadShed's cost per request in instructions (callgrind, injected requests, ${WARMUP} warm-up, ${N} measured, ${CONCURRENCY} at a time); load average ${started.join(" ")}`,
  );
  for (const framework of (process.env.BENCH_FRAMEWORKS ?? "fastify,express").split(",")) {
    const all = framework === "fastify" ? ["bare", "shed", "pressure"] : ["bare", "shed"];
    const variants = ["bare", ...(process.env.BENCH_VARIANTS?.split(",") ?? all).filter((v) => v !== "bare")];
    const per = {};
    for (const variant of variants) {
      const base = instructions(framework, variant, 0);
      const full = instructions(framework, variant, N);
      per[variant] = (full - base) / N;
    }
    const label = {
      bare: "bare app",
      shed: "loadShed({ limit: 1e6 })",
      pressure: "@fastify/under-pressure",
      headers: "two constant headers (floor)",
      sluice: "sluice rateLimit",
      peer: framework === "fastify" ? "@fastify/rate-limit" : "express-rate-limit",
    };
    console.log(`${framework}:`);
    for (const variant of variants) {
      const ratio = per[variant] / per.bare;
      const delta = variant === "bare" ? "" : `  ${ratio >= 1 ? "+" : ""}${((ratio - 1) * 100).toFixed(2)}%`;
      console.log(
        `  ${label[variant].padEnd(30)} ${per[variant].toFixed(0).padStart(7)} instructions per request${delta}`,
      );
    }
  }
  console.log(
    `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
}

if (process.argv[2] === "--run") await run(process.argv[3], process.argv[4], Number(process.argv[5]));
else await main();
