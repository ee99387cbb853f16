// The API reference builds from the types without a single TypeDoc warning (an exported name
// without a doc comment, a broken {@link}, a public type not reachable from an entry point), and
// it covers every entry point of package.json `exports`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  exports: Record<string, string | { types?: string }>;
  scripts: Record<string, string>;
};
const typedoc = JSON.parse(readFileSync(join(ROOT, "typedoc.json"), "utf8")) as { entryPoints: string[] };

/** The source file of each public entry point: `./dist/x/y.d.ts` → `src/x/y.ts`. */
const exportedSources = Object.entries(pkg.exports)
  .filter(([name]) => name !== "./package.json")
  .map(([, target]) => (typeof target === "string" ? target : (target.types ?? "")))
  .map((types) => types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"))
  .sort();

describe("API reference (npm run docs:api)", () => {
  it("documents every entry point of package.json exports, and only those", () => {
    expect([...typedoc.entryPoints].sort()).toEqual(exportedSources);
    expect(pkg.scripts["docs:api"]).toBe("node scripts/docs-api.mjs");
  });

  // TypeDoc type-checks the whole source tree: about 20 s on an idle core, far more under load.
  it("builds with warnings treated as errors", { timeout: 300_000 }, () => {
    const out = mkdtempSync(join(tmpdir(), "sluice-api-"));
    try {
      const run = spawnSync(process.execPath, ["scripts/docs-api.mjs", "--out", out], { cwd: ROOT, encoding: "utf8" });
      const text = stripVTControlCharacters(`${run.stdout}\n${run.stderr}`);
      expect(run.status === 0 ? "built" : text).toBe("built");
      expect(text).not.toMatch(/\[warning\]/);
      expect(existsSync(join(out, "index.html"))).toBe(true);
      expect(existsSync(join(out, "classes", "index.RateLimiterService.html"))).toBe(true);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
