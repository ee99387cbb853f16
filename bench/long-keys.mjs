// A key's cost by its length: instructions per decision (callgrind, load-independent) for keys of
// 20, 340, 1,000 and 3,000 UTF-16 units on an uncapped MemoryStore, gcra, 1,000 distinct keys in
// turn. Keys up to `maxKeyBytes` (1 KB) are stored as they are; longer ones as `sha256:<digest>`,
// so their cost is the SHA-256 of the key (native where the runtime has `node:crypto`).
// Each length runs twice in a process of its own under valgrind (an N and a 3N run); the
// difference over 2N is the cost of one decision.
// Run with: npm run build && node bench/long-keys.mjs   (needs valgrind)

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const N = Number(process.env.BENCH_DECISIONS ?? 10_000);

if (process.argv[2] === "--one") {
  const { createLimiter, ManualClock, MemoryStore } = await import("../dist/index.js");
  const [len, n] = [Number(process.argv[3]), Number(process.argv[4])];
  process.on("warning", () => {});
  const limiter = createLimiter(
    { algorithm: "gcra", limit: 10, periodMs: 3_600_000 },
    { store: new MemoryStore(), clock: new ManualClock(1_800_000_000_000), name: "long" },
  );
  const keys = Array.from({ length: 1000 }, (_, i) => `k${i}:`.padEnd(len, "y"));
  for (let i = 0; i < n; i++) limiter.tryAcquire(keys[i % 1000]);
} else {
  const dir = mkdtempSync(join(tmpdir(), "long-keys-"));
  const self = fileURLToPath(import.meta.url);
  /** Instructions of one `--one` run under callgrind. */
  const count = (len, n) => {
    const out = join(dir, `cg.${len}.${n}`);
    const run = spawnSync(
      "valgrind",
      [
        "--tool=callgrind",
        `--callgrind-out-file=${out}`,
        "node",
        "--single-threaded",
        self,
        "--one",
        String(len),
        String(n),
      ],
      { encoding: "utf8" },
    );
    return Number(/Collected : (\d+)/.exec(run.stderr)?.[1] ?? Number.NaN);
  };
  const rows = [];
  for (const len of [20, 340, 1000, 3000])
    rows.push({ len, perDecision: (count(len, 3 * N) - count(len, N)) / (2 * N) });
  rmSync(dir, { recursive: true, force: true });
  console.log(`instructions per decision by key length (load ${loadavg()[0].toFixed(1)}, ${new Date().toISOString()})`);
  const base = rows[0].perDecision;
  for (const r of rows)
    console.log(
      `${String(r.len).padStart(5)} units  ${Math.round(r.perDecision).toString().padStart(8)}  ${(r.perDecision / base).toFixed(1)}×`,
    );
}
