import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  // Only the NestJS tests use decorator syntax, written as Nest users write it: legacy
  // (experimentalDecorators) semantics, which Nest needs. sluice's own sources use no
  // decorator syntax (src/nest applies decorators as function calls), so they compile under
  // either setting. tsconfig.test.json sets experimentalDecorators to match.
  oxc: { decorator: { legacy: true } },
  resolve: {
    // Tests import the package by its public names; they resolve to the sources so a test run
    // never depends on a stale build. test/package-exports.test.ts checks the built exports map.
    alias: [
      { find: /^sluice$/, replacement: src("index.ts") },
      { find: /^sluice\/redis$/, replacement: src("stores/redis/index.ts") },
      { find: /^sluice\/cluster$/, replacement: src("stores/cluster/index.ts") },
      { find: /^sluice\/http$/, replacement: src("http/index.ts") },
      { find: /^sluice\/client$/, replacement: src("client/index.ts") },
      { find: /^sluice\/(express|fastify|hono|koa)$/, replacement: src("http/$1.ts") },
      { find: /^sluice\/nest$/, replacement: src("nest/index.ts") },
      { find: /^sluice\/otel$/, replacement: src("otel/index.ts") },
      { find: /^sluice\/threads$/, replacement: src("stores/threads/index.ts") },
      { find: /^sluice\/postgres$/, replacement: src("stores/postgres/index.ts") },
      { find: /^sluice\/testing$/, replacement: src("testing/index.ts") },
      { find: /^sluice\/store$/, replacement: src("stores/author/index.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Seeds every fast-check property from SLUICE_SEED (or a fixed default): a printed seed replays.
    setupFiles: ["test/support/setup-seed.ts"],
    // A bound on work, not a speed claim: many tests start real processes (CLI, servers, Redis),
    // which take seconds each when two suites share this 2-core machine with other work.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Redis Cluster and service suites start real processes; keep the 2-core machine unsaturated.
    maxWorkers: 2,
  },
});
