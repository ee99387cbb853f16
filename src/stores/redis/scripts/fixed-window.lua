-- Twin of src/algorithms/fixed-window.ts (storage: codecs/fixed-window.lua). State: the stored
-- window's start w and its count c.

local function fw_fresh(P, S) return S.w + P.W end

local function fw_refund(P, S, now, cost, at)
  -- Only the current window's units can come back: an older window no longer counts; with a
  -- receipt, only if the check was counted in that window too.
  local s = floor(now / P.W) * P.W
  if S.w > s then s = S.w end
  if at and floor(at / P.W) * P.W ~= S.w then return end
  if S.w == s then
    local c = S.c - cost
    if c < 0 then c = 0 end
    S.c = c
  end
end

-- A penalty (force of the TS step): the units count in the current window, past the limit.
local function fw_force(P, S, now, cost)
  local s = floor(now / P.W) * P.W
  if S.w > s then s = S.w end
  local c = 0
  if S.w == s then c = S.c end
  S.w = s
  S.c = c + cost
end

local function fw_step(P, S, now, cost, commit)
  local limit, W = P.limit, P.W
  -- A clock that stepped back into an older window keeps the stored window.
  local sw = S.w
  local s = floor(now / W) * W
  if sw > s then s = sw end
  local count = 0
  if sw == s then count = S.c end
  local e = ceil(s + W - now)
  local held = 0
  if count > 0 then held = e end
  -- A count kept from a larger limit (updateRule) may exceed this one: remaining is never negative.
  local left = limit - count
  if left < 0 then left = 0 end
  if cost > limit then return false, left, INF, held end
  if count + cost > limit then return false, left, e, held end
  local c = count + cost
  if commit then
    S.w = s
    S.c = c
  end
  -- c is 0 only for cost 0 (a composite restating an unconsumed member): then nothing is held.
  if c > 0 then return true, limit - c, 0, e end
  return true, limit, 0, 0
end

ALGO.f = function(limit, W)
  return {
    limit = limit, W = W, S = {},
    step = fw_step, refund = fw_refund, fresh = fw_fresh, force = fw_force,
    load = fw_load, save = fw_save, write = fw_write,
  }
end

-- anchor "first" (twin of firstHitWindow in src/algorithms/fixed-window.ts): the window starts
-- at the key's first counted request; the first counted request at or after its end opens the
-- next one. Same state (w, c), another code and another stored form (codecs/fixed-window.lua).

local function ff_refund(P, S, now, cost)
  -- Only a running window's units can come back; the window keeps its start.
  if now < S.w + P.W then
    local c = S.c - cost
    if c < 0 then c = 0 end
    S.c = c
  end
end

-- A penalty: past the limit in the running window, or opening the next one with the units.
local function ff_force(P, S, now, cost)
  if now < S.w + P.W then
    S.c = S.c + cost
  else
    S.w = now
    S.c = cost
  end
end

local function ff_step(P, S, now, cost, commit)
  local limit, W = P.limit, P.W
  -- A running window holds (a clock that stepped back before its start included); once it has
  -- ended, this request would open the next one, at now.
  local s, count = now, 0
  if now < S.w + W then s, count = S.w, S.c end
  local e = ceil(s + W - now)
  local held = 0
  if count > 0 then held = e end
  local left = limit - count
  if left < 0 then left = 0 end
  if cost > limit then return false, left, INF, held end
  if count + cost > limit then return false, left, e, held end
  local c = count + cost
  if commit and cost > 0 then
    S.w = s
    S.c = c
  end
  if c > 0 then return true, limit - c, 0, e end
  return true, limit, 0, 0
end

ALGO.F = function(limit, W)
  return {
    limit = limit, W = W, S = {},
    step = ff_step, refund = ff_refund, fresh = fw_fresh, force = ff_force,
    load = ff_load, save = ff_save, write = setState,
  }
end
