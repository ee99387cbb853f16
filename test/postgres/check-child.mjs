// One process of test/postgres/processes.test.ts: `count` checks through a PostgresStore of the
// built package (dist/), `inFlight` at a time, on one key or spread over `keys` keys, on the
// database's clock. Prints {"allowed": {key: n}, "errors": [...]} as JSON on stdout.
// Usage: node check-child.mjs <url> <table> <count> <keys> <limit> <inFlight> [maxRetries]
import pg from "pg";
import { createLimiter } from "../../dist/index.js";
import { PostgresStore } from "../../dist/stores/postgres/index.js";

const [url, table, count, keys, limit, inFlight, maxRetries] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 4 });
// "throw": a failure is reported, never silently answered (it would hide a miscount).
const store = new PostgresStore({
  pool,
  table,
  onError: "throw",
  timeoutMs: 20_000,
  maxRetries: maxRetries === undefined ? undefined : Number(maxRetries),
});
const limiter = createLimiter(
  { algorithm: "fixed-window", limit: Number(limit), windowMs: 3_600_000, anchor: "first" },
  { store, name: "flood" },
);
const allowed = {};
const errors = [];
let next = 0;
const worker = async () => {
  while (next < Number(count)) {
    const key = `k${next++ % Number(keys)}`;
    try {
      if ((await limiter.tryAcquire(key)).allowed) allowed[key] = (allowed[key] ?? 0) + 1;
    } catch (error) {
      errors.push(String(error));
    }
  }
};
await Promise.all(Array.from({ length: Number(inFlight) }, worker));
await store.close();
await pool.end();
process.stdout.write(JSON.stringify({ allowed, errors }));
