// The configuration files the docs show are loaded by the code that loads them in production:
// every ```yaml block that is an envoyproxy/ratelimit config (it starts with `domain:`) parses,
// and the README's matches as its comments say. (Blocks of other languages are not run by
// test/readme.test.ts; this is how those that sluice reads are still checked.)
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { addEnvoyText } from "../../src/config/envoy/load.ts";
import { matchDescriptor } from "../../src/config/envoy/match.ts";
import { EnvoyConfigBuilder } from "../../src/config/envoy/parse.ts";
import { ROOT } from "../cli/helpers.ts";

/** README.md and the Markdown under docs/ (not the generated docs/api). */
function pages(): string[] {
  const found = ["README.md"];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory() && path !== "docs/api") walk(path);
      else if (entry.name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found.sort();
}

/** Every ```yaml block of a page that starts with `domain:`, with its line. */
function envoyBlocks(page: string): Array<{ line: number; text: string }> {
  const text = readFileSync(join(ROOT, page), "utf8");
  return [...text.matchAll(/^```yaml\n(domain:[\s\S]*?)^```/gm)].map((m) => ({
    line: text.slice(0, m.index).split("\n").length,
    text: m[1] as string,
  }));
}

function load(text: string, file: string) {
  const builder = new EnvoyConfigBuilder();
  addEnvoyText(builder, text, file);
  return builder.config;
}

const blocks = pages().flatMap((page) => envoyBlocks(page).map((b) => ({ page, ...b })));

describe("envoy rate limit configs in the docs", () => {
  it("there are some (README and the recipes)", () => {
    expect(blocks.map((b) => b.page)).toEqual(expect.arrayContaining(["README.md", "docs/service-recipes.md"]));
  });

  for (const block of blocks) {
    it(`${block.page}:${block.line} loads`, () => {
      expect(() => load(block.text, `${block.page}:${block.line}`)).not.toThrow();
    });
  }

  it("the README's matches as its comments say", () => {
    const readme = blocks.find((b) => b.page === "README.md");
    const config = load(readme?.text ?? "", "README.md");
    const limit = (key: string, value: string) => matchDescriptor(config, "edge", [{ key, value }])?.node.limit;
    expect(limit("remote_address", "203.0.113.7")?.requestsPerUnit).toBe(20);
    expect(limit("user", "alice")?.spec).toEqual({ algorithm: "sliding-window", limit: 100, windowMs: 60_000 });
  });
});
