import express, { type Request } from "express";
import { ManualClock } from "sluice";
import { type RateLimitHandles, rateLimit } from "sluice/express";
import { afterEach, describe, expect, test } from "vitest";
import { listening } from "../support/listening.ts";
import { conformance, hangSignals, type Options, routeOf, type Served } from "./conformance.ts";
import { features } from "./conformance-features.ts";
import { leases } from "./conformance-leases.ts";

async function serveExpress(options: Options | Options[], setup?: (app: express.Express) => void): Promise<Served> {
  const app = express();
  setup?.(app);
  let handles: RateLimitHandles | undefined;
  for (const { customLimited, ...rest } of Array.isArray(options) ? options : [options]) {
    if (customLimited) rest.onLimited = (_req: Request, res: express.Response) => res.send("slow down");
    const limit = rateLimit(rest as never);
    handles ??= limit;
    app.use(limit);
  }
  const hang = hangSignals();
  app.use((req, res) => {
    const route = routeOf(req.url);
    if (route.kind === "throw") throw new Error("handler failed");
    if (route.kind === "hang") {
      hang.enter();
      return void res.once("close", () => {
        if (route.late !== undefined) res.status(route.late).send("late");
        hang.leave();
      });
    }
    if (route.kind === "decision") return void res.json(req.rateLimit ?? null);
    if (route.kind === "stream") {
      res.write("o");
      return void setImmediate(() => res.end("k"));
    }
    res.status(route.kind === "status" ? route.code : 200).send("ok");
  });
  app.use((error: Error, _req: Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).send(`error: ${error.message}`);
  });
  return { ...(await listening(app.listen(0, "127.0.0.1"))), hang: hang.served, handles };
}

const expressAdapter = {
  serve: (options: Options | Options[]) => serveExpress(options),
  header: (request: unknown, name: string) => (request as Request).get(name),
  path: (request: unknown) => (request as Request).path,
};
conformance("express", expressAdapter);
features("express", expressAdapter);
leases("express", expressAdapter);

describe("express", () => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test("the middleware is a named function", () => {
    const middleware = rateLimit({ spec: { algorithm: "fixed-window", limit: 1, windowMs: 1000 } });
    expect(middleware.name).toBe("sluiceRateLimit");
  });

  test("errors from hooks (sync and async) reach Express's error handler", async () => {
    served = await serveExpress({
      spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
      clock: new ManualClock(),
      cost: (req: Request) => {
        if (req.path === "/sync") throw new Error("boom");
        return req.path === "/bad" ? 1.5 : 1;
      },
      key: async (req: Request) => {
        if (req.path === "/async") throw new Error("async boom");
        return "k";
      },
    });
    const sync = await fetch(`${served.url}/sync`);
    expect([sync.status, await sync.text()]).toEqual([500, "error: boom"]);
    const async = await fetch(`${served.url}/async`);
    expect([async.status, await async.text()]).toEqual([500, "error: async boom"]);
    const bad = await fetch(`${served.url}/bad`);
    expect(bad.status).toBe(500);
    expect(await bad.text()).toMatch(/cost must be a positive integer \(got 1.5\)/);
  });

  test("Express's own `trust proxy` setting does not make forwarded addresses trusted", async () => {
    const keys: string[] = [];
    served = await serveExpress(
      {
        spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
        onDecision: (_r: unknown, _d: unknown, _n: string, info: { key: string }) => keys.push(info.key),
      },
      (app) => app.set("trust proxy", true),
    );
    await fetch(served.url, { headers: { "x-forwarded-for": "9.9.9.9" } });
    expect(keys).toEqual(["127.0.0.1"]);
  });
});
