/**
 * `loadShed` for Fastify (`priority(request)`): a plugin that sheds on `onRequest`, before the
 * body is parsed, so a shed request costs as little as possible. Like the rate-limit plugin it
 * is `skip-override`: it applies to the context it is registered in and that context's children.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import type { LoadShedOptions } from "../shed/options.ts";
import { type LoadShedHandle, type Release, Shedder } from "../shed/shedder.ts";
import { isPromise } from "./maybe-promise.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";
import { releaseOnEnd, shedAnswer, withShedHandle } from "./shed.ts";

/** What `loadShed` returns: the plugin, its `onRequest` hook (for one route or context), and the handle. */
export type FastifyLoadShed = FastifyPluginCallback &
  LoadShedHandle & {
    /** The hook alone, for a route's `onRequest`. */
    onRequest: onRequestHookHandler;
  };

/**
 * A Fastify plugin shedding load: past `limit` requests in flight (or under event-loop
 * pressure) the least critical requests get 503, `Retry-After` and a problem body.
 *
 * @example
 * const shed = loadShed({ limit: "adaptive", priority: (req) => (req.url === "/health" ? 0 : 5) });
 * await app.register(shed);
 * app.get("/metrics/shed", () => shed.stats());
 */
export function loadShed(options: LoadShedOptions<FastifyRequest>): FastifyLoadShed {
  const shedder = new Shedder<FastifyRequest>(options);
  const answer = shedAnswer(shedder as Shedder<never>);
  const settle = (release: Release | undefined, reply: FastifyReply, done: (error?: Error) => void): void => {
    if (release === undefined) {
      // Replying from a callback-style hook: send, and do not call done().
      reply.code(answer.status).header("Retry-After", answer.retryAfter).type(PROBLEM_CONTENT_TYPE).send(answer.body);
      return;
    }
    // The raw response's events: they also tell an aborted request (no 'finish').
    releaseOnEnd(reply.raw, release);
    done();
  };
  const onRequest: onRequestHookHandler = function sluiceLoadShed(request, reply, done) {
    let admitted: ReturnType<typeof shedder.admit>;
    try {
      admitted = shedder.admit(request);
    } catch (error) {
      return done(error as Error);
    }
    if (isPromise(admitted)) admitted.then((release) => settle(release, reply, done), done);
    else settle(admitted, reply, done);
  };
  const plugin: FastifyPluginCallback = function sluiceLoadShedPlugin(instance, _options, done) {
    instance.addHook("onRequest", onRequest);
    done();
  };
  // What fastify-plugin sets, without the dependency (as the rate-limit plugin does).
  Object.assign(plugin, {
    [Symbol.for("skip-override")]: true,
    [Symbol.for("fastify.display-name")]: "sluice-load-shed",
    [Symbol.for("plugin-meta")]: { name: "sluice-load-shed", fastify: ">=4" },
    onRequest,
  });
  return withShedHandle(plugin, shedder) as FastifyLoadShed;
}
