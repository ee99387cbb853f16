-- Storage of a GCRA / leaky-bucket state (ms + ticks/den): '%d' ms when there are no ticks
-- (cheap, a bare integer to Redis, and the form earlier versions wrote for a whole-ms time),
-- 'ms+ticks/den' otherwise. A bare number that is not whole is an earlier version's
-- fractional time: read rounded up to the next ms (later, so never admitting more).
-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
local function em_load(P, raw)
  local S = P.S
  if not raw then
    S.ms, S.ticks, S.den = -INF, 0, P.den
    return S
  end
  local ms, ticks, den = match(raw, '^(.+)%+(%d+)/(%d+)$')
  if ms then
    ms, ticks, den = tonumber(ms), tonumber(ticks), tonumber(den)
    if not ms or not (ticks < den) then error('not a sluice gcra state: ' .. raw) end
    S.ms, S.ticks, S.den = ms, ticks, den
    return S
  end
  local tat = tonumber(raw)
  if not tat or tat ~= tat then error('not a sluice gcra state: ' .. raw) end
  S.ms, S.ticks, S.den = ceil(tat), 0, P.den
  return S
end

-- Whole ms as text: '%d' where exact, '%.17g' beyond 2^53 (a clock that far out).
local function em_ms(ms)
  if ms < TWO_POW_53 and ms > -TWO_POW_53 then return fmt('%d', ms) end
  return fmt('%.17g', ms)
end

-- The '+ticks/den' tail of a value, made once per call for each ticks value of this member's
-- den (P.tails, new in every call): a save then formats only the ms, one string.format where
-- it took three (each ~1,200 Redis instructions, callgrind).
local function em_tail(P, ticks, den)
  if den ~= P.den then return '+' .. fmt('%d', ticks) .. '/' .. fmt('%d', den) end
  local tail = P.tails[ticks]
  if not tail then
    tail = '+' .. fmt('%d', ticks) .. '/' .. fmt('%d', den)
    P.tails[ticks] = tail
  end
  return tail
end

local function em_save(P, S)
  if S.ticks == 0 then return em_ms(S.ms) end
  return em_ms(S.ms) .. em_tail(P, S.ticks, S.den)
end
