// HTTP benchmark: the server CPU each request costs in a hello-world Express and Fastify app
// (Koa and NestJS on request), bare, with sluice's middleware (in-process MemoryStore) and with
// the peer middleware (express-rate-limit, @fastify/rate-limit, koa-ratelimit,
// @nestjs/throttler), all configured alike: a fixed window whose limit is never reached, so
// every request is counted and passes with headers; and, in the "all denied" runs, a limit
// spent in the warm-up, so every measured request is refused (429).
//
// Each variant's server is its own process, and reads its own process.cpuUsage() around exactly
// BENCH_REQUESTS requests that autocannon sends from this (separate) process over loopback: CPU
// per request moves much less with background load than throughput does. All variants of a
// framework run at once (idle but for their turn) and are measured block by block, rotating the
// order each round, and each block is compared with the bare app's block of the same round; the
// median of those ratios is reported with its interquartile range.
//
// Run: npm run build && node bench/http.mjs
// Env: BENCH_ROUNDS (default 10), BENCH_REQUESTS per block (default 3000), BENCH_WARMUP per
// server (default 5000), BENCH_CONNECTIONS (default 50), BENCH_FRAMEWORKS (default
// "express,fastify"; also koa, nest), BENCH_SERVER_FLAGS (node flags for the servers),
// BENCH_FLOOR=1 (adds a middleware setting two constant headers: the floor of any limiter
// that advertises its limit, "headers", with the names as the draft writes them; and on Fastify
// "headers-lc", the same names already in lower case, which spares Fastify's `reply.header` a
// new lower-cased string and a string-table lookup per header; Express and Fastify only), BENCH_CALLGRIND=1 (instructions
// instead of CPU time, load-independent; needs valgrind; e.g. BENCH_ROUNDS=2 BENCH_REQUESTS=1000
// BENCH_WARMUP=8000: the optimizing compiler then runs on the main thread, and a short warm-up
// leaves its work in the counted window — 500 requests of warm-up gave 565,000 per Fastify request),
// (Keep 50 connections with callgrind: with 10, Node serves fewer requests per event-loop turn,
// how many depends on timing, and a build was once counted 12% below the bare app.)
// BENCH_CALLGRIND_KEEP=<dir> (keeps the callgrind dumps in a new directory under <dir>, for
// callgrind_annotate; with BENCH_SERVER_FLAGS=--perf-basic-prof, /tmp/perf-<pid>.map names the JIT's code),
// BENCH_BASE_DIST=<dir> (adds "base": sluice's middleware from another build's dist directory,
// e.g. a copy of dist/ made before a change, measured side by side with this build's),
// BENCH_REWARM (unmeasured requests before each block; default 1000 with callgrind, else 0),
// BENCH_VARIANTS (a comma list of the variants to run, default all: bare, sluice, peer,
// sluice:deny, peer:deny, headers with BENCH_FLOOR=1, base with BENCH_BASE_DIST),
// BENCH_SHED=1 (adds loadShed with a fixed limit never reached, "shed", and, on Fastify,
// @fastify/under-pressure with its defaults, "pressure": SPEC §16's overhead goal; and sluice's
// middleware on a concurrency spec, "lease": a slot taken and released per request),
// BENCH_STEPS (Fastify only: adds the bisection steps of bench/fastify-steps.mjs, e.g.
// BENCH_STEPS=s0,s1,s2,s3,s4,s5; list them in BENCH_VARIANTS too when that is set).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const LIMIT = 1_000_000_000;
/** The deny runs' limit: spent in the warm-up, so every measured request is refused. */
const DENY_LIMIT = 100;
const WINDOW_MS = 3_600_000;
/** Requests before the measured ones (JIT warm-up; the deny runs spend their limit). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5_000);
/**
 * The "headers" variant (BENCH_FLOOR=1): a middleware that only sets the two headers sluice
 * sends here, as constants: what any limiter advertising its limit costs in the framework.
 */
const FLOOR_HEADERS = [
  ["RateLimit-Policy", '"default";q=1000000000;w=3600'],
  ["RateLimit", '"default";r=999999999;t=3600'],
];
/**
 * BENCH_CALLGRIND=1: each server runs under valgrind's callgrind, and a block is measured in
 * instructions its main thread executed (JavaScript, V8 and Node, not the kernel) instead of CPU
 * time: a count that other work on the machine does not move. Much slower: use a few rounds.
 */
