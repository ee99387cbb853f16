/**
 * The Lua program every check runs: the prelude, the storage codecs, one twin per algorithm,
 * the twins of the ban, the rule layout and decideRule, and the batch loop,
 * concatenated into one script so a single SHA covers every rule and composite.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/** The script files, in the order they are concatenated (helpers first, the entry point last). */
const FILES = [
  "prelude.lua",
  "codecs/record.lua",
  "codecs/fixed-window.lua",
  "codecs/sliding-log.lua",
  "codecs/sliding-window.lua",
  "codecs/token-bucket.lua",
  "codecs/gcra.lua",
  "fixed-window.lua",
  "sliding-log.lua",
  "sliding-window.lua",
  "token-bucket.lua",
  "gcra.lua",
  "ban.lua",
  "rule.lua",
  "decide-rule.lua",
  "check.lua",
] as const;

/** The source of the check script and its SHA-1 (what EVALSHA names it by). */
export interface CheckScript {
  readonly source: string;
  readonly sha: string;
}

let loaded: CheckScript | undefined;

/** Reads the scripts (next to this module in both src/ and dist/) once per process. */
export function checkScript(): CheckScript {
  if (loaded === undefined) {
    const source = FILES.map((name) => readFileSync(new URL(`./scripts/${name}`, import.meta.url), "utf8")).join("\n");
    loaded = { source, sha: createHash("sha1").update(source).digest("hex") };
  }
  return loaded;
}
