import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runs, SEED } from "../../../test/support/seed.ts";
import { type EnvoyNode, emptyLevel } from "./model.ts";
import { globToRegExp } from "./parse.ts";
import { WildcardIndex } from "./wildcard-index.ts";

function node(key: string, value: string): EnvoyNode {
  return {
    key,
    value,
    wildcard: globToRegExp(value),
    path: `d.${key}_${value}`,
    limit: undefined,
    shadowMode: false,
    detailedMetric: false,
    shareThreshold: false,
    children: emptyLevel(),
    file: "f",
  };
}

/** What the Go service does: the first wildcard of the key, in file order, that matches. */
function linear(nodes: EnvoyNode[], key: string, value: string): EnvoyNode | undefined {
  return nodes.find((n) => n.key === key && (n.wildcard as RegExp).test(value));
}

function indexOf(nodes: EnvoyNode[]): WildcardIndex {
  const index = new WildcardIndex();
  for (const n of nodes) index.add(n);
  return index;
}

describe("WildcardIndex", () => {
  it.each([
    // [patterns in file order, value, the pattern that wins (null: none)]
    [["a*", "ab*"], "abc", "a*"],
    [["ab*", "a*"], "abc", "ab*"],
    [["*c", "a*"], "abc", "*c"],
    [["a*a"], "a", null],
    [["a*a"], "aa", "a*a"],
    [["a*b*c"], "ac", null],
    [["a*b*c"], "abc", "a*b*c"],
    [["a*b*c", "a*c"], "axc", "a*c"],
    [["*"], "", "*"],
    [["x*"], "", null],
    [["/files/*", "/files/*.png"], "/files/a.png", "/files/*"],
    [["/files/*.png", "/files/*"], "/files/a.png", "/files/*.png"],
  ])("%j against %j → %j", (patterns, value, winner) => {
    const nodes = patterns.map((p) => node("k", p));
    expect(indexOf(nodes).match("k", value)?.value ?? null).toBe(winner);
    expect(indexOf(nodes).match("other", value)).toBeUndefined();
  });

  it(`finds what a scan in file order finds (seed ${SEED})`, () => {
    const piece = fc.stringMatching(/^[ab*]{0,4}$/);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("k", "j"), piece), { minLength: 1, maxLength: 12 }),
        fc.array(fc.tuple(fc.constantFrom("k", "j"), fc.stringMatching(/^[ab]{0,6}$/)), { maxLength: 20 }),
        (defs, probes) => {
          const seen = new Set<string>();
          const nodes: EnvoyNode[] = [];
          for (const [key, p] of defs) {
            const pattern = p.includes("*") ? p : `${p}*`;
            if (seen.has(`${key}\0${pattern}`)) continue; // a duplicate is a config error
            seen.add(`${key}\0${pattern}`);
            nodes.push(node(key, pattern));
          }
          const index = indexOf(nodes);
          for (const n of nodes) expect(index.find(n.key, n.value as string)).toBe(n);
          for (const [key, value] of probes) expect(index.match(key, value)).toBe(linear(nodes, key, value));
        },
      ),
      { seed: SEED, numRuns: runs(400) },
    );
  });

  it("looks at no more patterns than the value has prefixes and suffixes, however many wildcards", () => {
    // 20,000 wildcards of one key that a value of 12 characters cannot match: a scan tests each.
    const nodes = Array.from({ length: 20_000 }, (_, i) => node("path", `/api/v${i}/*`));
    let tested = 0;
    for (const n of nodes) {
      const re = n.wildcard as RegExp;
      const test = re.test.bind(re);
      re.test = (s: string) => {
        tested++;
        return test(s);
      };
    }
    const index = indexOf(nodes);
    expect(index.match("path", "/api/v7/x")?.value).toBe("/api/v7/*");
    expect(index.match("path", "/other/thing")).toBeUndefined();
    expect(tested).toBe(0); // one star: prefix and suffix decide, no pattern is run at all
    expect(linear(nodes, "path", "/other/thing")).toBeUndefined();
    expect(tested).toBe(20_000);
  });
});
