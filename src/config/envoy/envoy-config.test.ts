import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../core/errors.ts";
import { parseRulesText } from "../rules-file.ts";
import { addEnvoyText, loadEnvoyConfig } from "./load.ts";
import { matchDescriptor } from "./match.ts";
import { EnvoyConfigBuilder, globToRegExp } from "./parse.ts";

const dir = mkdtempSync(join(tmpdir(), "sluice-envoy-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function parse(text: string, file = "test.yaml") {
  const builder = new EnvoyConfigBuilder();
  addEnvoyText(builder, text, file);
  return builder.config;
}

function error(text: string, file = "bad.yaml"): ConfigError {
  try {
    parse(text, file);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

const entries = (...pairs: Array<[string, string]>) => pairs.map(([key, value]) => ({ key, value }));

describe("envoy config: matching", () => {
  const config = parse(`
domain: d
descriptors:
  - key: k
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: k
    value: "a*"
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: k
    value: "ab"
    rate_limit: { unit: second, requests_per_unit: 3 }
  - key: k
    value: "*z*"
    share_threshold: true
    rate_limit: { unit: second, requests_per_unit: 4 }
  - key: p
    value: v
    descriptors:
      - key: q
        rate_limit: { unit: minute, requests_per_unit: 5 }
`);
  const limitOf = (...pairs: Array<[string, string]>) =>
    matchDescriptor(config, "d", entries(...pairs))?.node.limit?.requestsPerUnit;

  it("prefers an exact value, then the first wildcard that matches, then the key alone", () => {
    expect(limitOf(["k", "ab"])).toBe(3);
    expect(limitOf(["k", "abc"])).toBe(2);
    expect(limitOf(["k", "xzy"])).toBe(4);
    expect(limitOf(["k", "zzz"])).toBe(4);
    expect(limitOf(["k", "other"])).toBe(1);
  });

  it("counts per value, except where share_threshold shares the wildcard's counter", () => {
    expect(matchDescriptor(config, "d", entries(["k", "abc"]))?.key).toBe('["abc"]');
    expect(matchDescriptor(config, "d", entries(["k", "xzy"]))?.key).toBe('["*z*"]');
    expect(matchDescriptor(config, "d", entries(["k", "other"]))?.key).toBe('["other"]');
  });

  it("applies a limit only at the request's last entry (depth must match)", () => {
    expect(limitOf(["p", "v"], ["q", "1"])).toBe(5);
    expect(limitOf(["p", "v"])).toBeUndefined();
    expect(limitOf(["p", "v"], ["q", "1"], ["r", "2"])).toBeUndefined();
    expect(limitOf(["p", "w"], ["q", "1"])).toBeUndefined();
    expect(matchDescriptor(config, "other", entries(["k", "ab"]))).toBeUndefined();
  });

  it("paths are the Go service's stats keys", () => {
    expect(matchDescriptor(config, "d", entries(["p", "v"], ["q", "1"]))?.stat).toBe("d.p_v.q");
  });

  it("`*` matches any run, everything else is literal", () => {
    expect(globToRegExp("a.*").test("a.b")).toBe(true);
    expect(globToRegExp("a.*").test("axb")).toBe(false);
    expect(globToRegExp("*").test("")).toBe(true);
    expect(globToRegExp("x*y*z").test("x1y2z")).toBe(true);
  });
});

describe("envoy config: validation names the file and the path", () => {
  it("refuses unknown keys, bad units, unlimited with a unit, bad replaces", () => {
    expect(error("domain: d\ndescriptors:\n  - key: a\n    rate: 1\n").message).toMatch(
      /^bad\.yaml: d: descriptors\[0\]: unknown key `rate`/,
    );
    expect(
      error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n").message,
    ).toMatch(/^bad\.yaml: d\.a: invalid rate limit unit .*\(got "fortnight"\)/);
    expect(
      error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unlimited: true, unit: second }\n").message,
    ).toMatch(/d\.a: should not specify a rate limit unit when unlimited/);
    expect(
      error(
        "domain: d\ndescriptors:\n  - key: a\n    rate_limit: { name: n, replaces: [{ name: n }], unit: second, requests_per_unit: 1 }\n",
      ).message,
    ).toMatch(/replaces should not contain the name of the same descriptor/);
    expect(
      error("domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: -1 }\n").field,
    ).toBe("requests_per_unit");
    expect(
      error(
        "domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: 1, algorithm: magic }\n",
      ).message,
    ).toMatch(/d\.a: unknown algorithm/);
    expect(error("descriptors: []\n").message).toMatch(/`domain` must be a non-empty string/);
    expect(error("domain: d\ndescriptors:\n  - value: x\n").message).toMatch(/descriptor has an empty key/);
    expect(error("domain: [\n").message).toMatch(/^bad\.yaml: not valid YAML/);
  });

  it("merges the files of one domain; a path defined twice is an error naming both files", async () => {
    writeFileSync(
      join(dir, "a.yaml"),
      "domain: d\ndescriptors:\n  - key: x\n    rate_limit: { unit: second, requests_per_unit: 1 }\n",
    );
    writeFileSync(
      join(dir, "b.yml"),
      "domain: d\ndescriptors:\n  - key: y\n    rate_limit: { unit: second, requests_per_unit: 2 }\n",
    );
    writeFileSync(join(dir, "notes.txt"), "not a config");
    const config = await loadEnvoyConfig(dir);
    expect(matchDescriptor(config, "d", entries(["x", "1"]))?.node.limit?.requestsPerUnit).toBe(1);
    expect(matchDescriptor(config, "d", entries(["y", "1"]))?.node.limit?.requestsPerUnit).toBe(2);
    writeFileSync(
      join(dir, "c.yaml"),
      "domain: d\ndescriptors:\n  - key: y\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n",
    );
    await expect(loadEnvoyConfig(dir)).rejects.toThrow(
      /c\.yaml: duplicate descriptor d\.y \(first defined in .*b\.yml\)/,
    );
    await expect(loadEnvoyConfig(join(dir, "missing"))).rejects.toThrow(/cannot read envoy config .*ENOENT/);
  });

  it("a rules file may carry the same documents under `domains:`; user rules may not use the envoy: namespace", () => {
    const config = parseRulesText(
      "domains:\n  - domain: d\n    descriptors:\n      - key: a\n        rate_limit: { unit: second, requests_per_unit: 1 }\n",
      "rules.yaml",
    );
    expect(config.rules).toEqual([]);
    expect(config.domains).toHaveLength(1);
    expect(() =>
      parseRulesText("domains:\n  - domain: d\n    descriptors:\n      - key: a\n        oops: 1\n", "rules.yaml"),
    ).toThrow(/^rules\.yaml: domains\[0\]: d: descriptors\[0\]: unknown key `oops`/);
    expect(() =>
      parseRulesText('rules:\n  "envoy:x": { algorithm: fixed-window, limit: 1, windowMs: 1000 }\n'),
    ).toThrow(/belong to `domains`/);
  });
});

describe("envoy config: the README's example", () => {
  it("loads, and matches as the README says", async () => {
    const { readFileSync } = await import("node:fs");
    const readme = readFileSync(join(import.meta.dirname, "../../../docs/service-recipes.md"), "utf8");
    const block = /```yaml\n(domain: edge\n[\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const config = parse(block as string, "README.md");
    const rpu = (...pairs: Array<[string, string]>) => matchDescriptor(config, "edge", entries(...pairs))?.node.limit;
    expect(rpu(["remote_address", "10.0.0.1"])?.requestsPerUnit).toBe(20);
    expect(rpu(["remote_address", "203.0.113.7"])?.requestsPerUnit).toBe(0);
    expect(rpu(["generic_key", "api"], ["user", "alice"])?.spec).toEqual({
      algorithm: "sliding-window",
      limit: 100,
      windowMs: 60_000,
    });
    expect(matchDescriptor(config, "edge", entries(["generic_key", "api"], ["user", "test-1"]))?.key).toBe(
      '["api","test-*"]',
    );
    expect(matchDescriptor(config, "edge", entries(["generic_key", "api"], ["user", "bulk-9"]))?.node.shadowMode).toBe(
      true,
    );
  });
});
