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
  -- The bare form first: one tonumber, where the pattern's failed match cost as much again
  -- (callgrind). No string with a '/' is a number, so the order decides nothing.
  local tat = tonumber(raw)
  if tat then
    if tat ~= tat then error('not a sluice gcra state: ' .. raw) end
    -- ceil(tat) without math.ceil's C call (~500 Redis instructions, callgrind): for tat >= 0,
    -- tat % 1 is tat - floor(tat), exactly, so tat - part + 1 is floor(tat) + 1; whole and
    -- infinite values (part 0, or NaN) stay as they are; a negative one takes ceil.
    local part = tat % 1
    if part > 0 then
      if tat >= 0 then tat = tat - part + 1 else tat = ceil(tat) end
    end
    S.ms, S.ticks, S.den = tat, 0, P.den
    return S
  end
  local ms, ticks, den = match(raw, '^(.+)%+(%d+)/(%d+)$')
  if not ms then error('not a sluice gcra state: ' .. raw) end
  ms, ticks, den = tonumber(ms), tonumber(ticks), tonumber(den)
  if not ms or not (ticks < den) then error('not a sluice gcra state: ' .. raw) end
  S.ms, S.ticks, S.den = ms, ticks, den
  return S
end

-- The '+ticks/den' tail of a value.
local function em_tail(ticks, den)
  return '+' .. fmt('%d', ticks) .. '/' .. fmt('%d', den)
end

-- One function with no further Lua call on the way (two calls cost 400-700 Redis instructions
-- per check, callgrind): the ms as '%d' text where exact, '%.17g' beyond 2^53 (a clock that far
-- out); the tail made once for each ticks value of this member's den (P.tails, kept as long as
-- the compiled rule: check.lua; at most 1,024 texts), so a save formats only the ms, one
-- string.format where it took three (each ~1,200 Redis instructions).
local function em_save(P, S)
  local ms, ticks, den = S.ms, S.ticks, S.den
  local text
  if ms < TWO_POW_53 and ms > -TWO_POW_53 then text = fmt('%d', ms) else text = fmt('%.17g', ms) end
  if ticks == 0 then return text end
  if den ~= P.den then return text .. em_tail(ticks, den) end
  local tail = P.tails[ticks]
  if not tail then
    tail = em_tail(ticks, den)
    if P.tailCount >= 1024 then P.tails, P.tailCount = {}, 0 end
    P.tails[ticks], P.tailCount = tail, P.tailCount + 1
  end
  return text .. tail
end

-- A bare rule's write after an admitted check (P.write): setState (codecs/record.lua) with the
-- member's fresh (em_fresh), the expiry (ttl, prelude.lua) and the common whole-ms value
-- (em_save) written out inline, since each Lua call costs Redis hundreds of instructions per
-- check (callgrind). The same value and expiry as setState writes; any other value goes through em_save.
local function em_store(P, S, key, now)
  local ms, ticks = S.ms, S.ticks
  local fresh = ms
  if ticks > 0 then fresh = ms + 1 end
  local ttlMs = fresh - now
  local part = ttlMs % 1
  if part > 0 then ttlMs = ttlMs - part + 1 end
  if not (ttlMs >= 1) then ttlMs = 1 end
  ttlMs = ttlMs + grace
  if ttlMs > MAX_TTL then ttlMs = MAX_TTL end
  local value
  if ticks == 0 and ms < TWO_POW_53 and ms > -TWO_POW_53 then value = fmt('%d', ms) else value = em_save(P, S) end
  -- The expiry's text goes into TXT (enc's own text of that whole figure): with Redis TIME and
  -- no grace it is this check's resetMs, which the reply then takes from TXT instead of
  -- formatting it again (one string.format, ~1,200 Redis instructions per check, callgrind).
  local ttlText = TXT[ttlMs]
  if not ttlText then
    ttlText = fmt('%d', ttlMs)
    if ttlMs < TWO_POW_53 then TXT[ttlMs] = ttlText end
  end
  call('PSETEX', key, ttlText, value)
end

-- em_load on the hot path (check.lua's bareChecks) of a member whose interval is whole ms
-- (den 1), whose records are always bare numbers: the text is read by arithmetic, one strtod,
-- where tonumber makes two (lua_isnumber, then lua_tonumber: ~750 Redis instructions each,
-- callgrind). Any other text (an older version's tail form, a foreign value) makes the
-- arithmetic raise; bareChecks' caller then decides that check again through em_load, which
-- reads or reports it as before (check.lua).
local function em_quick(P, raw)
  local S = P.S
  if not raw then
    S.ms, S.ticks, S.den = -INF, 0, P.den
    return S
  end
  local tat = raw + 0
  if tat ~= tat then error('not a sluice gcra state: ' .. raw) end
  local part = tat % 1
  if part > 0 then
    if tat >= 0 then tat = tat - part + 1 else tat = ceil(tat) end
  end
  S.ms, S.ticks, S.den = tat, 0, P.den
  return S
end