const CALLGRIND = process.env.BENCH_CALLGRIND === "1";
/** Where the callgrind servers dump their counts (made by the benchmark process, not by the servers). */
const CALLGRIND_DIR =
  CALLGRIND && process.argv[2] !== "--serve"
    ? mkdtempSync(join(process.env.BENCH_CALLGRIND_KEEP ?? tmpdir(), "sluice-bench-http-"))
    : "";
/**
 * Requests sent to a server just before each of its measured blocks, not counted
 * (BENCH_REWARM; default 1,000 with callgrind, else 0). Under callgrind a round takes minutes,
 * and a server measured after the others had sat idle that long: its first block then ran
 * partly in V8's runtime (map migrations, property definitions through the runtime, recompiling),
 * which made the third and fourth variants of a round count up to twice the first's.
 */
const REWARM = Number(process.env.BENCH_REWARM ?? (CALLGRIND ? 1_000 : 0));
/** Extra node flags for the server processes (e.g. BENCH_SERVER_FLAGS=--cpu-prof to profile them). */
const SERVER_FLAGS = (process.env.BENCH_SERVER_FLAGS ?? "").split(" ").filter(Boolean);

/** Where a sluice variant's middleware comes from: this build, or BENCH_BASE_DIST for "base" and "baseshed" (its loadShed). */
const sluiceModule = (limiter, file) =>
  limiter === "base" || limiter === "baseshed"
    ? pathToFileURL(join(process.env.BENCH_BASE_DIST ?? "", file)).href
    : new URL(`../dist/${file}`, import.meta.url).href;

/** The limit of a run: never reached ("pass"), or reached at once so nearly every request is denied ("deny"). */
const limitOf = (mode) => (mode === "deny" ? DENY_LIMIT : LIMIT);

/** The concurrency spec of the "lease" variant: slots never all held, every request takes and releases one. */
const LEASE_SPEC = { algorithm: "concurrency", limit: 1_000_000, leaseMs: 60_000 };

