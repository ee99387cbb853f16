// Runs the NestJS side-by-side test (test/migrate/nestjs-throttler.test.ts) against another Nest
// than the repository's devDependencies. NEST_MODULES names a node_modules holding that Nest
// (@nestjs/common, core, platform-express, throttler, with reflect-metadata and rxjs) and a copy
// of the built package as `sluice` (dist/ and package.json, plus its `yaml` dependency): sluice
// loads Nest with `require` from where it is installed, so it must be installed beside that
// Nest for the app and sluice's guard to share one Nest. Steps (Nest 12 shown):
//   npm run build && mkdir -p /tmp/nest12 && cd /tmp/nest12 && npm init -y
//   npm i @nestjs/core@12 @nestjs/common@12 @nestjs/platform-express@12 @nestjs/throttler reflect-metadata rxjs yaml
//   mkdir node_modules/sluice && cp -r <repo>/dist <repo>/package.json node_modules/sluice/
//   cd <repo> && NEST_MODULES=/tmp/nest12/node_modules npx vitest run -c test/migrate/vitest.nest-version.config.ts
import { existsSync } from "node:fs";
import { join } from "node:path";
import { defineConfig } from "vitest/config";

const modules = process.env.NEST_MODULES;
if (modules === undefined || !existsSync(join(modules, "sluice", "dist", "nest", "index.js"))) {
  throw new Error("NEST_MODULES must name a node_modules holding @nestjs/* and a built sluice (see the steps above)");
}
/** The packages the test imports, redirected to NEST_MODULES (exact names and subpaths). */
const redirected = [
  "@nestjs/common",
  "@nestjs/core",
  "@nestjs/platform-express",
  "@nestjs/throttler",
  "reflect-metadata",
  "rxjs",
];

export default defineConfig({
  oxc: { decorator: { legacy: true } },
  resolve: {
    alias: [
      { find: /^sluice$/, replacement: join(modules, "sluice", "dist", "index.js") },
      { find: /^sluice\/nest$/, replacement: join(modules, "sluice", "dist", "nest", "index.js") },
      ...redirected.map((name) => ({
        find: new RegExp(`^${name.replace("/", "\\/")}(/.*)?$`),
        replacement: `${join(modules, name)}$1`,
      })),
    ],
  },
  test: { include: ["test/migrate/nestjs-throttler.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 },
});
