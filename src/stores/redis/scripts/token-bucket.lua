-- Twin of src/algorithms/token-bucket.ts. State: balance b in thousandths of a token as of time
-- t, stored as two packed doubles (16 bytes, exact). An absent key is a full bucket (TS:
-- t = -Infinity, which this reproduces exactly).
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

local function tb_fresh(P, S) return S.t + (P.full - S.b) / P.r end

local function tb_step(P, S, now, cost, commit)
  local C, r, full, eps = P.C, P.r, P.full, P.eps
  local b, t = S.b, S.t
  local balance = jmin(full, b + jmax(0, now - t) * r)
  local need = cost * 1000
  if cost > C then return false, floor((balance + eps) / 1000), INF, ceilMs((full - balance) / r) end
  if balance + eps >= need then
    local left = balance - need
    if commit then
      S.b = left
      S.t = jmax(now, t)
    end
    return true, floor((left + eps) / 1000), 0, ceilMs((full - left) / r)
  end
  -- A clock behind the last update refills nothing until it catches up ("no time passed"),
  -- so the hint includes that lag; the loop below then only absorbs float noise.
  local retry = ceilMs(jmax(0, t - now) + (need - balance) / r)
  -- Float noise must never tell a client to come back before it can pass.
  while jmin(full, b + jmax(0, now + retry - t) * r) + eps < need and retry < MAX_SAFE_INTEGER do
    retry = retry + 1
  end
  return false, floor((balance + eps) / 1000), retry, ceilMs((full - balance) / r)
end

ALGO.t = function(C, r)
  -- Float-noise tolerance in thousandths, never more than 1 ms of refill (as the TS step).
  return {
    C = C, r = r, full = C * 1000, eps = jmin(EPSILON, r), S = {},
    load = tb_load, step = tb_step, fresh = tb_fresh, save = tb_save, write = write,
  }
end