/** Server side: build the variant, listen on a free loopback port, print it. */
async function serve(variant) {
  const [framework, limiter, mode] = variant.split(":");
  const limit = limitOf(mode);
  const spec = { algorithm: "fixed-window", limit, windowMs: WINDOW_MS };
  if (framework === "express") {
    const { default: express } = await import("express");
    const app = express();
    app.disable("x-powered-by");
    if (limiter === "sluice" || limiter === "base") {
      const { rateLimit } = await import(sluiceModule(limiter, "http/express.js"));
      app.use(rateLimit({ spec }));
    } else if (limiter === "shed" || limiter === "baseshed") {
      const { loadShed } = await import(sluiceModule(limiter, "http/express.js"));
      app.use(loadShed({ limit: 1_000_000 }));
    } else if (limiter === "lease") {
      const { rateLimit } = await import("../dist/http/express.js");
      app.use(rateLimit({ spec: LEASE_SPEC }));
    } else if (limiter === "peer") {
      const { rateLimit } = await import("express-rate-limit");
      app.use(rateLimit({ windowMs: WINDOW_MS, limit, standardHeaders: "draft-8", legacyHeaders: false }));
    } else if (limiter === "headers") {
      app.use((_req, res, next) => {
        for (const [name, value] of FLOOR_HEADERS) res.setHeader(name, value);
        next();
      });
    }
    app.get("/", (_req, res) => {
      res.send("ok");
    });
    const server = app.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  } else if (framework === "node") {
    // Plain node:http (bench/http-callgrind.mjs): the handler answers as Express's res.send does.
    const { createServer } = await import("node:http");
    let gate = (_req, _res) => true;
    if (limiter === "sluice" || limiter === "base") {
      const { rateLimit } = await import(sluiceModule(limiter, "http/index.js"));
      gate = rateLimit({ spec });
    } else if (limiter === "shed" || limiter === "baseshed") {
      const { loadShed } = await import(sluiceModule(limiter, "http/index.js"));
      gate = loadShed({ limit: 1_000_000 });
    } else if (limiter === "headers") {
      gate = (_req, res) => {
        for (const [name, value] of FLOOR_HEADERS) res.setHeader(name, value);
        return true;
      };
    }
    const server = createServer((req, res) => {
      if (gate(req, res) !== true) return;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end("ok");
    });
    server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  } else if (framework === "koa") {
    const { default: Koa } = await import("koa");
    const app = new Koa();
    if (limiter === "sluice") {
      const { rateLimit } = await import("../dist/http/koa.js");
      app.use(rateLimit({ spec }));
    } else if (limiter === "peer") {
      const { default: ratelimit } = await import("koa-ratelimit");
      app.use(ratelimit({ driver: "memory", db: new Map(), duration: WINDOW_MS, max: limit }));
    }
    app.use((ctx) => {
      ctx.body = "ok";
    });
    const server = app.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  } else if (framework === "nest") {
    await serveNest(limiter, spec);
  } else {
    const { default: Fastify } = await import("fastify");
    const app = Fastify();
    if (limiter === "sluice" || limiter === "base") {
      const { rateLimit } = await import(sluiceModule(limiter, "http/fastify.js"));
      await app.register(rateLimit, { spec });
    } else if (limiter === "shed" || limiter === "baseshed") {
      const { loadShed } = await import(sluiceModule(limiter, "http/fastify.js"));
      await app.register(loadShed({ limit: 1_000_000 }));
    } else if (limiter === "lease") {
      const { rateLimit } = await import("../dist/http/fastify.js");
      await app.register(rateLimit, { spec: LEASE_SPEC });
    } else if (limiter === "pressure") {
      const { default: underPressure } = await import("@fastify/under-pressure");
      // BENCH_PRESSURE_NEVER=1 (bench/http-callgrind.mjs): thresholds it never reaches, the same
      // per-request work (under valgrind the event loop is always busy: a utilization of 0.98,
      // and of 1 with a delay of 600 s, still shed 4–8% of a warm-up's requests).
      const never = process.env.BENCH_PRESSURE_NEVER === "1";
      await app.register(underPressure, {
        maxEventLoopDelay: never ? 1e9 : 1000,
        maxEventLoopUtilization: never ? 2 : 0.98,
      });
    } else if (limiter === "peer") {
      const { default: fastifyRateLimit } = await import("@fastify/rate-limit");
      await app.register(fastifyRateLimit, { max: limit, timeWindow: WINDOW_MS });
    } else if (/^s\d\w?$/.test(limiter)) {
      const { addStep } = await import("./fastify-steps.mjs");
      addStep(app, limiter, spec);
    } else if (limiter === "headers") {
      // As a user writes it: reply.header lower-cases each name (a new string per request).
      app.addHook("onRequest", (_request, reply, done) => {
        reply.header("RateLimit-Policy", FLOOR_HEADERS[0][1]);
        reply.header("RateLimit", FLOOR_HEADERS[1][1]);
        done();
      });
    } else if (limiter === "headers-lc") {
      // The cheapest floor: names already in lower case (toLowerCase then returns them as they are).
      app.addHook("onRequest", (_request, reply, done) => {
        reply.header("ratelimit-policy", FLOOR_HEADERS[0][1]);
        reply.header("ratelimit", FLOOR_HEADERS[1][1]);
        done();
      });
    }
    app.get("/", async () => "ok");
    await app.listen({ port: 0, host: "127.0.0.1" });
    console.log(`PORT ${app.server.address().port}`);
  }
  // Exit cleanly when stopped, so a --cpu-prof profile is written.
  process.on("SIGTERM", () => process.exit(0));
  // And when the benchmark process is gone (killed, crashed): no server outlives it.
  process.on("disconnect", () => process.exit(0));
  // The load process marks the start of the measured requests and reads the CPU used since.
  let mark = process.cpuUsage();
  process.on("message", (message) => {
    if (message === "mark") {
      mark = process.cpuUsage();
      process.send("marked");
    } else if (message === "gc") {
      // (bench/http-callgrind.mjs, with --expose-gc: each counted block starts from a collected heap.)
      globalThis.gc?.();
      process.send("collected");
    } else if (message === "read") {
      const { user, system } = process.cpuUsage(mark);
      process.send({ cpuUs: user + system });
    }
  });
}

