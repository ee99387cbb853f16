// What lets the core and the Redis store load on edge runtimes (Vercel Edge, Cloudflare
// Workers): no Node built-in anywhere in their import graphs, the Lua embedded as a module (and
// in step with the .lua files), and digests equal to node:crypto's, so key names and the
// script's SHA are the ones every other sluice process computes.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64url, hex, sha1, sha256 } from "../../src/core/digest.ts";
import { LUA_SOURCES } from "../../src/stores/redis/lua-sources.ts";
import { ROOT } from "../cli/helpers.ts";

/** Every module reachable from `entry` by relative imports, and the bare specifiers they import. */
function importGraph(entry: string): { modules: Set<string>; bare: Map<string, string> } {
  const modules = new Set<string>();
  const bare = new Map<string, string>();
  const visit = (file: string) => {
    if (modules.has(file)) return;
    modules.add(file);
    const text = readFileSync(file, "utf8");
    // Static imports and re-exports, type-only ones excluded (erased at build).
    for (const m of text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+"([^"]+)"/gms)) {
      const spec = m[1] as string;
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
      else bare.set(spec, relative(ROOT, file));
    }
    for (const m of text.matchAll(/import\(\s*"([^"]+)"\s*\)/g)) bare.set(m[1] as string, relative(ROOT, file));
  };
  visit(join(ROOT, entry));
  return { modules, bare };
}

describe("edge-ready", () => {
  for (const entry of ["src/index.ts", "src/stores/redis/index.ts"]) {
    it(`${entry} imports no Node built-in (static or dynamic)`, () => {
      const { modules, bare } = importGraph(entry);
      expect(modules.size).toBeGreaterThan(10);
      const builtins = [...bare].filter(
        ([spec]) => spec.startsWith("node:") || ["crypto", "fs", "path"].includes(spec),
      );
      expect(builtins, "Node built-ins and the module importing each").toEqual([]);
    });
  }

  it("lua-sources.ts holds exactly the .lua files (else: node scripts/embed-lua.mjs)", () => {
    const dir = join(ROOT, "src/stores/redis/scripts");
    const files: Record<string, string> = {};
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const path = join(d, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith(".lua")) files[relative(dir, path)] = readFileSync(path, "utf8");
      }
    };
    walk(dir);
    expect(Object.keys(files).length).toBeGreaterThan(10);
    expect({ ...LUA_SOURCES }, "stale: run node scripts/embed-lua.mjs").toEqual(files);
  });

  it("sha1 and sha256 equal node:crypto's on seeded texts (block edges, multi-byte characters)", () => {
    const seed = 1_801;
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: "grapheme", maxLength: 80 }),
      fc.integer({ min: 50, max: 130 }).map((n) => "x".repeat(n)),
    );
    fc.assert(
      fc.property(text, (t) => {
        expect(hex(sha1(t)), `seed ${seed}`).toBe(createHash("sha1").update(t).digest("hex"));
        expect(base64url(sha256(t)), `seed ${seed}`).toBe(createHash("sha256").update(t).digest("base64url"));
      }),
      { seed, numRuns: 400 },
    );
    const big = "sluice ".repeat(20_000);
    expect(hex(sha1(big))).toBe(createHash("sha1").update(big).digest("hex"));
  });
});
