/**
 * `loadShed` for Hono (`priority(c)`). On Node (`@hono/node-server`) the release waits for the
 * raw response to end (a streamed body included, or the client gone); elsewhere it comes when
 * the handler's Response is returned, when it throws, or when the request is aborted.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { LoadShedOptions } from "../shed/options.ts";
import { type LoadShedHandle, Shedder } from "../shed/shedder.ts";
import { nodeResponse } from "./hono-node.ts";
import { isPromise } from "./maybe-promise.ts";
import { fetchShedHandler, releaseOnEnd, shedAnswer, shedResponse, withShedHandle } from "./shed.ts";

/**
 * Hono middleware shedding load: past `limit` requests in flight (or under event-loop pressure)
 * the least critical requests get 503, `Retry-After` and a problem body.
 *
 * @example app.use(loadShed({ limit: "adaptive", priority: (c) => (c.req.path === "/health" ? 0 : 5) }));
 */
export function loadShed(options: LoadShedOptions<Context>): MiddlewareHandler & LoadShedHandle {
  const shedder = new Shedder<Context>(options);
  const answer = shedAnswer(shedder as Shedder<never>);
  const elsewhere = fetchShedHandler<Context>(shedder, (c) => c.req.raw.signal);
  const middleware: MiddlewareHandler = async function sluiceLoadShed(c, next) {
    const raw = nodeResponse(c);
    if (raw === undefined) {
      return elsewhere(c, async () => {
        await next();
        return c.res;
      }).then((response) => (response === c.res ? undefined : response));
    }
    const admitted = shedder.admit(c);
    const release = isPromise(admitted) ? await admitted : admitted;
    if (release === undefined) return shedResponse(answer);
    releaseOnEnd(raw, release);
    await next();
  };
  return withShedHandle(middleware, shedder);
}