/**
 * A one-route Nest 11 app on platform-express. Plain JavaScript has no decorator syntax, so
 * Nest's decorators are applied as calls (what compiled TypeScript does).
 */
async function serveNest(limiter, spec) {
  await import("reflect-metadata");
  const { Controller, Get, Module } = await import("@nestjs/common");
  const { NestFactory, APP_GUARD } = await import("@nestjs/core");
  class AppController {
    get() {
      return "ok";
    }
  }
  const get = Object.getOwnPropertyDescriptor(AppController.prototype, "get");
  Reflect.decorate([Get()], AppController.prototype, "get", get);
  Reflect.decorate([Controller()], AppController);
  const imports = [];
  const providers = [];
  if (limiter === "sluice") {
    const { SluiceModule } = await import("../dist/nest/index.js");
    imports.push(SluiceModule.forRoot({ spec }));
  } else if (limiter === "peer") {
    const { ThrottlerModule, ThrottlerGuard } = await import("@nestjs/throttler");
    imports.push(ThrottlerModule.forRoot([{ ttl: WINDOW_MS, limit: spec.limit }]));
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
  }
  class AppModule {}
  Reflect.decorate([Module({ imports, controllers: [AppController], providers })], AppModule);
  const app = await NestFactory.create(AppModule, { logger: false });
  app.getHttpAdapter().getInstance().disable("x-powered-by");
  await app.listen(0, "127.0.0.1");
  console.log(`PORT ${app.getHttpServer().address().port}`);
}

/** The callgrind output file of a variant's server (dumps add `.<n>-<thread>`). */
const callgrindFile = (variant) => join(CALLGRIND_DIR, variant.replaceAll(":", "-"));

