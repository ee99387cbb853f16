// `npm run bench`: every benchmark, one after another, each side by side with its peers.
// The figures the README quotes come from this command. BENCH_ONLY=memory,hot-key,redis,cluster,http,serve
// picks some; each file also runs alone (see its header).
import { spawnSync } from "node:child_process";
import { loadavg } from "node:os";

const all = [
  ["memory", ["--expose-gc", "bench/memory.mjs"]],
  ["hot-key", ["bench/hot-key.mjs"]],
  ["redis", ["bench/redis.mjs"]],
  ["cluster", ["bench/cluster.mjs"]],
  ["http", ["bench/http.mjs"]],
  ["serve", ["bench/serve.mjs"]],
];
const only = process.env.BENCH_ONLY?.split(",");
let failed = 0;
for (const [name, args] of all) {
  if (only && !only.includes(name)) continue;
  console.log(
    `\n=== bench/${name} (load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}) ===`,
  );
  const { status } = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (status !== 0) {
    failed++;
    console.log(`bench/${name} exited with ${status}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
