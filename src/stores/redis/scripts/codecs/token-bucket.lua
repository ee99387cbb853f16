-- Storage of a token-bucket state (b, t): two packed doubles (16 bytes, exact). An absent
-- record is a full bucket (TS: t = -Infinity, which this reproduces exactly).
-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
local function tb_load(P, raw)
  local S = P.S
  if raw then
    S.b, S.t = unpack('<dd', raw)
  else
    S.b, S.t = P.full, -INF
  end
  return S
end

local function tb_save(P, S) return pack('<dd', S.b, S.t) end
