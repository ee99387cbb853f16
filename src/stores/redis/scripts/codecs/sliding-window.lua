-- Storage of a sliding-window state (w, p, c): three packed doubles (24 bytes, exact).
-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
local function sw_load(P, raw)
  local S = P.S
  if raw then
    S.w, S.p, S.c = unpack('<ddd', raw)
  else
    S.w, S.p, S.c = -INF, 0, 0
  end
  return S
end

local function sw_save(P, S) return pack('<ddd', S.w, S.p, S.c) end
