-- Twin of src/algorithms/sliding-window.ts (storage: codecs/sliding-window.lua). State: current
-- window start w, previous and current counts p and c. limit*windowMs <= 2^51 (validated)
-- keeps every product exact in a double.

local function sw_fresh(P, S)
  if S.c > 0 then return S.w + 2 * P.W elseif S.p > 0 then return S.w + P.W end
  return -INF
end

local function sw_refund(P, S, now, cost, at)
  local W = P.W
  local s = floor(now / W) * W
  if S.w > s then s = S.w end
  if at then
    -- With a receipt: only the window the check was counted in, while it still weighs.
    local from = floor(at / W) * W
    if S.w == s and from == s then
      S.c = S.c - cost
      if S.c < 0 then S.c = 0 end
    elseif S.w == s and from == s - W then
      S.p = S.p - cost
      if S.p < 0 then S.p = 0 end
    elseif S.w == s - W and from == s - W then
      S.c = S.c - cost
      if S.c < 0 then S.c = 0 end
    end
    return
  end
  if S.w == s then
    -- This window's units first; what is left of the refund comes off the previous window.
    local fromCurrent = S.c
    if cost < fromCurrent then fromCurrent = cost end
    S.c = S.c - fromCurrent
    local p = S.p - (cost - fromCurrent)
    if p < 0 then p = 0 end
    S.p = p
  elseif S.w == s - W then
    -- The stored current window is now the previous one.
    local c = S.c - cost
    if c < 0 then c = 0 end
    S.c = c
  end
end

-- The first whole ms at which prev*(W - el) + (cur + cost)*W <= L*W holds, state unchanged,
-- for a check sw_step denied with cost <= L. The TS passesAt clamps elMin to [0, W] and tests
-- prev > 0 and cur > 0; after such a denial none of these can fire (doubles round monotonically,
-- and every product below is exact): the denial means prev*(W - el) > room*W with el >= 0, so
-- with room >= 0, prev > room >= 0 and elMin is in [0, W] (at W, the next window's start, as the
-- TS answers too); with room < 0, cur > L - cost >= 0 and the next window's elMin is >= 0.
local function passesAt(L, W, s, prev, cur, cost)
  local room = L - cur - cost
  if room >= 0 then
    -- Within this window: need W - el <= room*W / prev.
    local elMin = W - floor((room * W) / prev)
    return s + elMin
  end
  -- In the next window `cur` becomes the previous count and the current one starts at 0.
  local elMin = W - floor(((L - cost) * W) / cur)
  return s + W + elMin
end

-- A penalty: the units count in the current window (read as sw_step reads it), past the limit.
local function sw_force(P, S, now, cost)
  local W = P.W
  local s = floor(now / W) * W
  if S.w > s then s = S.w end
  local p, c = 0, 0
  if S.w == s then
    p, c = S.p, S.c
  elseif S.w == s - W then
    p = S.c
  end
  S.w, S.p, S.c = s, p, c + cost
end

local function sw_step(P, S, now, cost, commit)
  local L, W, LW = P.L, P.W, P.LW
  -- A clock that stepped back into an older window keeps the stored window.
  local s = floor(now / W) * W
  if S.w > s then s = S.w end
  local prev, cur = 0, 0
  if S.w == s then
    prev = S.p
    cur = S.c
  elseif S.w == s - W then
    prev = S.c
  end
  local el = now - s
  if el < 0 then el = 0 end
  local weighted = prev * (W - el)
  local allowed, retry = false, INF
  if cost <= L then
    if weighted + (cur + cost) * W <= LW then
      cur = cur + cost
      if commit then
        S.w = s
        S.p = prev
        S.c = cur
      end
      allowed, retry = true, 0
    else
      retry = ceil(passesAt(L, W, s, prev, cur, cost) - now)
    end
  end
  -- remaining(cur) and reset(cur) of the TS step, for the count after this decision.
  local reset = 0
  if cur > 0 then reset = ceil(s + 2 * W - now) elseif prev > 0 then reset = ceil(s + W - now) end
  local remaining = floor((LW - weighted - cur * W) / W)
  if remaining < 0 then remaining = 0 end
  return allowed, remaining, retry, reset
end

ALGO.w = function(L, W)
  return {
    L = L, W = W, LW = L * W, S = {},
    step = sw_step, refund = sw_refund, fresh = sw_fresh, force = sw_force,
    load = sw_load, save = sw_save, write = setState,
  }
end
