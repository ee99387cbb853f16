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

-- ts/cs: run times and counts, oldest first; runs h..last are stored; n: stored units.
local function sl_load(P, raw)
  local ts, cs, last, n = {}, {}, 0, 0
  if raw then
    local pos, len = 1, #raw
    while pos <= len do
      local t, c
      t, c, pos = unpack(RUN, raw, pos)
      last = last + 1
      ts[last] = t
      cs[last] = c
      n = n + c
    end
  end
  return { ts = ts, cs = cs, h = 1, last = last, n = n }
end

local function sl_save(P, S)
  local ts, cs, out = S.ts, S.cs, {}
  for i = S.h, S.last do out[#out + 1] = pack(RUN, ts[i], cs[i]) end
  return table.concat(out)
end

local function sl_fresh(P, S)
  if S.last >= S.h then return S.ts[S.last] + P.W end
  return -INF
end

local function sl_step(P, S, now, cost, commit)
  local limit, W = P.limit, P.W
  local ts, cs, last = S.ts, S.cs, S.last
  local newest = -INF
  if last >= S.h then newest = ts[last] end
  -- A clock that stepped back is read as "no time passed": the newest entry's time.
  local t = jmax(now, newest)
  -- Entries at or before t - W no longer count, and only the newest `limit` can matter (more
  -- are kept after updateRule lowers the limit). They are skipped here and removed only when
  -- a request commits: a peek or a denial at a later instant must not forget entries that a
  -- clock stepping back would still count. Skipping starts at run i, `off` units into it.
  local i, off = S.h, S.n - limit
  if off < 0 then off = 0 end
  while i <= last and off >= cs[i] do
    off = off - cs[i]
    i = i + 1
  end
  local cut = t - W
  while i <= last and ts[i] <= cut do
    off = 0
    i = i + 1
  end
  local n = -off
  for j = i, last do n = n + cs[j] end
  local reset = 0
  if n > 0 then reset = ceil(newest + W - now) end
  if cost > limit then return false, limit - n, INF, reset end
  if n + cost > limit then
    -- The (n + cost - limit)-th oldest live unit (0-based index below), found by walking the runs.
    local idx, j = n + cost - limit - 1 + off, i
    while idx >= cs[j] do
      idx = idx - cs[j]
      j = j + 1
    end
    return false, limit - n, ceil(ts[j] + W - now), reset
  end
  if commit then
    -- Forget what was skipped, then append (merging with a newest run at the same time).
    S.h = i
    if off > 0 then cs[i] = cs[i] - off end
    if cost > 0 then
      if last >= i and ts[last] == t then
        cs[last] = cs[last] + cost
      else
        last = last + 1
        S.last = last
        ts[last] = t
        cs[last] = cost
      end
    end
    S.n = n + cost
  end
  -- cost 0 (a composite reporting an unconsumed member) leaves the reset where it was.
  if cost > 0 then reset = ceil(t + W - now) end
  return true, limit - n - cost, 0, reset
end

ALGO.l = function(limit, W)
  return {
    limit = limit, W = W,
    load = sl_load, step = sl_step, fresh = sl_fresh, save = sl_save, write = write,
  }
end
