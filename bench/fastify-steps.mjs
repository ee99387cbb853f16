// The Fastify bisection of bench/http.mjs (BENCH_STEPS): sluice's onRequest hook rebuilt one
// piece at a time from this build's dist/, so each piece's cost per request shows as the
// difference between two neighbouring steps measured side by side (BENCH_CALLGRIND=1).
//
//   s0  an empty callback-style onRequest hook (what any hook costs in Fastify)
//   s1  + the two draft-11 headers as constants, through the adapter's ReplyHeaderWriter
//   s2  + the client address (engine.clientAddress: socket address, cache, X-Forwarded-For check)
//   s3  + the whole check (engine.decide: address, target, limiter, MemoryStore), verdict unused
//   s4  + the header values from the decision (engine.writeHeaders through the writer)
//   s5  + request.rateLimit (a request decorator), as the plugin sets it
//   s2n s2 with a reader that never reads a header (the X-Forwarded-For check's share)
//
// The full plugin adds its route wrapper (per-route config and prefix) around s5.
import { Engine } from "../dist/http/engine.js";
import { ReplyHeaderWriter } from "../dist/http/fastify-headers.js";
import { nodeReader } from "../dist/http/node.js";

/** The constant values of s1–s3 (what sluice writes here, give or take the remaining count). */
const POLICY = '"default";q=1000000000;w=3600';
const RATE_LIMIT = '"default";r=999999999;t=3600';

/** The adapter's reader (src/http/fastify.ts). */
const fastifyReader = {
  address: (request) => nodeReader.address(request.raw),
  header: (request, name) => nodeReader.header(request.raw, name),
  connection: (request) => request.raw.socket ?? undefined,
};

/** Adds step `step`'s onRequest hook to `app`, limiting by `spec`. */
export function addStep(app, step, spec) {
  const reader = step === "s2n" ? { ...fastifyReader, header: () => undefined } : fastifyReader;
  const engine = new Engine({ spec }, reader, []);
  const writer = new ReplyHeaderWriter();
  // Results kept somewhere, so no step's work is dead code to the compiler.
  let sink = 0;
  const constants = (reply) => {
    writer.begin(reply);
    writer.set("RateLimit-Policy", POLICY);
    writer.set("RateLimit", RATE_LIMIT);
    writer.end();
  };
  const withAddress = (request, reply, done) => {
    sink += engine.clientAddress(request).length;
    constants(reply);
    done();
  };
  const hooks = {
    s0: (_request, _reply, done) => done(),
    s1: (_request, reply, done) => {
      constants(reply);
      done();
    },
    s2: withAddress,
    s2n: withAddress,
    s3: (request, reply, done) => {
      if (engine.decide(request).status !== 200) sink++;
      constants(reply);
      done();
    },
    s4: (request, reply, done) => {
      const verdict = engine.decide(request);
      writer.begin(reply);
      engine.writeHeaders(verdict, writer.set, writer.get);
      writer.end();
      done();
    },
    s5: (request, reply, done) => {
      const verdict = engine.decide(request);
      request.rateLimit = verdict.decision;
      writer.begin(reply);
      engine.writeHeaders(verdict, writer.set, writer.get);
      writer.end();
      done();
    },
  };
  if (hooks[step] === undefined) throw new Error(`unknown step ${step}`);
  if (step === "s5") app.decorateRequest("rateLimit", undefined);
  app.addHook("onRequest", hooks[step]);
  process.on("exit", () => {
    if (sink < 0) console.log(sink);
  });
}
