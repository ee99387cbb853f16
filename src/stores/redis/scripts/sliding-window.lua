-- Twin of src/algorithms/sliding-window.ts. State "w p c": current window start, previous and
-- current counts. limit*windowMs <= 2^51 (validated) keeps every product exact in a double.
ALGO.w = {
  params = function(a, b) return { limit = tonumber(a), W = tonumber(b) } end,
  load = function(raw)
    if not raw then return { w = -INF, p = 0, c = 0 } end
    local v = nums(raw)
    return { w = v[1], p = v[2], c = v[3] }
  end,
  save = function(s) return num(s.w) .. ' ' .. num(s.p) .. ' ' .. num(s.c) end,
  fresh_at = function(p, s)
    if s.c > 0 then return s.w + 2 * p.W elseif s.p > 0 then return s.w + p.W end
    return -INF
  end,
  step = function(p, state, now, cost, commit)
    local L, W = p.limit, p.W
    local LW = L * W
    local s = jmax(math.floor(now / W) * W, state.w)
    local prev, cur = 0, 0
    if state.w == s then
      prev = state.p
      cur = state.c
    elseif state.w == s - W then
      prev = state.c
    end
    local el = jmax(0, now - s)
    local weighted = prev * (W - el)
    local function remaining(c) return jmax(0, math.floor((LW - weighted - c * W) / W)) end
    local function reset(c)
      if c > 0 then return math.ceil(s + 2 * W - now) elseif prev > 0 then return math.ceil(s + W - now) end
      return 0
    end
    -- The first whole ms at which prev*(W - el) + (cur + cost)*W <= L*W holds, state unchanged.
    local function passesAt()
      local room = L - cur - cost
      if room >= 0 and prev > 0 then
        local elMin = W - math.floor((room * W) / prev)
        if elMin < W then return s + jmax(0, elMin) end
      end
      if cur == 0 then return s + W end
      local elMin = W - math.floor(((L - cost) * W) / cur)
      return s + W + jmax(0, elMin)
    end
    if cost > L then return dec(false, L, remaining(cur), INF, reset(cur)) end
    if weighted + (cur + cost) * W <= LW then
      cur = cur + cost
      if commit then
        state.w = s
        state.p = prev
        state.c = cur
      end
      return dec(true, L, remaining(cur), 0, reset(cur))
    end
    return dec(false, L, remaining(cur), math.ceil(passesAt() - now), reset(cur))
  end,
}
