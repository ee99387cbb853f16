-- sluice: helpers shared by every algorithm twin. The build concatenates prelude.lua, one file
-- per algorithm and check.lua into ONE script (one SHA, one EVALSHA per batch of checks).
-- Every figure is computed operation by operation as src/algorithms/*.ts computes it: Lua
-- numbers are IEEE doubles like JS numbers, so the same operations give bit-identical results.
--
-- Speed matters here (each batch runs this for up to 32 checks while Redis does nothing
-- else): library functions are cached in locals, steps return their figures as multiple
-- values instead of building tables, and nothing builds a closure per check.

local EPSILON = 1e-6
local INF = math.huge
local MAX_SAFE_INTEGER = 9007199254740991
local TWO_POW_53 = 9007199254740992
local floor, ceil, abs = math.floor, math.ceil, math.abs
local fmt, match = string.format, string.match
local pack, unpack = struct.pack, struct.unpack
local call = redis.call
local tonumber, pcall, KEYS, ARGV = tonumber, pcall, KEYS, ARGV

-- JS Math.max / Math.min, including their choice between +0 and -0 (Lua keeps the first).
local function jmax(a, b)
  if a > b then return a elseif b > a then return b elseif a == 0 then return a + b end
  return a
end
local function jmin(a, b)
  if a < b then return a elseif b < a then return b elseif a == 0 then return -((-a) + (-b)) end
  return a
end

-- src/decision.ts ceilMs: rounds a duration up, ignoring float noise below EPSILON.
local function ceilMs(ms)
  if ms <= EPSILON then return 0 end
  return ceil(ms - EPSILON)
end

-- JS Math.max(0, x) for an x that is whole (or ±Infinity): +0 for every x <= 0, as JS gives.
local function atLeast0(x)
  if x > 0 then return x end
  return 0
end

-- A decision figure for the reply. Redis turns a Lua number into an integer reply by
-- truncating it, so only whole numbers below 2^53 (where the reader's parse is exact) that are
-- not -0 travel as integers; anything else (±Infinity, -0, fractions) as exact %.17g text.
local function enc(x)
  if x % 1 == 0 and x < TWO_POW_53 and x > -TWO_POW_53 and (x ~= 0 or 1 / x > 0) then return x end
  return fmt('%.17g', x)
end

local grace = tonumber(ARGV[1])
-- Longest expiry written: 2^53 ms (285,000 years); beyond it Redis would refuse the command.
local MAX_TTL = TWO_POW_53

-- Milliseconds until a state fresh at `fresh` is equivalent to an absent key: the key's expiry
-- (at least 1 ms), as '%d' text (Redis would format a number argument with the far slower
-- '%.17g', and newer versions write some whole numbers in exponent form, which PX refuses).
local function ttl(fresh, now)
  local ms = ceil(fresh - now)
  if not (ms >= 1) then ms = 1 end
  ms = ms + grace
  if ms > MAX_TTL then ms = MAX_TTL end
  return fmt('%d', ms)
end

-- How a committed single-member state is stored: SET with its expiry. (A member may do better:
-- see fixed-window.lua.) `costText` is the cost as it arrived.
local function write(P, S, key, now, costText)
  call('SET', key, P.save(P, S), 'PX', ttl(P.fresh(P, S), now))
end

-- Every algorithm registers a constructor under its one-letter code: called once per rule per
-- batch with its two parameters, it returns the member P = { <parameters>, load, step, fresh,
-- save }. load(P, raw) -> state table (raw false for an absent key); step(P, S, now, cost,
-- commit) -> allowed, remaining, retryAfterMs when denied / delayMs when allowed, resetMs
-- (it changes S only when commit and allowed); fresh(P, S) -> when S equals a fresh key's
-- state; save(P, S) -> the value to store (a string, or a number Redis writes exactly);
-- write(P, S, key, now, costText) stores a committed state.
local ALGO = {}
