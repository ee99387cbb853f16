/**
 * `--max-config-bytes` bounds the envoy config as it bounds the rules file (issue 35), all its
 * files together, at start and on reload; and a hot reload of a large config does not hold the
 * event loop (its YAML is parsed on a worker thread): /healthz keeps answering meanwhile,
 * probed from outside on fresh connections.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, serve, tempDir } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";

const tmp = tempDir();
const SMALL = "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 5 }\n";

/** A config of `n` descriptors of one domain (about 88 bytes each). */
function bigConfig(domain: string, n: number): string {
  let text = `domain: ${domain}\ndescriptors:\n`;
  for (let i = 0; i < n; i++)
    text += `  - key: k\n    value: "v${i}"\n    rate_limit: { unit: minute, requests_per_unit: ${i + 1} }\n`;
  return text;
}

/** How long one /healthz takes, on a connection of its own (no keep-alive race with the server). */
function probe(url: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    get(`${url}/healthz`, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(performance.now() - started));
    }).on("error", reject);
  });
}

beforeAll(() => {
  ensureBuilt();
});
afterAll(() => tmp.cleanup());

describe("--max-config-bytes and --envoy-config", () => {
  it("refuses to start when the envoy config files together pass the limit, naming it", async () => {
    const dir = join(tmp.dir, "two");
    mkdirSync(dir);
    writeFileSync(join(dir, "a.yaml"), SMALL);
    writeFileSync(join(dir, "b.yaml"), bigConfig("more", 20));
    const r = await run([
      "serve",
      "--port",
      "0",
      "--grpc-port",
      "0",
      "--envoy-config",
      dir,
      "--max-config-bytes",
      "1kb",
    ]);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^sluice: envoy config ".*b\.yaml" is \d+ bytes, more than the \d+ bytes left of the limit of 1024 for all envoy config files \(see --max-config-bytes\)$/,
    );
    const one = join(tmp.dir, "one.yaml");
    writeFileSync(one, bigConfig("one", 20));
    const single = await run([
      "serve",
      "--port",
      "0",
      "--grpc-port",
      "0",
      "--envoy-config",
      one,
      "--max-config-bytes",
      "1kb",
    ]);
    expect(single.status).toBe(1);
    expect(single.stderr.trim()).toMatch(
      /^sluice: envoy config ".*one\.yaml" is \d+ bytes, more than the limit of 1024 bytes/,
    );
  });

  it("on reload, a config past the limit is refused and the last good one keeps serving", async () => {
    const dir = join(tmp.dir, "reload");
    mkdirSync(dir);
    writeFileSync(join(dir, "a.yaml"), SMALL);
    const s = await serve(["--grpc-port", "0", "--envoy-config", dir, "--no-watch", "--max-config-bytes", "100kb"]);
    try {
      writeFileSync(join(dir, "b.yaml"), bigConfig("big", 3000)); // ~260 KB
      s.child.kill("SIGHUP");
      await s.waitForLog(/envoy config reload failed \(SIGHUP\): envoy config .*b\.yaml" is \d+ bytes, more than/);
      expect(await (await fetch(`${s.url}/healthz`)).json()).toMatchObject({ config: { lastReloadOk: false } });
    } finally {
      await s.stop();
    }
  });

  it("a hot reload of a ~800 KB config leaves /healthz answering (its YAML is parsed off the event loop)", async () => {
    const dir = join(tmp.dir, "hot");
    mkdirSync(dir);
    writeFileSync(join(dir, "a.yaml"), SMALL);
    const staged = join(tmp.dir, "staged.yaml");
    writeFileSync(staged, bigConfig("big", 9000));
    const s = await serve(["--grpc-port", "0", "--envoy-config", dir, "--no-watch"]);
    try {
      await probe(s.url);
      copyFileSync(staged, join(dir, "b.yaml"));
      s.child.kill("SIGHUP");
      const probes: number[] = [];
      for (const waiting = within(120_000); waiting() && !/envoy config reload/.test(s.log()); ) {
        probes.push(await probe(s.url));
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(s.log()).toMatch(/envoy config reloaded \(SIGHUP\): 2 domains/);
      const worst = Math.max(...probes);
      console.log(`/healthz during the reload: ${probes.length} probes, worst ${worst.toFixed(0)} ms`);
      // Parsing 800 KB of YAML on the event loop held it for ~20 s on this 2-core machine at load
      // 20 (the issue: 1,979 ms for 2.4 MB on an idle one); off the loop, what is left is
      // building the 9,000 rules: measured worst 6.4 s at load 20 (docs/service.md, "Bounds").
      // The bound is wide: it says the loop was not held for the parse, not how fast it is.
      expect(worst, probes.map((p) => p.toFixed(0)).join(",")).toBeLessThan(15_000);
    } finally {
      await s.stop();
    }
  });
});
