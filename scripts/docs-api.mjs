#!/usr/bin/env node
// Builds the API reference, docs/api/ (Markdown, committed and shipped in the package), with
// TypeDoc and typedoc-plugin-markdown over every entry point of package.json `exports`
// (typedoc.json lists them; test/docs/api.test.ts checks the two agree, and that docs/api is
// what this script builds now). Modules are named by import path (scripts/typedoc-import-paths.mjs).
// Warnings are errors: an exported name without a doc comment fails the build.
//
// Offline: everything comes from devDependencies. TypeDoc reads sources through TypeScript's
// compiler API, which TypeScript 7 (the package's compiler) does not have, so TypeDoc runs on
// `typescript-for-typedoc` (npm:typescript@6.0.x) through scripts/typedoc-typescript.mjs.
// Extra arguments go to TypeDoc, e.g. `npm run docs:api -- --out /tmp/api`.
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = join(root, "node_modules");
const needed = ["typedoc", "typedoc-plugin-markdown", "typescript-for-typedoc"];
const missing = needed.filter((name) => !existsSync(join(modules, name, "package.json")));
if (missing.length > 0) {
  console.error(
    `docs:api: missing devDependencies ${missing.join(", ")} (run npm ci; typescript-for-typedoc is npm:typescript@6.0.3)`,
  );
  process.exit(1);
}

const args = process.argv.slice(2);
// A fresh build of the default output: pages of names since removed must not linger.
if (!args.includes("--out")) rmSync(join(root, "docs", "api"), { recursive: true, force: true });
const run = spawnSync(
  process.execPath,
  [
    "--import",
    join(root, "scripts", "typedoc-typescript.mjs"),
    join(modules, "typedoc", "bin", "typedoc"),
    "--options",
    join(root, "typedoc.json"),
    "--treatWarningsAsErrors",
    ...args,
  ],
  { cwd: root, stdio: "inherit" },
);
process.exit(run.status ?? 1);
