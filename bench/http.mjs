// HTTP benchmark: requests/s of minimal Express, Fastify, Koa and NestJS apps, bare, with
// sluice (in-process store) and with the peer middleware (express-rate-limit,
// @fastify/rate-limit, koa-ratelimit, @nestjs/throttler), all configured alike: a fixed window whose limit is never reached, so
// every request is counted and passes with headers. Each variant runs in its own server
// process; autocannon drives it over loopback from this process. Variants are interleaved
// round by round and the median round is reported, because the machine is noisy.
//
// Run: npm run build && node bench/http.mjs
// Env: BENCH_ROUNDS (default 7), BENCH_SECONDS per run (default 2), BENCH_CONNECTIONS (default 50),
// BENCH_FRAMEWORKS (default "express,fastify,koa,nest")
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;

/** Server side: build the variant, listen on a free loopback port, print it. */
async function serve(variant) {
  const [framework, limiter] = variant.split(":");
  if (framework === "express") {
    const { default: express } = await import("express");
    const app = express();
    app.disable("x-powered-by");
    if (limiter === "sluice") {
      const { rateLimit } = await import("../dist/http/express.js");
      app.use(rateLimit({ spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS } }));
    } else if (limiter === "peer") {
      const { rateLimit } = await import("express-rate-limit");
      app.use(rateLimit({ windowMs: WINDOW_MS, limit: LIMIT, standardHeaders: "draft-8", legacyHeaders: false }));
    }
    app.get("/", (_req, res) => {
      res.send("ok");
    });
    const server = app.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  } else if (framework === "koa") {
    const { default: Koa } = await import("koa");
    const app = new Koa();
    if (limiter === "sluice") {
      const { rateLimit } = await import("../dist/http/koa.js");
      app.use(rateLimit({ spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS } }));
    } else if (limiter === "peer") {
      const { default: ratelimit } = await import("koa-ratelimit");
      app.use(ratelimit({ driver: "memory", db: new Map(), duration: WINDOW_MS, max: LIMIT }));
    }
    app.use((ctx) => {
      ctx.body = "ok";
    });
    const server = app.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  } else if (framework === "nest") {
    await serveNest(limiter);
  } else {
    const { default: Fastify } = await import("fastify");
    const app = Fastify();
    if (limiter === "sluice") {
      const { rateLimit } = await import("../dist/http/fastify.js");
      await app.register(rateLimit, { spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS } });
    } else if (limiter === "peer") {
      const { default: fastifyRateLimit } = await import("@fastify/rate-limit");
      await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: WINDOW_MS });
    }
    app.get("/", async () => "ok");
    await app.listen({ port: 0, host: "127.0.0.1" });
    console.log(`PORT ${app.server.address().port}`);
  }
}

/**
 * A one-route Nest 11 app on platform-express. Plain JavaScript has no decorator syntax, so
 * Nest's decorators are applied as calls (what compiled TypeScript does).
 */
async function serveNest(limiter) {
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
    imports.push(SluiceModule.forRoot({ spec: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS } }));
  } else if (limiter === "peer") {
    const { ThrottlerModule, ThrottlerGuard } = await import("@nestjs/throttler");
    imports.push(ThrottlerModule.forRoot([{ ttl: WINDOW_MS, limit: LIMIT }]));
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
  }
  class AppModule {}
  Reflect.decorate([Module({ imports, controllers: [AppController], providers })], AppModule);
  const app = await NestFactory.create(AppModule, { logger: false });
  app.getHttpAdapter().getInstance().disable("x-powered-by");
  await app.listen(0, "127.0.0.1");
  console.log(`PORT ${app.getHttpServer().address().port}`);
}

function start(variant) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--serve", variant], {
    stdio: ["ignore", "pipe", "inherit"],
  });
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

