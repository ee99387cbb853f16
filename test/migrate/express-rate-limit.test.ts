// The express-rate-limit migration side by side: the same Express app once with
// express-rate-limit (its memory store) and once with sluice/express as
// docs/migrate/express-rate-limit.md configures it (a first-hit fixed window, the matching
// header layout), sent the same requests over loopback. Status codes, which request is refused,
// remaining counts, resets and the headers of each layout must agree; resets within the one
// second a boundary between the two middlewares' clock readings can cross. What does not agree
// is asserted as the guide states it: the draft-8 `RateLimit-Policy` partition key (`pk`), which
// sluice does not send, and the 429 body.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import express, { type RequestHandler } from "express";
import { rateLimit as peerRateLimit } from "express-rate-limit";
import { rateLimit } from "sluice/express";
import type { HeaderFormat } from "sluice/http";
import { parseList } from "structured-headers";
import { afterEach, describe, expect, test } from "vitest";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function serve(limiter: RequestHandler): Promise<string> {
  const app = express();
  app.use(limiter);
  app.get("/", (_req, res) => {
    res.send("ok");
  });
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

type Parsed = Record<string, string | number | undefined>;

/** A draft-8/11 list member's parameters (`"name";r=1;t=60` and `"name"; r=1; t=60` read the same). */
function members(value: string | null): { name: unknown; params: Parsed }[] {
  if (value === null) return [];
  return parseList(value).map(([item, params]) => ({
    name: item,
    params: Object.fromEntries([...params].map(([k, v]) => [k, typeof v === "number" ? v : String(v)])),
  }));
}

const SECONDS = new Set(["ratelimit-reset", "retry-after", "reset", "t"]);

function near(got: string | number | undefined, want: string | number | undefined, what: string): void {
  expect(Math.abs(Number(got) - Number(want)), what).toBeLessThanOrEqual(1);
}

/** `limit=2, remaining=0, reset=60` as a record. */
function draft7(value: string | null): Parsed {
  if (value === null) return {};
  return Object.fromEntries(value.split(", ").map((kv) => kv.split("=") as [string, string]));
}

const cases: { layout: string; peer: object; ours: HeaderFormat; headers: readonly string[] }[] = [
  {
    layout: "draft-6",
    peer: { standardHeaders: "draft-6", legacyHeaders: false },
    ours: "draft-6",
    headers: ["ratelimit-policy", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after"],
  },
  {
    layout: "draft-7",
    peer: { standardHeaders: "draft-7", legacyHeaders: false },
    ours: "draft-7",
    headers: ["ratelimit-policy", "ratelimit", "retry-after"],
  },
  {
    layout: "draft-8 ↔ draft-11",
    peer: { standardHeaders: "draft-8", legacyHeaders: false, identifier: "api" },
    ours: "draft-11",
    headers: ["ratelimit-policy", "ratelimit", "retry-after"],
  },
  {
    layout: "legacy",
    peer: { standardHeaders: false, legacyHeaders: true },
    ours: "legacy",
    headers: ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after"],
  },
];

describe("express-rate-limit 8 → sluice/express", () => {
  test.each(cases)("$layout: the same statuses, remaining, resets and headers", async ({ peer, ours, headers }) => {
    const limit = 3;
    const windowMs = 60_000;
    const peerUrl = await serve(peerRateLimit({ windowMs, limit, ...peer }));
    const ourUrl = await serve(
      rateLimit({
        name: "api",
        spec: { algorithm: "fixed-window", limit, windowMs, anchor: "first" },
        headers: ours,
      }),
    );
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const at = `request ${i + 1}`;
      const a = await fetch(peerUrl);
      const b = await fetch(ourUrl);
      const bodies = [await a.text(), await b.text()];
      expect(b.status, at).toBe(a.status);
      statuses.push(a.status);
      if (a.status === 429) {
        // The bodies differ, as the guide says: the peer's text, sluice's problem+json.
        expect(bodies[0]).toBe("Too many requests, please try again later.");
        expect(JSON.parse(bodies[1] as string)).toMatchObject({ status: 429 });
      }
      for (const name of headers) {
        const want = a.headers.get(name);
        const got = b.headers.get(name);
        expect(got === null, `${name} present on both, ${at}`).toBe(want === null);
        if (want === null || got === null) continue;
        if (name === "ratelimit" && ours === "draft-7") {
          const [w, g] = [draft7(want), draft7(got)];
          expect(g.limit, at).toBe(w.limit);
          expect(g.remaining, at).toBe(w.remaining);
          near(g.reset, w.reset, `reset, ${at}`);
        } else if (ours === "draft-11" && name.startsWith("ratelimit")) {
          const [[w], [g]] = [members(want), members(got)];
          expect(w, `${name} parsed, ${at}`).toBeDefined();
          if (name === "ratelimit-policy") expect(w?.params.pk, "the peer sends a partition key").toBeDefined();
          expect(g?.name, at).toEqual(w?.name);
          for (const [param, value] of Object.entries(w?.params ?? {})) {
            if (param === "pk") {
              // The partition key sluice does not send (see the guide).
              expect(g?.params.pk, at).toBeUndefined();
              continue;
            }
            if (SECONDS.has(param)) near(g?.params[param], value, `${name} ${param}, ${at}`);
            else expect(g?.params[param], `${name} ${param}, ${at}`).toBe(value);
          }
        } else if (name === "x-ratelimit-reset") {
          near(got, want, `${name}, ${at}`); // an epoch second on both
        } else if (SECONDS.has(name)) {
          near(got, want, `${name}, ${at}`);
        } else {
          expect(got, `${name}, ${at}`).toBe(want);
        }
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });
});
