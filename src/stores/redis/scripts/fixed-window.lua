-- Twin of src/algorithms/fixed-window.ts. State "w c": the stored window's start and count.
ALGO.f = {
  params = function(a, b) return { limit = tonumber(a), W = tonumber(b) } end,
  load = function(raw)
    if not raw then return { w = -INF, c = 0 } end
    local v = nums(raw)
    return { w = v[1], c = v[2] }
  end,
  save = function(s) return num(s.w) .. ' ' .. num(s.c) end,
  fresh_at = function(p, s) return s.w + p.W end,
  step = function(p, state, now, cost, commit)
    local limit, W = p.limit, p.W
    -- A clock that stepped back into an older window keeps the stored window.
    local s = jmax(math.floor(now / W) * W, state.w)
    local count = 0
    if state.w == s then count = state.c end
    local e = math.ceil(s + W - now)
    local held = 0
    if count > 0 then held = e end
    -- A count kept from a larger limit (updateRule) may exceed this one: remaining is never negative.
    local left = jmax(0, limit - count)
    if cost > limit then return dec(false, limit, left, INF, held) end
    if count + cost > limit then return dec(false, limit, left, e, held) end
    local c = count + cost
    if commit then
      state.w = s
      state.c = c
    end
    -- c is 0 only for cost 0 (a composite restating an unconsumed member): then nothing to reset.
    local reset = 0
    if c > 0 then reset = e end
    return dec(true, limit, limit - c, 0, reset)
  end,
}
