-- sluice: helpers shared by every algorithm twin. The build concatenates prelude.lua, one file
-- per algorithm and check.lua into ONE script (one SHA, one EVALSHA per batch of checks).
-- Every figure is computed operation by operation as src/algorithms/*.ts computes it: Lua
-- numbers are IEEE doubles like JS numbers, so the same operations give bit-identical results.

local EPSILON = 1e-6
local INF = math.huge
local MAX_SAFE_INTEGER = 9007199254740991

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
  return math.ceil(ms - EPSILON)
end

-- A decision: allowed, limit, remaining, retryAfterMs, resetMs, delayMs.
local function dec(allowed, limit, remaining, retry, reset, delay)
  return { allowed, limit, remaining, retry, reset, delay or 0 }
end

-- Exact text of a double (Redis would truncate a Lua number in a reply to an integer).
local function num(x)
  return string.format('%.17g', x)
end

-- Splits a state string of space-separated numbers.
local function nums(raw)
  local out = {}
  for word in string.gmatch(raw, '[^ ]+') do out[#out + 1] = tonumber(word) end
  return out
end

-- Every algorithm registers { params, load, save, fresh_at, step } under its one-letter code.
local ALGO = {}
