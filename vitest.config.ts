import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import the package by its public names; they resolve to the sources so a test run
    // never depends on a stale build. test/package-exports.test.ts checks the built exports map.
    alias: [
      { find: /^sluice$/, replacement: src("index.ts") },
      { find: /^sluice\/redis$/, replacement: src("stores/redis/index.ts") },
      { find: /^sluice\/cluster$/, replacement: src("stores/cluster/index.ts") },
      { find: /^sluice\/http$/, replacement: src("http/index.ts") },
      { find: /^sluice\/client$/, replacement: src("client/index.ts") },
      { find: /^sluice\/(express|fastify|hono)$/, replacement: src("http/$1.ts") },
    ],
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Redis Cluster and service suites start real processes; keep the 2-core machine unsaturated.
    maxWorkers: 2,
  },
});
