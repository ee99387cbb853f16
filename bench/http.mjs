// HTTP benchmark: requests/s of a minimal Express app and a minimal Fastify app, bare, with
// sluice (in-process store) and with the peer middleware (express-rate-limit,
// @fastify/rate-limit), all configured alike: a fixed window whose limit is never reached, so
// every request is counted and passes with headers. Each variant runs in its own server
// process; autocannon drives it over loopback from this process. Variants are interleaved
// round by round and the median round is reported, because the machine is noisy.
//
// Run: npm run build && node bench/http.mjs
// Env: BENCH_ROUNDS (default 5), BENCH_SECONDS per run (default 3), BENCH_CONNECTIONS (default 50)
import { spawn } from "node:child_process";
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
    const result = await autocannon({ url, connections, duration: seconds });
    if (result.non2xx > 0 || result.errors > 0)
      throw new Error(`${variant}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    return result.requests.average;
  } finally {
    child.removeAllListeners("exit");
    child.kill();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main() {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const seconds = Number(process.env.BENCH_SECONDS ?? 3);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const variants = ["bare", "sluice", "peer"].flatMap((l) => [`express:${l}`, `fastify:${l}`]);
  const samples = Object.fromEntries(variants.map((v) => [v, []]));
  console.log(
    `HTTP benchmark: ${rounds} rounds × ${variants.length} variants × ${seconds}s, ${connections} connections`,
  );
  for (let round = 0; round < rounds; round++) {
    // Rotate the order each round so no variant always runs first (or after the same one).
    const order = variants.map((_, i) => variants[(i + round) % variants.length]);
    for (const variant of order) samples[variant].push(await measure(variant, seconds, connections));
    console.log(`round ${round + 1}: ${order.map((v) => `${v} ${Math.round(samples[v].at(-1))}`).join(", ")}`);
  }
  const peerName = { express: "express-rate-limit", fastify: "@fastify/rate-limit" };
  console.log("\nmedian requests/s");
  for (const framework of ["express", "fastify"]) {
    const bare = median(samples[`${framework}:bare`]);
    const sluice = median(samples[`${framework}:sluice`]);
    const peer = median(samples[`${framework}:peer`]);
    console.log(
      `${framework.padEnd(8)} bare ${Math.round(bare)}  sluice ${Math.round(sluice)} (${((sluice / bare) * 100).toFixed(1)}% of bare)  ` +
        `${peerName[framework]} ${Math.round(peer)} (${((peer / bare) * 100).toFixed(1)}% of bare)  sluice/peer ${(sluice / peer).toFixed(2)}×`,
    );
  }
}

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else await main();
