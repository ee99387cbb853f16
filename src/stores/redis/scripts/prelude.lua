-- sluice: helpers shared by every part of the script. script.ts concatenates prelude.lua, the
-- storage codecs (codecs/*.lua), one file per algorithm, decide-rule.lua and check.lua into ONE
-- script (one SHA, one EVALSHA per batch of checks).
-- Every figure is computed operation by operation as src/algorithms/*.ts computes it: Lua
-- numbers are IEEE doubles like JS numbers, so the same operations give bit-identical results.
-- The one difference, the sign of a zero (Lua's comparisons keep whichever operand comes
-- first, JS Math.max/min prefer +0), never reaches a state comparison (-0 == +0) and is
-- erased where figures leave the script (enc), as the TS Decision builder erases it.
--
-- Speed matters here (each batch runs this for up to 32 checks while Redis does nothing
-- else): library functions are cached in locals, steps return their figures as multiple
-- values instead of building tables, and nothing builds a closure per check.

local EPSILON = 1e-6
local INF = math.huge
local MAX_SAFE_INTEGER = 9007199254740991
local TWO_POW_53 = 9007199254740992
local floor, ceil, abs = math.floor, math.ceil, math.abs
local fmt, match, sub = string.format, string.match, string.sub
-- unpackList: Lua's own unpack (a table's items as values), before struct's takes the name.
local unpackList = unpack
local pack, unpack = struct.pack, struct.unpack
local call = redis.call
local tonumber, pcall = tonumber, pcall
-- KEYS and ARGV are the guard's locals (script.ts): the call's own, as a script or a function.

-- src/algorithms/decision.ts ceilMs: rounds a duration up, ignoring float noise below EPSILON.
local function ceilMs(ms)
  if ms <= EPSILON then return 0 end
  return ceil(ms - EPSILON)
end

-- The reply is the text of one JSON array (check.lua): one bulk string, which the client parses
-- in one call, where 4 integers per check cost it thousands of instructions each in ioredis's
-- decoder (callgrind). Every value in `out` is therefore JSON text.
-- The text of each whole figure is made once per call (TXT): a batch's figures repeat.
local TXT = {}

-- A decision figure for the reply: the one place a figure leaves the script, so the one place
-- -0 becomes +0 (x + 0, as src/algorithms/decision.ts does). Whole numbers below 2^53 (where
-- the reader's parse is exact) travel as '%d'; anything else as exact %.17g text, a JSON
-- number where it is one, else a JSON string ("inf", "-inf", "nan").
local function enc(x)
  x = x + 0
  if x % 1 == 0 and x < TWO_POW_53 and x > -TWO_POW_53 then
    local t = TXT[x]
    if not t then
      t = fmt('%d', x)
      TXT[x] = t
    end
    return t
  end
  local t = fmt('%.17g', x)
  if x ~= x or x == INF or x == -INF then return '"' .. t .. '"' end
  return t
end

local grace = 0

-- The state each call starts from: no texts cached (TXT would grow across calls of a function
-- library, whose definitions live on) and the call's expiry grace. A script (EVAL) runs this
-- file on every call and starts at once; the function library (FCALL, script.ts) defines it
-- once and starts each call with sluice_begin.
local function sluice_begin()
  TXT = {}
  grace = tonumber(ARGV[1])
end
if ARGV then sluice_begin() end
-- Longest expiry written: 2^53 ms (285,000 years); beyond it Redis would refuse the command.
local MAX_TTL = TWO_POW_53

-- Milliseconds until a record fresh at `fresh` is equivalent to an absent key: the key's expiry
-- (at least 1 ms), as '%d' text, TXT's when enc made it (as a number, Redis would format it with
-- the far slower '%.17g', and newer versions some whole numbers in exponent form PX refuses).
local function ttl(fresh, now)
  -- ceil without math.ceil's C call, as em_load does (codecs/gcra.lua); NaN and infinities pass.
  local ms = fresh - now
  local part = ms % 1
  if part > 0 then ms = ms - part + 1 end
  if not (ms >= 1) then ms = 1 end
  ms = ms + grace
  if ms > MAX_TTL then ms = MAX_TTL end
  return TXT[ms] or fmt('%d', ms)
end

-- Every algorithm registers a constructor under its one-letter code: called once per rule per
-- batch with its three parameters (unused ones are 0), it returns the member P = { <parameters>, step, refund, fresh,
-- load, save, write }. Math (algorithms/*.lua): step(P, S, now, cost, commit) -> allowed,
-- remaining, retryAfterMs when denied / delayMs when allowed, resetMs (it changes S only when
-- commit and allowed); refund(P, S, now, cost) gives units back in place; fresh(P, S) -> when
-- S equals a fresh key's state. Storage (codecs/*.lua): load(P, raw) -> state (raw false for
-- an absent record); save(P, S) -> the value to store; write(P, S, key, now, costText) stores
-- a bare rule's state after a committed check; optionally quick(P, raw), load for bareChecks'
-- first pass (check.lua) that may raise where load would not.
-- Redis runs the whole script on every call, so defining every algorithm would cost each batch
-- the closures of all of them: script.ts wraps each algorithm's codec and twin in a loader
-- (ALGO_LOADERS[code]), run the first time the batch asks ALGO for one of its codes.
local ALGO_LOADERS = {}
local ALGO = setmetatable({}, { __index = function(algo, code)
  local load = ALGO_LOADERS[code]
  if load == nil then return nil end
  load()
  return rawget(algo, code)
end })
