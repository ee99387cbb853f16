// The API reference builds from the types without a single TypeDoc warning (an exported name
// without a doc comment, a broken {@link}, a public type not reachable from an entry point), it
// covers every entry point of package.json `exports`, names each by its import path, and
// docs/api (committed, shipped) is what it builds now.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  exports: Record<string, string | { types?: string }>;
  scripts: Record<string, string>;
};
/** The import path of each entry point: `sluice`, `sluice/redis`, … */
const importPaths = Object.keys(pkg.exports)
  .filter((name) => name !== "./package.json")
  .map((name) => (name === "." ? "sluice" : `sluice/${name.slice(2)}`));
/** The devDependencies the build needs (scripts/docs-api.mjs); the test says so when they are absent. */
const missing = ["typedoc", "typedoc-plugin-markdown", "typescript-for-typedoc"].filter(
  (name) => !existsSync(join(ROOT, "node_modules", name, "package.json")),
);
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
  it.skipIf(missing.length > 0)(
    `builds with warnings treated as errors, modules named by import path, docs/api up to date${
      missing.length > 0 ? ` (skipped: devDependencies ${missing.join(", ")} not installed)` : ""
    }`,
    { timeout: 300_000 },
    () => {
      const out = mkdtempSync(join(tmpdir(), "sluice-api-"));
      try {
        const run = spawnSync(process.execPath, ["scripts/docs-api.mjs", "--out", out], {
          cwd: ROOT,
          encoding: "utf8",
        });
        const text = stripVTControlCharacters(`${run.stdout}\n${run.stderr}`);
        expect(run.status === 0 ? "built" : text).toBe("built");
        expect(text).not.toMatch(/\[warning\]/);
        const index = readFileSync(join(out, "README.md"), "utf8");
        for (const name of importPaths) expect(index).toContain(`[${name}](`);
        expect(index).not.toMatch(/\[stores\/|\[index\]/); // no source paths
        expect(readFileSync(join(out, "sluice", "redis.md"), "utf8")).toContain("### RedisStore");
        // The committed reference is this build: `npm run docs:api` after changing a public name.
        const built = files(out);
        expect(files(join(ROOT, "docs", "api"))).toEqual(built);
        for (const file of built) {
          expect(readFileSync(join(ROOT, "docs", "api", file), "utf8"), `docs/api/${file}`).toBe(
            readFileSync(join(out, file), "utf8"),
          );
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
  );
});

/** Files under `dir`, relative, sorted. */
function files(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[])
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}
