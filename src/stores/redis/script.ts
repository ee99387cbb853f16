/**
 * The Lua program every check runs: the prelude, the storage codecs, one twin per algorithm,
 * the twins of the ban, the rule layout and decideRule, and the batch loop, concatenated into
 * one script so a single SHA covers every rule and composite, and wrapped in a deadline guard
 * (below) that is no part of the decision.
 *
 * Redis runs a script's whole top level on every call, so every `local function` in it is
 * made again for every batch. Each algorithm's codec and twin are therefore wrapped in a
 * loader that runs the first time the call meets one of the algorithm's codes (`ALGO.<code>`,
 * see prelude.lua): a batch of fixed-window checks defines fixed-window and nothing of the
 * other four (about 40,000 fewer Redis instructions per call, measured with callgrind).
 * Where the server has Redis Functions the same program is also a function library
 * (functionLibrary below, called by FCALL: check-call.ts), whose definitions run once.
 *
 * The guard: the first argument is a deadline on the server's clock ('' for none). A call
 * that starts executing at or after it returns `{'late', serverMs}` without touching a key.
 * That is what makes "a check that timed out is never counted afterwards" hold whatever the
 * client does: a command held in a paused server's input buffer, re-sent after a reconnect or
 * retried by a Cluster client after TRYAGAIN arrives too late and is refused by Redis itself.
 * Every other reply is `{figures, serverMs}`: the decisions' figures (one JSON text, see
 * reply.ts) and the server time, from which the client learns a lower bound of the server's
 * clock offset (see nodes.ts).
 */
import { hex, sha1 } from "../../core/digest.ts";
import { LUA_SOURCES } from "./lua-sources.ts";

/** Files loaded on every call, before the algorithms: helpers shared by every part. */
const HEAD = ["prelude.lua", "codecs/record.lua"] as const;

/** One algorithm each: its storage codec (codecs/) and its twin, loaded together on first use. */
const ALGORITHMS = ["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra"] as const;

/** Files loaded on every call, after the algorithms (the entry point last; queue-script.ts shares the rest). */
export { ALGORITHMS, GUARD_HEAD, GUARD_TAIL, HEAD, lazyAlgorithm, text as luaText };

/** Files loaded on every call, after the algorithms (the entry point last). */
const TAIL = ["ban.lua", "rule.lua", "decide-rule.lua", "record-io.lua", "check.lua"] as const;

/**
 * Runs before the decision code: consumes ARGV[1] (the deadline) and refuses late calls. Its
 * TIME reading (sluice_ms) is also the now of every check without an injected one (check.lua).
 */
const GUARD_HEAD = `if redis.replicate_commands then pcall(redis.replicate_commands) end
local KEYS, ARGV = KEYS, ARGV
local sluice_deadline = ARGV[1]
table.remove(ARGV, 1)
local sluice_time = redis.call('TIME')
local sluice_ms = tonumber(sluice_time[1]) * 1000 + math.floor(tonumber(sluice_time[2]) / 1000)
if sluice_deadline ~= '' and sluice_ms >= tonumber(sluice_deadline) then return {'late', sluice_ms} end
local function sluice_decide()
`;

/** Runs after it: the decision code's reply (one JSON text, see reply.ts) and the server time. */
const GUARD_TAIL = `
end
return {sluice_decide(), sluice_ms}
`;

/** The source of the check script and its SHA-1 (what EVALSHA names it by). */
export interface CheckScript {
  readonly source: string;
  readonly sha: string;
  /** The same program as a Redis Functions library (FUNCTION LOAD), and the function's name (FCALL). */
  readonly library: string;
  readonly fn: string;
}

let loaded: CheckScript | undefined;

/**
 * The check program as a function library. A script's whole top level runs on every EVALSHA:
 * every helper is made again, ~200,000 Redis instructions per call whatever its size
 * (callgrind), so a batch of one check cost 6 times a check in a full batch. A library's
 * definitions run once, on the first call after FUNCTION LOAD (Redis 7.0 refuses access to the
 * standard libraries while a library loads, so they cannot run then), and each call runs only
 * the guard and the batch. The name carries the script's SHA-1, so processes of different
 * versions each call their own.
 */
function functionLibrary(body: string, sha: string): { library: string; fn: string } {
  const name = `sluice_${sha}`;
  const library = `#!lua name=${name}
local function sluice_define()
local KEYS, ARGV, sluice_ms
${body}
return function(keys, args)
  KEYS, ARGV = keys, args
  local deadline = table.remove(ARGV, 1)
  local time = redis.call('TIME')
  sluice_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if deadline ~= '' and sluice_ms >= tonumber(deadline) then return {'late', sluice_ms} end
  sluice_begin()
  return {sluice_batch(), sluice_ms}
end
end
local run
redis.register_function(${JSON.stringify(name).replace(/"/g, "'")}, function(keys, args)
  if run == nil then run = sluice_define() end
  return run(keys, args)
end)
`;
  return { library, fn: name };
}

/**
 * Builds the script once per process from the .lua files' text, embedded in a module
 * (lua-sources.ts, generated from scripts/) rather than read from disk: edge runtimes
 * (Workers, Vercel Edge) bundle modules and have no file system.
 */
export function checkScript(): CheckScript {
  if (loaded === undefined) {
    const body = [...HEAD.map(text), ...ALGORITHMS.map(lazyAlgorithm), ...TAIL.map(text)].join("\n");
    const source = `${GUARD_HEAD}${body}\nreturn sluice_batch()${GUARD_TAIL}`;
    const sha = hex(sha1(source));
    loaded = { source, sha, ...functionLibrary(body, sha) };
  }
  return loaded;
}

/** The embedded text of scripts/`name`. */
function text(name: string): string {
  const source = LUA_SOURCES[name as keyof typeof LUA_SOURCES];
  if (source === undefined) throw new Error(`scripts/${name} is not in lua-sources.ts: run node scripts/embed-lua.mjs`);
  return source;
}

/**
 * An algorithm's codec and twin inside a loader, registered under every code its twin defines
 * (`ALGO.<code> = ...`, read from the file itself); the metatable of ALGO runs it on a miss.
 */
function lazyAlgorithm(name: (typeof ALGORITHMS)[number], index: number): string {
  const twin = text(`${name}.lua`);
  const codes = [...twin.matchAll(/^ALGO\.(\w+) =/gm)].map((m) => m[1] as string);
  if (codes.length === 0) throw new Error(`scripts/${name}.lua registers no ALGO code`);
  const loader = `sluice_load_${index}`;
  return [
    `local function ${loader}()`,
    text(`codecs/${name}.lua`),
    twin,
    "end",
    ...codes.map((code) => `ALGO_LOADERS.${code} = ${loader}`),
  ].join("\n");
}
