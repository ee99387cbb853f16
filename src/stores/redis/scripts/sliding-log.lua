-- Twin of src/algorithms/sliding-log.ts.
--
-- Encoding: ONE string of packed runs, 12 bytes each (little-endian double time, uint32 count),
-- oldest first. Why not a sorted set: a ZSET needs a unique member per admitted unit (a cost-5
-- request would be 5 members) and costs a skiplist/listpack entry with member and score each;
-- the step must also read the whole live log anyway (newest entry, the (n+cost-limit)-th
-- oldest, pruning), and the log is bounded by `limit` (O(limit) is the algorithm's documented
-- price). A packed string is one allocation, one GET and one SET, and a run per admitted
-- request (not per unit), so a key that sends cost-10 requests holds a tenth of the entries.
local RUN = '<dI4'

ALGO.l = {
  params = function(a, b) return { limit = tonumber(a), W = tonumber(b) } end,
  -- ts/cs: run times and counts; live runs are h..last; n: live units.
  load = function(raw)
    local s = { ts = {}, cs = {}, h = 1, last = 0, n = 0 }
    if not raw then return s end
    local pos, len = 1, #raw
    while pos <= len do
      local t, c
      t, c, pos = struct.unpack(RUN, raw, pos)
      s.last = s.last + 1
      s.ts[s.last] = t
      s.cs[s.last] = c
      s.n = s.n + c
    end
    return s
  end,
  save = function(s)
    local out = {}
    for i = s.h, s.last do out[#out + 1] = struct.pack(RUN, s.ts[i], s.cs[i]) end
    return table.concat(out)
  end,
  fresh_at = function(p, s)
    if s.n > 0 then return s.ts[s.last] + p.W end
    return -INF
  end,
  step = function(p, s, now, cost, commit)
    local limit, W = p.limit, p.W
    -- A clock that stepped back is read as "no time passed": the newest entry's time.
    local t = now
    if s.n > 0 then t = jmax(now, s.ts[s.last]) end
    -- Expired entries never count again, so removing them changes no decision (even on peek).
    while s.n > 0 and s.ts[s.h] <= t - W do
      s.n = s.n - s.cs[s.h]
      s.h = s.h + 1
    end
    -- State kept from a larger limit (updateRule): only the newest `limit` units can matter.
    local extra = s.n - limit
    while extra > 0 do
      local c = s.cs[s.h]
      if c <= extra then
        extra = extra - c
        s.n = s.n - c
        s.h = s.h + 1
      else
        s.cs[s.h] = c - extra
        s.n = s.n - extra
        extra = 0
      end
    end
    local n = s.n
    local reset = 0
    if n > 0 then reset = math.ceil(s.ts[s.last] + W - now) end
    if cost > limit then return dec(false, limit, limit - n, INF, reset) end
    if n + cost > limit then
      -- The (n + cost - limit)-th oldest unit (0-based index below), found by walking the runs.
      local idx, i = n + cost - limit - 1, s.h
      while idx >= s.cs[i] do
        idx = idx - s.cs[i]
        i = i + 1
      end
      return dec(false, limit, limit - n, math.ceil(s.ts[i] + W - now), reset)
    end
    if commit and cost > 0 then
      if s.last >= s.h and s.ts[s.last] == t then
        s.cs[s.last] = s.cs[s.last] + cost
      else
        s.last = s.last + 1
        s.ts[s.last] = t
        s.cs[s.last] = cost
      end
      s.n = s.n + cost
    end
    -- cost 0 (a composite reporting an unconsumed member) leaves the reset where it was.
    if cost > 0 then reset = math.ceil(t + W - now) end
    return dec(true, limit, limit - n - cost, 0, reset)
  end,
}
