/**
 * The Lua program every check runs: the prelude, the storage codecs, one twin per algorithm,
 * the twins of the ban, the rule layout and decideRule, and the batch loop, concatenated into
 * one script so a single SHA covers every rule and composite, and wrapped in a deadline guard
 * (below) that is no part of the decision.
 *
 * The guard: the first argument is a deadline on the server's clock ('' for none). A call
 * that starts executing at or after it returns `{'late', serverMs}` without touching a key.
 * That is what makes "a check that timed out is never counted afterwards" hold whatever the
 * client does: a command held in a paused server's input buffer, re-sent after a reconnect or
 * retried by a Cluster client after TRYAGAIN arrives too late and is refused by Redis itself.
 * Every other reply gets the server time (ms) appended, from which the client learns a lower
 * bound of the server's clock offset (see nodes.ts).
 */
import { hex, sha1 } from "../../core/digest.ts";
import { LUA_SOURCES } from "./lua-sources.ts";

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

/** Runs before the decision code: consumes ARGV[1] (the deadline) and refuses late calls. */
const GUARD_HEAD = `if redis.replicate_commands then pcall(redis.replicate_commands) end
local sluice_deadline = ARGV[1]
table.remove(ARGV, 1)
local sluice_time = redis.call('TIME')
local sluice_ms = tonumber(sluice_time[1]) * 1000 + math.floor(tonumber(sluice_time[2]) / 1000)
if sluice_deadline ~= '' and sluice_ms >= tonumber(sluice_deadline) then return {'late', sluice_ms} end
local function sluice_decide()
`;

/** Runs after it: the decision code's reply, with the server time appended. */
const GUARD_TAIL = `
end
local sluice_out = sluice_decide()
sluice_out[#sluice_out + 1] = sluice_ms
return sluice_out
`;

/** The source of the check script and its SHA-1 (what EVALSHA names it by). */
export interface CheckScript {
  readonly source: string;
  readonly sha: string;
}

let loaded: CheckScript | undefined;

/**
 * Builds the script once per process from the .lua files' text, embedded in a module
 * (lua-sources.ts, generated from scripts/) rather than read from disk: edge runtimes
 * (Workers, Vercel Edge) bundle modules and have no file system.
 */
export function checkScript(): CheckScript {
  if (loaded === undefined) {
    const body = FILES.map((name) => {
      const text = LUA_SOURCES[name];
      if (text === undefined)
        throw new Error(`scripts/${name} is not in lua-sources.ts: run node scripts/embed-lua.mjs`);
      return text;
    }).join("\n");
    const source = GUARD_HEAD + body + GUARD_TAIL;
    loaded = { source, sha: hex(sha1(source)) };
  }
  return loaded;
}
