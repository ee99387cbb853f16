#!/usr/bin/env node
// Builds the API reference (docs/api/, gitignored) from the types with TypeDoc, over every entry
// point of package.json `exports` (typedoc.json lists them; test/docs/api.test.ts checks the two
// agree). Warnings are errors: an exported name without a doc comment fails the build.
//
// TypeDoc supports TypeScript up to 6.0 and the package builds with TypeScript 7, whose peer
// range TypeDoc's would conflict with in one npm tree, so TypeDoc lives in tools/typedoc with its
// own exact versions and lockfile, installed here on first use (`npm ci`, registry access).
// Extra arguments go to TypeDoc, e.g. `npm run docs:api -- --out /tmp/api`.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tool = join(root, "tools", "typedoc");
const bin = join(tool, "node_modules", "typedoc", "bin", "typedoc");

/** The installed TypeDoc's version, or undefined when it is missing. */
function installedVersion() {
  const manifest = join(tool, "node_modules", "typedoc", "package.json");
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : undefined;
}

const wanted = JSON.parse(readFileSync(join(tool, "package.json"), "utf8")).devDependencies.typedoc;
if (installedVersion() !== wanted) {
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const install = spawnSync(npm, ["ci", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: tool,
    stdio: "inherit",
  });
  if (install.status !== 0) {
    console.error(`docs:api: could not install TypeDoc ${wanted} in tools/typedoc (npm ci exited ${install.status})`);
    process.exit(1);
  }
}

const run = spawnSync(
  process.execPath,
  [bin, "--options", join(root, "typedoc.json"), "--treatWarningsAsErrors", ...process.argv.slice(2)],
  { cwd: root, stdio: "inherit" },
);
process.exit(run.status ?? 1);
