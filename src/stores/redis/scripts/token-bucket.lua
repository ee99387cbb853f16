-- Twin of src/algorithms/token-bucket.ts (storage: codecs/token-bucket.lua). State: balance b in
-- thousandths of a token as of time t.

-- balanceAt of the TS step: min(full, b + max(0, now - t) * r).
local function tb_balanceAt(P, b, t, now)
  local gap = now - t
  if gap < 0 then gap = 0 end
  local balance = b + gap * P.r
  if balance > P.full then return P.full end
  return balance
end

-- fullAt of the TS step: rounded up to a whole ms past t (a sum at epoch magnitudes would lose
-- a sub-ulp refill time).
local function tb_fresh(P, S) return S.t + ceil((P.full - S.b) / P.r) end

local function tb_refund(P, S, now, cost, at)
  -- With a receipt, the check's tokens are taken to refill first: not given back twice.
  local give = cost * 1000
  if at then
    local since = now - at
    if since < 0 then since = 0 end
    give = give - since * P.r
    if give < 0 then give = 0 end
  end
  local b = tb_balanceAt(P, S.b, S.t, now) + give
  if b > P.full then b = P.full end
  S.b = b
  if now > S.t then S.t = now end
end

-- A penalty: the balance may go below zero and refills from there.
local function tb_force(P, S, now, cost)
  S.b = tb_balanceAt(P, S.b, S.t, now) - cost * 1000
  if now > S.t then S.t = now end
end

-- Whole tokens in a balance, never below 0 (only a penalty drives it negative).
local function tb_whole(P, balance)
  local w = floor((balance + P.eps) / 1000)
  if w < 0 then return 0 end
  return w
end

local function tb_step(P, S, now, cost, commit)
  local C, r, full, eps = P.C, P.r, P.full, P.eps
  local b, t = S.b, S.t
  local balance = tb_balanceAt(P, b, t, now)
  local need = cost * 1000
  if cost > C then return false, tb_whole(P, balance), INF, ceilMs((full - balance) / r) end
  if balance + eps >= need then
    local left = balance - need
    if commit then
      S.b = left
      if now > t then S.t = now end
    end
    return true, floor((left + eps) / 1000), 0, ceilMs((full - left) / r)
  end
  -- A clock behind the last update refills nothing until it catches up ("no time passed"),
  -- so the hint includes that lag; the loop below then only absorbs float noise.
  local lag = t - now
  if lag < 0 then lag = 0 end
  local retry = ceilMs(lag + (need - balance) / r)
  -- Float noise must never tell a client to come back before it can pass.
  while tb_balanceAt(P, b, t, now + retry) + eps < need and retry < MAX_SAFE_INTEGER do
    retry = retry + 1
  end
  return false, tb_whole(P, balance), retry, ceilMs((full - balance) / r)
end

ALGO.t = function(C, r)
  -- Float-noise tolerance in thousandths, never more than 1 ms of refill (as the TS step).
  local eps = EPSILON
  if r < eps then eps = r end
  return {
    C = C, r = r, full = C * 1000, eps = eps, S = {},
    step = tb_step, refund = tb_refund, fresh = tb_fresh, force = tb_force,
    load = tb_load, save = tb_save, write = setState,
  }
end
