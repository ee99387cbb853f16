-- Twin of src/algorithms/sliding-window.ts. State: current window start w, previous and current
-- counts p and c, stored as three packed doubles (24 bytes, exact). limit*windowMs <= 2^51
-- (validated) keeps every product exact in a double.
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

local function sw_fresh(P, S)
  if S.c > 0 then return S.w + 2 * P.W elseif S.p > 0 then return S.w + P.W end
  return -INF
end

-- The first whole ms at which prev*(W - el) + (cur + cost)*W <= L*W holds, state unchanged.
local function passesAt(L, W, s, prev, cur, cost)
  local room = L - cur - cost
  if room >= 0 and prev > 0 then
    -- Within this window: need W - el <= room*W / prev.
    local elMin = W - floor((room * W) / prev)
    if elMin < W then return s + jmax(0, elMin) end
  end
  -- In the next window `cur` becomes the previous count and the current one starts at 0.
  if cur == 0 then return s + W end
  local elMin = W - floor(((L - cost) * W) / cur)
  return s + W + jmax(0, elMin)
end

local function sw_step(P, S, now, cost, commit)
  local L, W, LW = P.L, P.W, P.LW
  -- A clock that stepped back into an older window keeps the stored window.
  local s = jmax(floor(now / W) * W, S.w)
  local prev, cur = 0, 0
  if S.w == s then
    prev = S.p
    cur = S.c
  elseif S.w == s - W then
    prev = S.c
  end
  local el = jmax(0, now - s)
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
  return allowed, atLeast0(floor((LW - weighted - cur * W) / W)), retry, reset
end

ALGO.w = function(L, W)
  return {
    L = L, W = W, LW = L * W, S = {},
    load = sw_load, step = sw_step, fresh = sw_fresh, save = sw_save, write = write,
  }
end
