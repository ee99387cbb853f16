/**
 * scripts/lua-equivalents.json against the Lua files of this tree (docs/testing.md, "Lua"):
 * every listed equivalent names exactly one mutant, by the text of its line, so an edit that
 * changes a listed line fails here at once, not at the next mutation run (no Redis needed).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SCRIPT = path.join(ROOT, "scripts/mutate-lua.mjs");

/** One listed equivalent as the JSON holds it. */
interface Entry {
  file: string;
  text: string;
  line?: number;
  column?: number;
  occurrence?: number;
  from: string;
  to: string;
  reason: string;
}

const LIST: Entry[] = JSON.parse(readFileSync(path.join(ROOT, "scripts/lua-equivalents.json"), "utf8"));
const dir = mkdtempSync(path.join(tmpdir(), "sluice-lua-equivalents-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `mutate-lua.mjs --list` on `entries` (the real list when undefined): exit code and output. */
function list(entries?: Entry[]): { status: number | null; out: string } {
  const args = [SCRIPT, "--list"];
  if (entries !== undefined) {
    const file = path.join(dir, `list-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(entries));
    args.push("--equivalents", file);
  }
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** The list with entry `i` replaced by `change(entry)`. */
function edited(i: number, change: (e: Entry) => Entry): Entry[] {
  return LIST.map((e, j) => (j === i ? change({ ...e }) : e));
}

describe("scripts/lua-equivalents.json", () => {
  it("matches every entry to one mutant of today's .lua files", () => {
    const { status, out } = list();
    expect(out).toContain(`${LIST.length} listed equivalent (${LIST.length} entries, each matching one mutant)`);
    expect(status).toBe(0);
  });

  it("names its mutant by text, so a line hint that is off is a note, not an error", () => {
    const { status, out } = list(edited(0, (e) => ({ ...e, line: 9999 })));
    expect(out).toContain(`line hint 9999, now line ${LIST[0]?.line}`);
    expect(status).toBe(0);
  });

  it("refuses an entry whose text is on no line (the code changed), naming it", () => {
    const { status, out } = list(edited(0, (e) => ({ ...e, text: `${e.text} -- edited` })));
    expect(out).toContain(`${LIST[0]?.file}:${LIST[0]?.line} "${LIST[0]?.text} -- edited"`);
    expect(out).toContain("matches no mutant (no line has that text");
    expect(status).toBe(2);
  });

  it("refuses an entry whose text repeats in the file without an occurrence", () => {
    const i = LIST.findIndex((e) => e.occurrence !== undefined);
    const { status, out } = list(
      edited(i, (e) => {
        delete e.occurrence;
        return e;
      }),
    );
    expect(out).toMatch(/the text is on \d+ lines with that flip \(give occurrence 1\.\.\d+\)/);
    expect(status).toBe(2);
  });

  it("refuses an entry whose line has its flip twice without a column", () => {
    const i = LIST.findIndex((e) => e.column !== undefined);
    const { status, out } = list(
      edited(i, (e) => {
        delete e.column;
        return e;
      }),
    );
    expect(out).toMatch(/the flip is \d+ times on line \d+ \(give a column\)/);
    expect(status).toBe(2);
  });

  it("refuses an entry without text (the old line-only form)", () => {
    const { status, out } = list(
      edited(0, (e) => {
        const { text: _, ...rest } = e;
        return rest as Entry;
      }),
    );
    expect(out).toContain("no text (the trimmed source line of the mutant)");
    expect(status).toBe(2);
  });
});
