/**
 * `sluice/fastify`: a Fastify plugin that limits on `onRequest` (before the body is parsed,
 * so a limited client costs as little as possible).
 *
 * Scope: the plugin is marked `skip-override` (what `fastify-plugin` does), so its hook
 * applies to the context it is registered in and that context's children: register it on
 * the root to limit every route, or inside an encapsulated plugin to limit only that
 * plugin's routes. For one route, use `rateLimitHook(options)` as the route's `onRequest`.
 */
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from "fastify";
import type { Decision } from "../algorithms/decision.ts";
import { Engine, isPromise, type Verdict } from "./engine.ts";
import { nodeReader } from "./node.ts";
import type { MaybePromise, RateLimitOptions } from "./options.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";

/** Options of the Fastify plugin and hook. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Answers a limited request (status 429 and headers already set on `reply`); must send it. */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => void;
}

/** An `onRequest` hook limiting each client, for routes or contexts of your choosing. */
export function rateLimitHook(options: FastifyRateLimitOptions): onRequestHookHandler {
  const engine = new Engine<FastifyRequest>(options, {
    address: (request) => nodeReader.address(request.raw),
    header: (request, name) => nodeReader.header(request.raw, name),
  });
  const onLimited = options.onLimited;
  const respond = (
    verdict: Verdict | null,
    request: FastifyRequest,
    reply: FastifyReply,
    done: (error?: Error) => void,
  ): void => {
    if (verdict === null) {
      done();
      return;
    }
    engine.writeHeaders(verdict, (name, value) => reply.header(name, value));
    if (verdict.status === 200) {
      done();
      return;
    }
    reply.code(verdict.status);
    // Replying from a callback-style hook: send, and do not call done().
    if (verdict.status === 429 && onLimited !== undefined) onLimited(request, reply, verdict.decision);
    else reply.type(PROBLEM_CONTENT_TYPE).send(engine.body(verdict));
  };
  return function sluiceOnRequest(this: FastifyInstance, request, reply, done) {
    let verdict: MaybePromise<Verdict | null>;
    try {
      verdict = engine.decide(request);
      if (!isPromise(verdict)) return respond(verdict, request, reply, done);
    } catch (error) {
      return done(error as Error);
    }
    verdict.then(
      (v) => {
        try {
          respond(v, request, reply, done);
        } catch (error) {
          done(error as Error);
        }
      },
      (error: Error) => done(error),
    );
  };
}

/** The plugin: `app.register(rateLimit, options)`. */
export const rateLimit: FastifyPluginCallback<FastifyRateLimitOptions> = function sluiceFastify(
  instance,
  options,
  done,
) {
  instance.addHook("onRequest", rateLimitHook(options));
  done();
};

// What fastify-plugin sets, without the dependency: apply to the registering context (not a
// new child), name the plugin in errors and in `printPlugins()`, and declare the versions.
Object.assign(rateLimit, {
  [Symbol.for("skip-override")]: true,
  [Symbol.for("fastify.display-name")]: "sluice",
  [Symbol.for("plugin-meta")]: { name: "sluice", fastify: ">=4" },
});

export default rateLimit;
export type { RateLimitOptions } from "./options.ts";
