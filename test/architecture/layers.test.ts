/**
 * The layers of src/ as a rule over the import graph (docs/architecture.md draws them):
 * algorithms ← core ← stores ← limiter/service ← http, config, client ← otel, nest ← server ← cli.
 * A module may import its own area and any lower layer; never a higher one, and stores never
 * sideways except into the shared pieces every store builds on.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");

/** Rank of each area: an import may only go to the same area or a lower rank. */
const RANK: Record<string, number> = {
  algorithms: 0,
  core: 1,
  stores: 2,
  root: 3,
  // loadShed's shedder: the adapters in http drive it; it may build on the limiter (a fleet limit).
  shed: 3.5,
  http: 4,
  config: 4,
  client: 4,
  otel: 5,
  nest: 5,
  testing: 5,
  throttle: 5,
  server: 6,
  cli: 7,
};

/**
 * Store areas every store may build on; any other store is a sibling it must not import.
 * `stores/author` is the public store kit (`sluice/store`), what a third-party store builds on.
 */
const SHARED_STORES = new Set(["stores", "stores/remote", "stores/compact", "stores/memory", "stores/author"]);

/** Stores written as a third party would: they import nothing of src/ but the public store kit. */
const KIT_ONLY = ["stores/postgres"];

/** Sideways imports between areas of one rank that are part of the design (area -> file), with the reason. */
const SIDEWAYS: Record<string, string> = {
  "client -> http/problem.ts": "the client parses the problem bodies the service writes, from their one definition",
};

/** Imports into a higher layer that are part of the design (file -> area), with the reason. */
const UPWARD: Record<string, string> = {
  "index.ts -> throttle":
    "SPEC §1 exports createThrottle from `sluice` itself; the throttle builds on limiters and reads HTTP fields",
};

/** `src/http/engine.ts` → "http"; `src/stores/redis/x.ts` → "stores/redis"; `src/limiter.ts` → "root". */
function areaOf(file: string): string {
  const parts = path.relative(SRC, file).split(path.sep);
  if (parts.length === 1) return "root";
  if (parts[0] === "stores") return parts.length > 2 ? `stores/${parts[1]}` : "stores";
  return parts[0] as string;
}

function rankOf(area: string): number {
  const rank = RANK[area.startsWith("stores") ? "stores" : area];
  if (rank === undefined) throw new Error(`src/${area} has no layer: add it to RANK and docs/architecture.md`);
  return rank;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Every relative import (static, dynamic, type-only, re-export) of `file`, resolved. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import\()\s*"(\.{1,2}\/[^"]+)"/g)].map((m) =>
    path.resolve(path.dirname(file), m[1] as string),
  );
}

/** Why `from` may not import `to` (undefined when it may). */
function violation(from: string, to: string): string | undefined {
  const a = areaOf(from);
  const b = areaOf(to);
  if (a === b) return undefined;
  // The service client is a remote store in all but name: it shares the remote plumbing, not Redis's.
  if (a === "client" && b.startsWith("stores") && !SHARED_STORES.has(b)) {
    return `client imports ${b}: the client builds on the shared store plumbing only`;
  }
  const ra = rankOf(a);
  const rb = rankOf(b);
  if (UPWARD[`${path.relative(SRC, from)} -> ${b}`] !== undefined) return undefined;
  if (rb > ra) return `${a} (layer ${ra}) imports ${b} (layer ${rb}), a higher layer`;
  if (rb < ra) return undefined;
  if (a.startsWith("stores") && SHARED_STORES.has(b)) return undefined;
  if (SIDEWAYS[`${a} -> ${path.relative(SRC, to)}`] !== undefined) return undefined;
  return `${a} imports its sibling ${b} sideways`;
}

describe("the import graph", () => {
  const files = sourceFiles(SRC);
  const edges = files.flatMap((from) => importsOf(from).map((to) => ({ from, to })));

  it("sees the whole tree (a broken scan would pass vacuously)", () => {
    expect(files.length).toBeGreaterThan(150);
    expect(edges.length).toBeGreaterThan(600);
    expect(new Set(files.map(areaOf))).toContain("stores/redis");
  });

  it("has no import into a higher layer and no store importing a sibling store", () => {
    const found = edges.flatMap(({ from, to }) => {
      const why = violation(from, to);
      return why === undefined ? [] : [`${path.relative(SRC, from)} -> ${path.relative(SRC, to)}: ${why}`];
    });
    expect(found).toEqual([]);
  });

  it("keeps core free of everything but itself and the algorithms", () => {
    const core = edges.filter(({ from }) => areaOf(from) === "core");
    expect(core.length).toBeGreaterThan(10);
    expect(core.map(({ to }) => areaOf(to)).filter((a) => a !== "core" && a !== "algorithms")).toEqual([]);
  });

  it("keeps the stores written on the public kit to it (sluice/store), as a third party's would be", () => {
    const found = edges.filter(
      ({ from, to }) =>
        KIT_ONLY.includes(areaOf(from)) && areaOf(to) !== areaOf(from) && areaOf(to) !== "stores/author",
    );
    expect(edges.filter(({ from }) => KIT_ONLY.includes(areaOf(from))).length).toBeGreaterThan(5);
    expect(found.map(({ from, to }) => `${path.relative(SRC, from)} -> ${path.relative(SRC, to)}`)).toEqual([]);
    const kit = edges.filter(({ from, to }) => KIT_ONLY.includes(areaOf(from)) && areaOf(to) === "stores/author");
    expect(new Set(kit.map(({ to }) => path.relative(SRC, to)))).toEqual(new Set(["stores/author/index.ts"]));
  });

  it("catches the arrows it forbids", () => {
    const at = (p: string) => path.join(SRC, p);
    expect(violation(at("core/store.ts"), at("limiter.ts"))).toMatch(/higher layer/);
    expect(violation(at("stores/cluster/link.ts"), at("stores/redis/keys.ts"))).toMatch(/sideways/);
    expect(violation(at("client/client.ts"), at("stores/redis/breaker.ts"))).toMatch(/shared store plumbing/);
    expect(violation(at("client/client.ts"), at("stores/remote/breaker.ts"))).toBeUndefined();
    expect(violation(at("stores/redis/batch.ts"), at("stores/remote/breaker.ts"))).toBeUndefined();
    expect(violation(at("server/server.ts"), at("cli/main.ts"))).toMatch(/higher layer/);
    expect(violation(at("client/wire.ts"), at("http/problem.ts"))).toBeUndefined();
    expect(violation(at("client/wire.ts"), at("http/engine.ts"))).toMatch(/sideways/);
  });
});
