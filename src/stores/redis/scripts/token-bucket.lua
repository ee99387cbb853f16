-- Twin of src/algorithms/token-bucket.ts. State "b t": balance in thousandths of a token as of
-- time t. An absent key is a full bucket (TS: t = -Infinity, which this reproduces exactly).
ALGO.t = {
  params = function(a, b) return { C = tonumber(a), r = tonumber(b) } end,
  load = function(raw, p)
    if not raw then return { b = p.C * 1000, t = -INF } end
    local v = nums(raw)
    return { b = v[1], t = v[2] }
  end,
  save = function(s) return num(s.b) .. ' ' .. num(s.t) end,
  fresh_at = function(p, s) return s.t + (p.C * 1000 - s.b) / p.r end,
  step = function(p, state, now, cost, commit)
    local C, r = p.C, p.r
    local full = C * 1000
    local function balanceAt(t) return jmin(full, state.b + jmax(0, t - state.t) * r) end
    -- Float-noise tolerance in thousandths, never more than 1 ms of refill (as the TS step).
    local eps = jmin(EPSILON, r)
    local function whole(balance) return math.floor((balance + eps) / 1000) end
    local balance = balanceAt(now)
    local need = cost * 1000
    if cost > C then return dec(false, C, whole(balance), INF, ceilMs((full - balance) / r)) end
    if balance + eps >= need then
      local left = balance - need
      if commit then
        state.b = left
        state.t = jmax(now, state.t)
      end
      return dec(true, C, whole(left), 0, ceilMs((full - left) / r))
    end
    local retry = ceilMs((need - balance) / r)
    -- Float noise must never tell a client to come back before it can pass.
    while balanceAt(now + retry) + eps < need and retry < MAX_SAFE_INTEGER do retry = retry + 1 end
    return dec(false, C, whole(balance), retry, ceilMs((full - balance) / r))
  end,
}
