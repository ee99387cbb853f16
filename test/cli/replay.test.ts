import { classify } from "sluice";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run, runIn, tempDir } from "./helpers.ts";

const tmp = tempDir();
beforeAll(ensureBuilt);
afterAll(tmp.cleanup);

const PINGS = [0, 300, 600, 999, 1000, 1300, 1999, 2000];
const SEED_SPEC = '{"type":"sliding","limit":2,"windowMs":1000}';

describe("sluice replay", () => {
  it("reproduces the seed's two pings per second from stdin, one decision per line", async () => {
    const r = await run(["replay", "--spec", SEED_SPEC], `${PINGS.join("\n")}\n`);
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(PINGS.length);
    const verdicts = lines.map((l) => l.split("\t")[2] === "allowed");
    expect(verdicts).toEqual(classify(PINGS, { type: "sliding", limit: 2, windowMs: 1000 }));
    expect(verdicts).toEqual([true, true, false, false, true, true, false, true]);
    expect(lines[2]).toBe("600\tdefault\tdenied\tremaining=0\tretryAfterMs=400");
    expect(r.stderr).toContain("8 events, 5 allowed, 3 denied");
  });

  it("reads CSV files with keys and costs, a header and comments; --json writes Infinity as null", async () => {
    const path = tmp.file(
      "trace.csv",
      "timestamp,key,cost\n# a comment\n0,alice,1\n10,bob,3\n20,alice,5\n\n30,alice\n",
    );
    const r = await run([
      "replay",
      path,
      "--json",
      "--spec",
      "{algorithm: token-bucket, capacity: 3, refillPerSecond: 1/s}",
    ]);
    expect(r.status).toBe(0);
    const rows = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(rows.map((x) => [x.at, x.key, x.cost, x.allowed])).toEqual([
      [0, "alice", 1, true],
      [10, "bob", 3, true],
      [20, "alice", 5, false],
      [30, "alice", 1, true],
    ]);
    expect(rows[2].retryAfterMs).toBeNull();
    expect(rows[3].remaining).toBe(1);
  });

  it("reads JSON lines and a rule from a rules file with a tier", async () => {
    const config = tmp.file(
      "rules.yaml",
      "rules:\n  api:\n    spec: { algorithm: fixed-window, limit: 1, windowMs: 1s }\n    tiers:\n      pro: { algorithm: fixed-window, limit: 2, windowMs: 1s }\n",
    );
    const input = '{"at": 0, "key": "k"}\n{"at": 1, "key": "k"}\n{"at": 2, "key": "k"}\n';
    const base = await run(["replay", "--rule", "api", "--config", config], input);
    expect(base.stdout.split("\n").filter((l) => l.includes("allowed"))).toHaveLength(1);
    const pro = await run(["replay", "--rule", "api", "--config", config, "--tier", "pro"], input);
    expect(pro.stdout.split("\n").filter((l) => l.includes("\tallowed"))).toHaveLength(2);
  });

  it("names the line number of a malformed line and exits 1", async () => {
    const r = await run(["replay", "--spec", SEED_SPEC], "0\n100\nnot-a-time\n");
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/stdin:3: expected "timestamp\[,key\[,cost\]\]"/);
    const bad = await run(["replay", "--spec", SEED_SPEC], '0\n{"at": 5, "cost": 0}\n');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("stdin:2: cost must be a positive integer (got 0)");
  });

  it("exits 1 on an unreadable file or an invalid spec, naming the field", async () => {
    const missing = await run(["replay", "/nonexistent/trace.csv", "--spec", SEED_SPEC]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('cannot read "/nonexistent/trace.csv" (ENOENT)');
    const spec = await run(["replay", "--spec", '{"type":"sliding","limit":1.5,"windowMs":1000}'], "0\n");
    expect(spec.status).toBe(1);
    expect(spec.stderr).toContain("limit must be a positive integer (got 1.5)");
  });

  it("exits 2 on usage errors and prints help with 0", async () => {
    // In-process (runIn): seven child processes took most of the timeout on a loaded machine.
    expect((await runIn(["replay", "--bogus"])).status).toBe(2);
    const none = await runIn(["replay"], "0\n");
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("--spec");
    expect((await runIn(["nope"])).status).toBe(2);
    expect((await runIn(["constructor"])).status).toBe(2);
    const help = await runIn(["replay", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("Usage: sluice replay");
    for (const cmd of ["serve", "compare", "check-config"]) {
      const h = await runIn([cmd, "--help"]);
      expect(h.status).toBe(0);
      expect(h.stdout).toContain(`Usage: sluice ${cmd}`);
    }
    // The bin itself maps a usage error to status 2.
    expect((await run(["nope"])).status).toBe(2);
  });
});

describe("CLI output escapes what a trace or config chose", () => {
  it("replay prints keys with control characters escaped: no forged fields, lines or terminal escapes", async () => {
    const forged = "evil\tallowed\tremaining=99\n1\tvictim\u001b[2J\u009b31m\u202e";
    const r = await runIn(
      ["replay", "--spec", SEED_SPEC],
      `${JSON.stringify({ at: 0, key: forged })}\n{"at":1,"key":"a\\\\b"}\n`,
    );
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]?.split("\t")).toHaveLength(5);
    expect(lines[0]).toBe(
      "0\tevil\\tallowed\\tremaining=99\\n1\\tvictim\\u001b[2J\\u009b31m\\u202e\tallowed\tremaining=1\tretryAfterMs=0",
    );
    expect(lines[1]).toBe("1\ta\\\\b\tallowed\tremaining=1\tretryAfterMs=0");
    const json = await runIn(["replay", "--spec", SEED_SPEC, "--json"], `${JSON.stringify({ at: 0, key: forged })}\n`);
    for (const c of ["\u001b", "\u009b", "\u202e"]) expect(json.stdout).not.toContain(c);
    expect(JSON.parse(json.stdout).key).toBe(forged);
  });

  it("check-config prints rule and tier names escaped", async () => {
    const path = tmp.file(
      "names.json",
      JSON.stringify({
        rules: {
          "api\u001b[31m": {
            spec: { algorithm: "fixed-window", limit: 5, windowMs: 1000 },
            tiers: { "pro\nforged: 1 per year": { algorithm: "fixed-window", limit: 9, windowMs: 1000 } },
          },
        },
      }),
    );
    const r = await runIn(["check-config", path]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain("\u001b");
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(r.stdout).toContain("api\\u001b[31m [tier pro\\nforged: 1 per year]: ");
  });
});
