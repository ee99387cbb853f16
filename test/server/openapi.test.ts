import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENAPI } from "../../src/server/openapi.ts";
import { ROUTES } from "../../src/server/router.ts";
import { ensureBuilt, type Served, serve } from "../cli/helpers.ts";

let s: Served;
beforeAll(async () => {
  ensureBuilt();
  s = await serve(["--config", "examples/rules.yaml"]);
});
afterAll(() => s?.stop());

type Doc = {
  paths: Record<
    string,
    Record<string, { operationId: string; responses: Record<string, unknown>; security?: unknown[] }>
  >;
  components: { schemas: Record<string, unknown> };
};
const doc = OPENAPI as unknown as Doc;

/** Every `$ref` anywhere in `value`. */
function refs(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refs(v, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

describe("GET /openapi.json", () => {
  it("describes exactly the routes the router serves, with their methods and auth", () => {
    const served = [...ROUTES].map(([path, r]) => `${r.method.toLowerCase()} ${path}`).sort();
    const described = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`))
      .sort();
    expect(described).toEqual(served);
    for (const [path, r] of ROUTES) {
      const op = doc.paths[path]?.[r.method.toLowerCase()];
      // Open routes say so (`security: []`); protected ones inherit the bearer requirement and list 401.
      expect(op?.security === undefined, path).toBe(r.auth);
      expect(Object.hasOwn(op?.responses ?? {}, "401"), path).toBe(r.auth);
    }
  });

  it("is a well-formed OpenAPI 3.1 document: unique operation ids, every $ref resolves", () => {
    expect(OPENAPI.openapi).toBe("3.1.0");
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    const targets = refs(OPENAPI);
    expect(targets.length).toBeGreaterThan(5);
    for (const ref of targets) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
      expect(name !== undefined && Object.hasOwn(doc.components.schemas, name), ref).toBe(true);
    }
  });

  it("is served without a token, as the module's JSON", async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(OPENAPI)));
  });

  it("matches what the service answers: a Decision has the required fields, a problem its own", async () => {
    const schemas = doc.components.schemas as Record<string, { required: string[] }>;
    const d = (await (
      await fetch(`${s.url}/v1/check`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ rule: "login", key: "openapi" }),
      })
    ).json()) as Record<string, unknown>;
    for (const field of schemas.Decision?.required ?? []) expect(d).toHaveProperty(field);
    const p = (await (await fetch(`${s.url}/v1/forward-auth?rule=nope&key=k`)).json()) as Record<string, unknown>;
    for (const field of schemas.Problem?.required ?? []) expect(p).toHaveProperty(field);
    const h = (await (await fetch(`${s.url}/healthz`)).json()) as Record<string, unknown>;
    for (const field of schemas.Health?.required ?? []) expect(h).toHaveProperty(field);
  });
});
