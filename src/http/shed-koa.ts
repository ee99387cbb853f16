/** `loadShed` for Koa (2 and 3): shed requests are answered 503 here; the rest go down the chain. */
import type { Context, Middleware, Next } from "koa";
import type { LoadShedOptions } from "../shed/options.ts";
import { type LoadShedHandle, Shedder } from "../shed/shedder.ts";
import { isPromise } from "./maybe-promise.ts";
import { PROBLEM_CONTENT_TYPE } from "./problem.ts";
import { releaseOnEnd, shedAnswer, withShedHandle } from "./shed.ts";

/**
 * Koa middleware shedding load (`priority(ctx)`): past `limit` requests in flight (or under
 * event-loop pressure) the least critical requests get 503, `Retry-After` and a problem body.
 *
 * @example app.use(loadShed({ limit: 200, priority: (ctx) => (ctx.path === "/health" ? 0 : 5), reserve: { 0: 0.05 } }));
 */
export function loadShed(options: LoadShedOptions<Context>): Middleware & LoadShedHandle {
  const shedder = new Shedder<Context>(options);
  const answer = shedAnswer(shedder as Shedder<never>);
  return withShedHandle(
    async function sluiceLoadShed(ctx: Context, next: Next): Promise<void> {
      const admitted = shedder.admit(ctx);
      const release = isPromise(admitted) ? await admitted : admitted;
      if (release === undefined) {
        ctx.status = answer.status;
        ctx.set("Retry-After", answer.retryAfter);
        // The type first: Koa would otherwise label a string body text/plain.
        ctx.type = PROBLEM_CONTENT_TYPE;
        ctx.body = answer.body;
        return;
      }
      // Koa writes the response after the chain returns, and answers a thrown handler itself:
      // the raw response's end tells every outcome, a client gone first included.
      releaseOnEnd(ctx.res, release);
      return next();
    } as Middleware,
    shedder,
  );
}
