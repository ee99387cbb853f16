-- Storage of a GCRA / leaky-bucket state (tat): one number, '%d' for a whole one (cheap, and
-- Redis keeps it as a bare integer), exact '%.17g' text otherwise (-inf for a fresh state).
-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
local function em_load(P, raw)
  local S = P.S
  if not raw then
    S.tat = -INF
    return S
  end
  local tat = tonumber(raw)
  if not tat then error('not a sluice gcra state: ' .. raw) end
  S.tat = tat
  return S
end

local function em_save(P, S)
  local tat = S.tat
  if tat == floor(tat) and tat < TWO_POW_53 and tat > -TWO_POW_53 then return fmt('%d', tat) end
  return fmt('%.17g', tat)
end
