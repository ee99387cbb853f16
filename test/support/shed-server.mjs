// A Fastify server with a known capacity, for loadShed's overload test and bench/shed.mjs:
// GET /work takes one of SLOTS slots (a pool: a database's connections, a worker pool), burns
// BURN_MS of CPU and holds the slot HOLD_MS, so at most SLOTS / (HOLD_MS + BURN_MS) requests a
// millisecond complete; past that they queue for a slot. GET /hello answers at once (the
// per-request overhead runs). Uses the built package (dist/).
//
// Usage: node shed-server.mjs '<json>' with { mode: "none" | "fixed" | "adaptive" |
// "under-pressure", slots, holdMs, burnMs, shed: loadShed options (limit, reserve, adaptive),
// underPressure: its options }. The request header x-priority is the priority (default 5).
// It prints its port; over IPC it answers "stats" with { shed: loadShed's stats, served:
// 200s by priority, cpu: process.cpuUsage(), limits and inFlight: loadShed's limit and requests in
// flight every 100 ms since start, stalls: the event loop's stalls over 20 ms (ms) }. Each /work
// answer carries x-wait (ms queued for a slot) and x-hold (ms holding it).
import underPressure from "@fastify/under-pressure";
import Fastify from "fastify";
import { loadShed } from "../../dist/http/fastify.js";

const config = JSON.parse(process.argv[2] ?? "{}");
const { mode = "none", slots = 4, holdMs = 15, burnMs = 1 } = config;

const app = Fastify();
let shed;
if (mode === "fixed" || mode === "adaptive") {
  shed = loadShed({
    limit: mode === "adaptive" ? "adaptive" : 16,
    ...config.shed,
    priority: (request) => {
      const value = request.headers["x-priority"];
      return value === undefined ? 5 : Number(value);
    },
  });
  await app.register(shed);
} else if (mode === "under-pressure") {
  await app.register(underPressure, { maxEventLoopDelay: 100, maxEventLoopUtilization: 0.9, ...config.underPressure });
}

// The pool: FIFO waiters for SLOTS slots.
let free = slots;
const waiting = [];
const take = () => {
  if (free === 0) return new Promise((resolve) => waiting.push(resolve));
  free--;
  return Promise.resolve();
};
const give = () => {
  const next = waiting.shift();
  if (next === undefined) free++;
  else next();
};
const burn = (ms) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
};
const served = new Array(10).fill(0);

app.get("/work", async (request, reply) => {
  const entered = performance.now();
  await take();
  const started = performance.now();
  try {
    burn(burnMs);
    await new Promise((resolve) => setTimeout(resolve, holdMs));
  } finally {
    give();
  }
  const value = request.headers["x-priority"];
  served[value === undefined ? 5 : Number(value)]++;
  // Where an answer's time went (bench/shed.mjs splits the slowest answers): queued for a slot,
  // holding it; the client's latency less both is the time outside the handler.
  reply.header("x-wait", (started - entered).toFixed(2));
  reply.header("x-hold", (performance.now() - started).toFixed(2));
  return "done";
});
app.get("/hello", async () => "hello");

// The limit and requests in flight over time (the adaptive one moves), and the event loop's
// stalls (a 5 ms tick that came more than 20 ms late): sampled, never keeping the process alive.
const limits = [];
const inFlight = [];
if (shed !== undefined) {
  setInterval(() => {
    const stats = shed.stats();
    limits.push(stats.limit);
    inFlight.push(stats.inFlight);
  }, 100).unref();
}
// Critical requests shed: when (ms since start), the limit and requests in flight then.
const criticalShed = [];
const begin = performance.now();
if (shed !== undefined) {
  app.addHook("onResponse", async (request, reply) => {
    if (reply.statusCode === 503 && request.headers["x-priority"] === "0") {
      const stats = shed.stats();
      criticalShed.push({ at: Math.round(performance.now() - begin), limit: stats.limit, inFlight: stats.inFlight });
    }
  });
}
const stalls = [];
let tick = performance.now();
setInterval(() => {
  const now = performance.now();
  if (now - tick > 25) stalls.push(Math.round(now - tick - 5));
  tick = now;
}, 5).unref();

await app.listen({ port: 0, host: "127.0.0.1" });
process.on("message", (message) => {
  if (message === "stats")
    process.send({ shed: shed?.stats(), served, cpu: process.cpuUsage(), limits, inFlight, stalls, criticalShed });
});
process.send?.({ port: app.server.address().port });
