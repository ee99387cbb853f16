// The client-address path of the HTTP middleware in a loop, on real Node requests: a loopback
// connection's server-side socket and an http.IncomingMessage parsed from it (headers as a
// browser sends them), called through the engine the way each adapter calls it. For callgrind
// (instructions per call: the difference of an N and a 3N run) and V8's IC log (`--log-ic`).
//
//   node bench/http-address-loop.mjs [what] [n]
//     what: address (engine.clientAddress), decide (engine.decide), hook (the Fastify hook with
//     its headers), express (the Express middleware); n: calls after the warm-up (default 200000)
//   valgrind --tool=callgrind --dump-instr=no node --single-threaded bench/http-address-loop.mjs address 100000

import { IncomingMessage } from "node:http";
import { connect, createServer } from "node:net";

const what = process.argv[2] ?? "address";
const n = Number(process.argv[3] ?? 200_000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 50_000);

/** A connected loopback pair: the server side is what a request's `socket` is. */
const socket = await new Promise((resolve) => {
  const server = createServer((s) => resolve(s));
  server.listen(0, "127.0.0.1", () => connect(server.address().port, "127.0.0.1"));
});

const RAW_HEADERS = [
  "Host",
  "127.0.0.1:3000",
  "User-Agent",
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36",
  "Accept",
  "text/html,application/xhtml+xml",
  "Accept-Encoding",
  "gzip, deflate, br",
  "Accept-Language",
  "en-US,en;q=0.9",
  "Connection",
  "keep-alive",
];

/** A fresh IncomingMessage on the socket, as Node's parser makes one per request. */
function request() {
  const req = new IncomingMessage(socket);
  req.method = "GET";
  req.url = "/";
  req.httpVersion = "1.1";
  req.rawHeaders = RAW_HEADERS;
  return req;
}

const spec = { algorithm: "fixed-window", limit: 1_000_000_000, windowMs: 3_600_000 };
let sink = 0;
let run;
if (what === "address" || what === "decide") {
  const { Engine } = await import("../dist/http/engine.js");
  const { nodeReader } = await import("../dist/http/node.js");
  const fastifyReader = {
    address: (r) => nodeReader.address(r.raw),
    header: (r, name) => nodeReader.header(r.raw, name),
    connection: (r) => r.raw.socket ?? undefined,
  };
  const engine = new Engine({ spec }, fastifyReader, []);
  run =
    what === "address"
      ? (r) => {
          sink += engine.clientAddress({ raw: r }).length;
        }
      : (r) => {
          if (engine.decide({ raw: r }).status !== 200) sink++;
        };
} else if (what === "express") {
  const { rateLimit } = await import("../dist/http/express.js");
  const mw = rateLimit({ spec });
  const headers = {};
  const res = {
    headersSent: false,
    setHeader: (k, v) => {
      headers[k] = v;
    },
    getHeader: (k) => headers[k],
  };
  const next = () => {
    sink++;
  };
  run = (r) => mw(r, res, next);
}
for (let i = 0; i < WARMUP; i++) run(request());
const t0 = performance.now();
for (let i = 0; i < n; i++) run(request());
const ns = ((performance.now() - t0) * 1e6) / n;
console.log(
  `${what}: ${n} calls, ${ns.toFixed(0)} ns per call (timed, with the request's construction)${sink < 0 ? sink : ""}`,
);
socket.destroy();
process.exit(0);
