// PostgresStore's table under a stream of distinct keys on the database's clock: every key is
// checked once and never again, WINDOWS windows of WINDOW_MS each, as many new keys per window
// as the store decides in it. Prints the rows in the table after each window beside the keys
// seen so far: the row count should stay near the keys of the last window or two (the checks'
// bounded sweep deletes the rest, no timer), whatever the total.
// Run with: npm run build && node bench/postgres-growth.mjs
// (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test; KEYS total, default 1,000,000,
// stops early after MAX_SECONDS, default 50; WINDOW_MS default 5000; IN_FLIGHT default 64.)
import pg from "pg";
import { createLimiter } from "../dist/index.js";
import { PostgresStore } from "../dist/stores/postgres/index.js";

const URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const KEYS = Number(process.env.KEYS ?? 1_000_000);
const MAX_SECONDS = Number(process.env.MAX_SECONDS ?? 50);
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 5000);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 64);

const pool = new pg.Pool({ connectionString: URL, max: 16 });
const table = `sluice_growth_${process.pid}`;
const store = new PostgresStore({ pool, table });
const limiter = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: WINDOW_MS }, { store, name: "growth" });
const rows = async () => Number((await pool.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n);

const started = performance.now();
const deadline = started + MAX_SECONDS * 1000;
let next = 0;
let refused = 0;
let windowEnd = Math.ceil(Date.now() / WINDOW_MS) * WINDOW_MS;
const report = [];
const worker = async () => {
  while (next < KEYS && performance.now() < deadline) {
    const d = await limiter.tryAcquire(`key-${next++}`);
    if (!d.allowed) refused++;
  }
};
const sampler = (async () => {
  while (next < KEYS && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, Math.max(0, windowEnd - Date.now())));
    report.push({ seconds: ((performance.now() - started) / 1000).toFixed(1), keysSeen: next, rows: await rows() });
    windowEnd += WINDOW_MS;
  }
})();
await Promise.all([...Array.from({ length: IN_FLIGHT }, worker), sampler]);
await store.close();
const seconds = (performance.now() - started) / 1000;
console.log(
  `load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
console.table(report);
console.log(
  `${next} distinct keys in ${seconds.toFixed(1)} s (${Math.round(next / seconds)}/s), ${refused} refused (must be 0); rows at the end: ${await rows()}; largest: ${Math.max(...report.map((r) => r.rows))}`,
);
await pool.query(`DROP TABLE "${table}"`);
await pool.end();
