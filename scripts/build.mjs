// Builds dist/: compiles TypeScript into a temporary folder, copies the non-TS assets (Lua,
// scripts, HTML, .proto) the runtime reads next to its modules, then swaps it in, so a test run that
// is reading dist/ never sees it half-written.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const tmp = `dist.tmp-${process.pid}`;
// The Lua files' text and the WebAssembly module's bytes as modules first (the stores read no
// files at run time).
for (const script of ["scripts/embed-lua.mjs", "scripts/embed-wasm.mjs"]) {
  const embed = spawnSync(process.execPath, [script], { stdio: "inherit" });
  if (embed.status !== 0) process.exit(embed.status || 1);
}
const tsc = spawnSync(
  process.execPath,
  ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json", "--outDir", tmp],
  { stdio: "inherit" },
);

const assets = /\.(lua|html|css|svg|proto)$/;
function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) copyAssets(path);
    else if (assets.test(name)) cpSync(path, join(tmp, relative("src", path)));
  }
}
if (!existsSync(join(tmp, "index.js"))) {
  rmSync(tmp, { recursive: true, force: true });
  process.exit(tsc.status || 1);
}
copyAssets("src");
if (existsSync(join(tmp, "cli/main.js"))) chmodSync(join(tmp, "cli/main.js"), 0o755);
const old = `dist.old-${process.pid}`;
if (existsSync("dist")) renameSync("dist", old);
renameSync(tmp, "dist");
rmSync(old, { recursive: true, force: true });
// Type errors still fail the build (CI also runs `npm run typecheck`).
process.exit(tsc.status ?? 1);
