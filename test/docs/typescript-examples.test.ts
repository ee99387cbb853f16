// Every TypeScript block of README.md and docs/**/*.md (not the generated docs/api) type-checks
// under `strict`, as a user's project compiles it: each block is one module (`.mts`, top-level
// await allowed), `sluice/*` resolved to the sources as in tsconfig.test.json. So a doc cannot
// show TypeScript that fails where users paste it: a spec held in a `const` needs
// `satisfies RuleSpec` (or `as const`), else `algorithm` widens to `string` (TS2345), and
// `req.rateLimit` is `Decision | undefined` (TS18048 on `req.rateLimit.remaining`).
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";
import { extractBlocks } from "../support/readme-blocks.ts";

/** README.md and every Markdown file under docs/ except the generated API reference. */
function markdownFiles(): string[] {
  const found = ["README.md"];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory() && path !== "docs/api") walk(path);
      else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found;
}

const blocks = markdownFiles().flatMap((file) =>
  extractBlocks(readFileSync(join(ROOT, file), "utf8"), file)
    .filter((b) => b.language === "ts" && b.notRun === undefined)
    .map((b) => ({ ...b, file })),
);

/** Inside the repository (so `node_modules` resolves) and ignored by git. */
const DIR = join(ROOT, "test-artifacts", `ts-examples-${process.pid}`);
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const alias = (path: string) => [relative(DIR, join(ROOT, path))];

describe("the docs' TypeScript examples compile under strict", () => {
  it("finds TypeScript blocks in the guides", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(10);
  });

  it("type-checks every block (tsc --strict)", { timeout: 300_000 }, () => {
    mkdirSync(DIR, { recursive: true });
    const names = blocks.map((b, i) => {
      const name = `${String(i).padStart(3, "0")}-${b.file.replace(/[/.]/g, "_")}-${b.line}.mts`;
      writeFileSync(join(DIR, name), `${b.code}\nexport {};\n`);
      return name;
    });
    const tsconfig = {
      compilerOptions: {
        // What a user's project has: strict, Node ESM, Nest's legacy decorators.
        strict: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2022", "DOM"],
        types: ["node"],
        skipLibCheck: true,
        noEmit: true,
        experimentalDecorators: true,
        // sluice's sources (what `sluice/*` resolves to here) import with `.ts` extensions.
        allowImportingTsExtensions: true,
        rootDir: relative(DIR, ROOT),
        paths: {
          sluice: alias("src/index.ts"),
          "sluice/redis": alias("src/stores/redis/index.ts"),
          "sluice/cluster": alias("src/stores/cluster/index.ts"),
          "sluice/http": alias("src/http/index.ts"),
          "sluice/client": alias("src/client/index.ts"),
          "sluice/express": alias("src/http/express.ts"),
          "sluice/fastify": alias("src/http/fastify.ts"),
          "sluice/hono": alias("src/http/hono.ts"),
          "sluice/koa": alias("src/http/koa.ts"),
          "sluice/nest": alias("src/nest/index.ts"),
          "sluice/otel": alias("src/otel/index.ts"),
          "sluice/threads": alias("src/stores/threads/index.ts"),
          "sluice/testing": alias("src/testing/index.ts"),
          "sluice/store": alias("src/stores/author/index.ts"),
        },
      },
      files: names,
    };
    writeFileSync(join(DIR, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const run = spawnSync(process.execPath, [tsc, "-p", join(DIR, "tsconfig.json")], { cwd: ROOT, encoding: "utf8" });
    // Errors name the block's file and line in the Markdown, not the scratch module.
    const report = `${run.stdout}${run.stderr}`.replace(
      /[^\s]*?(\d{3})-[^(\s]*\.mts\((\d+),\d+\)/g,
      (_m, index, line) => {
        const b = blocks[Number(index)];
        return b === undefined ? _m : `${b.file}:${b.line + Number(line)}`;
      },
    );
    expect(run.status === 0 ? "" : report.trim()).toBe("");
  });
});