function start(variant) {
  const node = [...SERVER_FLAGS, fileURLToPath(import.meta.url), "--serve", variant];
  const [command, args] = CALLGRIND
    ? [
        "valgrind",
        [
          "--tool=callgrind",
          "--separate-threads=yes",
          "--instr-atstart=no",
          `--callgrind-out-file=${callgrindFile(variant)}`,
          process.execPath,
          // Compiling on the main thread, at the same points every run: the count then does not
          // depend on when a starved background compiler finished.
          "--single-threaded",
          ...node,
        ],
      ]
    : [process.execPath, node];
  // (valgrind's own banner would fill stderr.)
  const child = spawn(command, args, { stdio: ["ignore", "pipe", CALLGRIND ? "ignore" : "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /PORT (\d+)/.exec(out);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.on("exit", (code) => reject(new Error(`${variant} server exited with ${code}`)));
  });
}

/** Sends `message` to the server and resolves with its answer. */
function ask(child, message) {
  return new Promise((resolve) => {
    child.once("message", resolve);
    child.send(message);
  });
}

/** Runs a callgrind_control command on a server (`-i on`, `-z`, `-d`). */
const callgrind = (server, ...args) =>
  execFileSync("callgrind_control", [...args, String(server.child.pid)], { stdio: "ignore" });

/** Instructions of the server's main thread in its latest callgrind dump. */
function dumpedInstructions(server) {
  const base = callgrindFile(server.name);
  const prefix = `${base.slice(CALLGRIND_DIR.length + 1)}.`;
  const dumps = readdirSync(CALLGRIND_DIR)
    .filter((f) => f.startsWith(prefix) && f.endsWith("-01"))
    .map((f) => Number(f.slice(prefix.length, -3)));
  const text = readFileSync(`${base}.${Math.max(...dumps)}-01`, "utf8");
  return Number(/^totals: (\d+)/m.exec(text)?.[1]);
}

/**
 * Server CPU (µs) of exactly `requests` requests from autocannon in this process: the server
 * reads its own process.cpuUsage() just before and after. A pass run must pass everything; a
 * deny run must deny everything.
 */
async function block(server, requests, connections) {
  const { default: autocannon } = await import("autocannon");
  // Unmeasured requests first: a server idle while the others were measured may have lost
  // compiled code and inline caches to V8's idle-time collection.
  if (REWARM > 0) await autocannon({ url: server.url, connections, amount: REWARM, timeout: 60 });
  if (CALLGRIND) callgrind(server, "-z");
  else await ask(server.child, "mark");
  // A long timeout: on a loaded machine a request may wait seconds for its turn.
  const result = await autocannon({ url: server.url, connections, amount: requests, timeout: 60 });
  if (CALLGRIND) callgrind(server, "-d");
  const { cpuUs } = CALLGRIND ? { cpuUs: dumpedInstructions(server) } : await ask(server.child, "read");
  const answered = result["2xx"] + result.non2xx;
  // A few requests lost to a loaded machine (timeouts, resets) cost no answer: counted apart.
  if (answered < requests * 0.99)
    throw new Error(`${server.variant}: ${answered} of ${requests} answered, ${result.errors} errors`);
  // A deny run refuses all but what a new window admits (sluice's fixed window starts on the hour).
  if (server.variant.endsWith(":deny") ? result.non2xx < answered - DENY_LIMIT : result.non2xx > 0)
    throw new Error(`${server.variant}: ${result.non2xx} of ${answered} refused`);
  lost += requests - answered;
  return cpuUs / answered;
}

/** Requests sent but not answered (errors), reported with the results. */
let lost = 0;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** sluice's own work per request, in-process: key, check, headers, with no server or socket. */
async function engineCost() {
  const { Engine } = await import("../dist/http/engine.js");
  const spec = { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS };
  const reader = { address: (r) => r.ip, header: () => undefined };
  const request = { ip: "127.0.0.1" };
  const out = [];
  for (const headers of [false, "draft-11"]) {
    const engine = new Engine(headers ? { spec } : { spec, headers: false }, reader);
    let n = 0;
    const sink = (_name, value) => {
      n += value.length;
    };
    const runs = [];
    for (let rep = 0; rep < 5; rep++) {
      const t0 = performance.now();
      for (let i = 0; i < 1e6; i++) engine.writeHeaders(engine.decide(request), sink);
      runs.push((((performance.now() - t0) * 1000) / 1e6) * 1000);
    }
    if (n < 0) console.log(n);
    out.push(`${headers ? "with draft-11 headers" : "without headers"} ${median(runs).toFixed(0)} ns`);
  }
  console.log(`sluice's own work per request (in-process engine: key, check, headers): ${out.join(", ")}`);
}

async function main() {
  await engineCost();
  const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
  const requests = Number(process.env.BENCH_REQUESTS ?? 3_000);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  let variants = ["bare", "sluice", "peer", "sluice:deny", "peer:deny"];
  if (process.env.BENCH_FLOOR === "1") variants.push("headers", "headers-lc");
  if (process.env.BENCH_BASE_DIST) variants.push("base");
  if (process.env.BENCH_STEPS) variants.push(...process.env.BENCH_STEPS.split(","));
  // loadShed with a limit never reached, and @fastify/under-pressure (Fastify only) beside it.
  // (And sluice's middleware on a concurrency spec, "lease": a slot taken and released per request.)
  if (process.env.BENCH_SHED === "1") variants.push("shed", "pressure", "lease");
  if (process.env.BENCH_VARIANTS) {
    const chosen = process.env.BENCH_VARIANTS.split(",");
    // The ratios are to the bare app's blocks: it always runs.
    variants = variants.filter((v) => v === "bare" || chosen.includes(v));
  }
  const peerName = {
    express: "express-rate-limit",
    fastify: "@fastify/rate-limit",
    koa: "koa-ratelimit",
    nest: "@nestjs/throttler",
  };
  const frameworks = (process.env.BENCH_FRAMEWORKS ?? "express,fastify").split(",");
  console.log(
    `HTTP benchmark: server CPU per request (process.cpuUsage in the server), ${rounds} rounds × ${variants.length} variants × ${requests} requests per framework, ${connections} connections`,
  );
  const { default: autocannon } = await import("autocannon");
  const pct = (x) => `${x >= 1 ? "+" : ""}${((x - 1) * 100).toFixed(1)}%`;
  console.log(
    `${new Date().toISOString()}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  const everyVariant = variants;
  for (const framework of frameworks) {
    // Fastify-only variants are left out of the other frameworks' runs.
    const variants = everyVariant.filter((v) => framework === "fastify" || (v !== "headers-lc" && v !== "pressure"));
    // Every variant's server runs at once (idle but for its turn), and the rounds interleave them
    // block by block: background load then shifts them all alike, and each block is compared
    // with the bare app's block of the same round.
    const servers = [];
    try {
      for (const variant of variants) {
        const { child, port } = await start(`${framework}:${variant}`);
        servers.push({ variant, name: `${framework}:${variant}`, child, url: `http://127.0.0.1:${port}/` });
      }
      for (const server of servers) {
        await autocannon({ url: server.url, connections, amount: WARMUP });
        if (CALLGRIND) callgrind(server, "-i", "on");
      }
      const cpus = Object.fromEntries(variants.map((v) => [v, []]));
      const ratios = Object.fromEntries(variants.map((v) => [v, []]));
      for (let round = 0; round < rounds; round++) {
        const cpu = {};
        for (let i = 0; i < servers.length; i++) {
          const server = servers[(i + round) % servers.length];
          cpu[server.variant] = await block(server, requests, connections);
          cpus[server.variant].push(cpu[server.variant]);
        }
        for (const v of variants) ratios[v].push(cpu[v] / cpu.bare);
      }
      const c = (v) => (CALLGRIND ? `${median(cpus[v]).toFixed(0)} instr` : `${median(cpus[v]).toFixed(1)} µs`);
      const quartiles = (v) => {
        const xs = [...ratios[v]].sort((x, y) => x - y);
        return `${pct(xs[Math.floor(xs.length / 4)])}…${pct(xs[Math.ceil((xs.length * 3) / 4) - 1])}`;
      };
      console.log(
        `\n${framework}: bare ${c("bare")} per request; medians of per-round ratios to bare (interquartile range)${CALLGRIND ? "; callgrind, main thread" : ""}`,
      );
      for (const [name, v] of [
        ["sluice", "sluice"],
        [peerName[framework], "peer"],
        ["sluice, all denied", "sluice:deny"],
        [`${peerName[framework]}, all denied`, "peer:deny"],
        ["two constant headers (floor)", "headers"],
        ...(framework === "fastify" ? [["two constant headers, lower-case names", "headers-lc"]] : []),
        ["sluice, BENCH_BASE_DIST build", "base"],
        ["loadShed (fixed limit, never reached)", "shed"],
        ...(framework === "fastify" ? [["@fastify/under-pressure", "pressure"]] : []),
        ["sluice, concurrency spec (leases)", "lease"],
        ...(process.env.BENCH_STEPS ?? "")
          .split(",")
          .filter(Boolean)
          .map((s) => [`step ${s}`, s]),
      ]) {
        if (!variants.includes(v)) continue;
        console.log(`  ${name.padEnd(38)} ${c(v).padStart(9)} ${pct(median(ratios[v])).padStart(7)} (${quartiles(v)})`);
      }
      // Over the floor: each round's block against the floor's block of the same round.
      for (const floor of ["headers", "headers-lc"].filter((f) => variants.includes(f))) {
        const over = (v) => pct(median(cpus[v].map((x, i) => x / cpus[floor][i])));
        const shown = ["sluice", "peer"].filter((v) => variants.includes(v));
        if (shown.length > 0)
          console.log(
            `  over "${floor}" (per-round ratios' median): ${shown.map((v) => `${v} ${over(v)}`).join(", ")}`,
          );
      }
    } finally {
      for (const server of servers) {
        server.child.removeAllListeners("exit");
        server.child.kill();
      }
    }
  }
  if (CALLGRIND && process.env.BENCH_CALLGRIND_KEEP === undefined)
    rmSync(CALLGRIND_DIR, { recursive: true, force: true });
  else if (CALLGRIND) console.log(`callgrind dumps kept in ${CALLGRIND_DIR}`);
  console.log(
    `${new Date().toISOString()}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  if (lost > 0) console.log(`\n${lost} requests were not answered (timeouts or resets) and are not counted`);
}

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else await main();
