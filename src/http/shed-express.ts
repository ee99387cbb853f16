/** `loadShed` for Express (4 and 5): shed requests are answered 503 here; errors of `priority` go to `next(error)`. */
import type { Request, RequestHandler, Response } from "express";
import type { LoadShedOptions } from "../shed/options.ts";
import { type LoadShedHandle, Shedder } from "../shed/shedder.ts";
import { nodeShedHandler, withShedHandle } from "./shed.ts";

/**
 * Express middleware shedding load: past `limit` requests in flight (or under event-loop
 * pressure) the least critical requests get 503, `Retry-After` and a problem body.
 *
 * @example app.use(loadShed({ limit: "adaptive", priority: (req) => (req.path.startsWith("/checkout") ? 0 : 5) }));
 */
export function loadShed(options: LoadShedOptions<Request>): RequestHandler & LoadShedHandle {
  const shedder = new Shedder<Request>(options);
  const handler = nodeShedHandler<Request, Response>(shedder);
  return withShedHandle(
    function sluiceLoadShed(request: Request, response: Response, next: (e?: unknown) => void) {
      handler(request, response, next);
    } as RequestHandler,
    shedder,
  );
}
