// Every relative link in README.md and docs/**/*.md leads somewhere: the file exists, it is one
// the package ships (README.md, docs/, examples/: never src/, test/ or bench/, which an installed
// copy does not have), and a `#fragment` names a heading of the target page. Links inside code
// are not links.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";

/** Where links may point: what the published package contains besides dist/. */
const SHIPPED = /^(README\.md|docs\/|examples\/|LICENSE$|CHANGELOG\.md$)/;

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

/** The Markdown without its fenced blocks. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, "");
}

/** The Markdown with fenced blocks and inline code removed: where links are. */
function prose(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page's headings (a repeated heading gets -1, -2, … as on GitHub). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe("links in README.md and docs/", () => {
  it("lead to shipped files and to headings that exist", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages()) {
      const text = readFileSync(join(ROOT, page), "utf8");
      for (const m of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const link = m[1] as string;
        if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith("//")) continue;
        checked++;
        const [path = "", fragment] = link.split("#");
        const target = path === "" ? page : normalize(join(dirname(page), decodeURIComponent(path))).replace(/\/$/, "");
        if (!SHIPPED.test(target)) {
          broken.push(`${page}: ${link} (not shipped with the package)`);
          continue;
        }
        if (!existsSync(join(ROOT, target))) {
          broken.push(`${page}: ${link} (no such file)`);
          continue;
        }
        if (fragment !== undefined && target.endsWith(".md")) {
          if (!anchors(readFileSync(join(ROOT, target), "utf8")).has(fragment)) {
            broken.push(`${page}: ${link} (no heading #${fragment} in ${target})`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  it("computes GitHub's anchors", () => {
    expect(slug("One machine, many processes (node:cluster, PM2)")).toBe("one-machine-many-processes-nodecluster-pm2");
    expect(slug("Failure policies (`onError`)")).toBe("failure-policies-onerror");
    expect(slug("Envoy (and Istio/Envoy Gateway): sluice as the rate limit service")).toBe(
      "envoy-and-istioenvoy-gateway-sluice-as-the-rate-limit-service",
    );
    expect([...anchors("# A\n## A\n```md\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
  });
});