async function measure(variant, seconds, connections) {
  const { default: autocannon } = await import("autocannon");
  const { child, port } = await start(variant);
  try {
    const url = `http://127.0.0.1:${port}/`;
    await autocannon({ url, connections, duration: 1 }); // warm-up (JIT, connections)
    const before = cpuMs(child.pid);
    const result = await autocannon({ url, connections, duration: seconds });
    const cpu = cpuMs(child.pid) - before;
    if (result.non2xx > 0 || result.errors > 0)
      throw new Error(`${variant}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    return { rps: result.requests.average, cpuUs: (cpu * 1000) / result.requests.total };
  } finally {
    child.removeAllListeners("exit");
    child.kill();
  }
}

/**
 * CPU time (user + system, ms) the server process has used, from /proc. Throughput on a shared
 * 2-core machine swings with other load; the server's own CPU time per request does much less.
 */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
}

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
  const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
  const seconds = Number(process.env.BENCH_SECONDS ?? 2);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const limiters = ["bare", "sluice", "peer"];
  const peerName = {
    express: "express-rate-limit",
    fastify: "@fastify/rate-limit",
    koa: "koa-ratelimit",
    nest: "@nestjs/throttler",
  };
  const frameworks = (process.env.BENCH_FRAMEWORKS ?? "express,fastify,koa,nest").split(",");
  const rps = {};
  const cpus = {};
  const ratios = {};
  console.log(
    `HTTP benchmark: ${rounds} rounds × ${frameworks.length * 3} variants × ${seconds}s, ${connections} connections`,
  );
  for (let round = 0; round < rounds; round++) {
    const line = [];
    for (const framework of frameworks) {
      // The three variants of one framework run back to back (rotated each round), and each
      // is compared with the bare app of the same round: background load shifts all three.
      const got = {};
      const cpu = {};
      for (let i = 0; i < limiters.length; i++) {
        const limiter = limiters[(i + round) % limiters.length];
        const m = await measure(`${framework}:${limiter}`, seconds, connections);
        got[limiter] = m.rps;
        cpu[limiter] = m.cpuUs;
        (rps[`${framework}:${limiter}`] ??= []).push(got[limiter]);
        (cpus[`${framework}:${limiter}`] ??= []).push(cpu[limiter]);
      }
      (ratios[`${framework}:sluice`] ??= []).push(got.sluice / got.bare);
      (ratios[`${framework}:peer`] ??= []).push(got.peer / got.bare);
      (ratios[`${framework}:vs`] ??= []).push(got.sluice / got.peer);
      (ratios[`${framework}:cpu-sluice`] ??= []).push(cpu.sluice / cpu.bare);
      (ratios[`${framework}:cpu-peer`] ??= []).push(cpu.peer / cpu.bare);
      line.push(
        `${framework} bare ${Math.round(got.bare)} sluice ${Math.round(got.sluice)} peer ${Math.round(got.peer)}`,
      );
    }
    console.log(`round ${round + 1}: ${line.join(" | ")}`);
  }
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  console.log("\nmedians (ratios are medians of per-round ratios to the same round's bare app)");
  for (const framework of frameworks) {
    const m = (k) => median(rps[`${framework}:${k}`]);
    console.log(
      `${framework.padEnd(8)} bare ${Math.round(m("bare"))} req/s | sluice ${Math.round(m("sluice"))} req/s = ${pct(median(ratios[`${framework}:sluice`]))} of bare | ` +
        `${peerName[framework]} ${Math.round(m("peer"))} req/s = ${pct(median(ratios[`${framework}:peer`]))} of bare | ` +
        `sluice/peer ${median(ratios[`${framework}:vs`]).toFixed(2)}×`,
    );
  }
  console.log("\nserver CPU per request (µs; ratios are medians of per-round ratios to the bare app)");
  for (const framework of frameworks) {
    const c = (k) => median(cpus[`${framework}:${k}`]).toFixed(1);
    console.log(
      `${framework.padEnd(8)} bare ${c("bare")} µs | sluice ${c("sluice")} µs = ${median(ratios[`${framework}:cpu-sluice`]).toFixed(3)}× | ` +
        `${peerName[framework]} ${c("peer")} µs = ${median(ratios[`${framework}:cpu-peer`]).toFixed(3)}×`,
    );
  }
}

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else await main();
