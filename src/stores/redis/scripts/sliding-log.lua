-- Twin of src/algorithms/sliding-log.ts (storage: codecs/sliding-log.lua). The TS ring buffer
-- of timestamps is held here as runs: ts[j] a time, cs[j] how many units were admitted at it,
-- oldest first, runs h..last live, n units in them (the same sequence of times, grouped).

local function sl_fresh(P, S)
  if S.last >= S.h then return S.ts[S.last] + P.W end
  return -INF
end

local function sl_refund(P, S, now, cost, at)
  local ts, cs, h, j = S.ts, S.cs, S.h, S.last
  local t = now
  if j >= h and ts[j] > t then t = ts[j] end
  if at then
    -- With a receipt: only units logged at that instant, while they still count.
    if not (at > t - P.W) then return end
    for r = h, j do
      if ts[r] == at then
        local take = cost
        if take > cs[r] then take = cs[r] end
        cs[r] = cs[r] - take
        S.n = S.n - take
        if cs[r] == 0 then
          -- Close the gap: the runs after it move down one.
          for q = r, j - 1 do
            ts[q] = ts[q + 1]
            cs[q] = cs[q + 1]
          end
          ts[j] = nil
          cs[j] = nil
          S.last = j - 1
        end
        return
      end
    end
    return
  end
  -- The newest entries still counting go first (the ones this request added).
  local cut, k = t - P.W, 0
  while k < cost and j >= h and ts[j] > cut do
    local take = cost - k
    if take > cs[j] then take = cs[j] end
    k = k + take
    cs[j] = cs[j] - take
    if cs[j] == 0 then j = j - 1 end
  end
  S.last = j
  S.n = S.n - k
end

-- A penalty: at most `limit` units are kept (only the newest `limit` ever matter), so the oldest
-- go until `limit - take` remain, then `take` units are appended at max(now, newest). On leases
-- (P.exact) held leases are never pushed out: only the expired go (force of the TS).
local function sl_force(P, S, now, cost)
  local limit, ts, cs = P.limit, S.ts, S.cs
  local t = now
  if S.last >= S.h and ts[S.last] > t then t = ts[S.last] end
  local take = cost
  if take > limit then take = limit end
  if P.exact then
    local cut = t - P.W
    while S.h <= S.last and ts[S.h] <= cut do
      S.n = S.n - cs[S.h]
      S.h = S.h + 1
    end
  else
    local drop = S.n - (limit - take)
    while drop > 0 and S.h <= S.last do
      local c = cs[S.h]
      if c <= drop then
        drop = drop - c
        S.n = S.n - c
        S.h = S.h + 1
      else
        cs[S.h] = c - drop
        S.n = S.n - drop
        drop = 0
      end
    end
  end
  local last = S.last
  if last >= S.h and ts[last] == t then
    cs[last] = cs[last] + take
  else
    -- Lands at or past h: every state has h <= last + 1, and the drop moves h at most that far.
    last = last + 1
    S.last = last
    ts[last] = t
    cs[last] = take
  end
  S.n = S.n + take
end

-- liveLog of the TS: the log's reading at `now`. Returns t (now, or the newest entry's time when
-- the clock stepped back), the newest entry, and where the counting units start (run i, `off`
-- units into it) and how many count (n). Entries at or before t - W no longer count, and for a
-- sliding log only the newest `limit` can matter (more are kept after updateRule lowers the
-- limit); every unexpired lease (P.exact) counts, also past a lowered limit.
local function sl_live(P, S, now)
  local limit, ts, cs, last = P.limit, S.ts, S.cs, S.last
  local newest = -INF
  if last >= S.h then newest = ts[last] end
  -- A clock that stepped back is read as "no time passed": the newest entry's time.
  local t = now
  if newest > t then t = newest end
  local i, off = S.h, S.n - limit
  if off < 0 or P.exact then off = 0 end
  while i <= last and off >= cs[i] do
    off = off - cs[i]
    i = i + 1
  end
  local cut = t - P.W
  while i <= last and ts[i] <= cut do
    off = 0
    i = i + 1
  end
  local n = -off
  for j = i, last do n = n + cs[j] end
  return t, newest, i, off, n
end

-- Forgets what no longer counts (commitLog of the TS): runs before i, `off` units of run i.
local function sl_drop(S, i, off, n)
  S.h = i
  if off > 0 then S.cs[i] = S.cs[i] - off end
  S.n = n
end

-- Places `cost` units at time `at` in order (place of the TS): appended, merging with a newest
-- run at the same time, when `at` is the newest (always, for a sliding log); else inserted after
-- the runs at or before it (a lease logged at its own receipt).
local function sl_place(S, at, cost)
  local ts, cs, last = S.ts, S.cs, S.last
  local j = last
  while j >= S.h and ts[j] > at do j = j - 1 end
  if j >= S.h and ts[j] == at then
    cs[j] = cs[j] + cost
  else
    for q = last, j + 1, -1 do
      ts[q + 1] = ts[q]
      cs[q + 1] = cs[q]
    end
    ts[j + 1] = at
    cs[j + 1] = cost
    S.last = last + 1
  end
  S.n = S.n + cost
end

local function sl_step(P, S, now, cost, commit)
  local limit, W = P.limit, P.W
  local ts, cs = S.ts, S.cs
  -- Skipped entries are removed only when a request commits: a peek or a denial at a later
  -- instant must not forget entries that a clock stepping back would still count.
  local t, newest, i, off, n = sl_live(P, S, now)
  local reset = 0
  if n > 0 then reset = ceil(newest + W - now) end
  -- More than `limit` leases are in flight only after updateRule lowered the limit: none is free.
  local free = limit - n
  if free < 0 then free = 0 end
  if cost > limit then return false, free, INF, reset end
  if n + cost > limit then
    -- The (n + cost - limit)-th oldest live unit (0-based index below), found by walking the runs.
    local idx, j = n + cost - limit - 1 + off, i
    while idx >= cs[j] do
      idx = idx - cs[j]
      j = j + 1
    end
    return false, free, ceil(ts[j] + W - now), reset
  end
  if commit then
    -- Forget what was skipped, then append (merging with a newest run at the same time).
    sl_drop(S, i, off, n)
    -- A sliding log appends at t; a lease is logged at its receipt, now itself (P.exact).
    if cost > 0 then sl_place(S, P.exact and now or t, cost) end
  end
  -- cost 0 (a composite reporting an unconsumed member) leaves the reset where it was.
  if cost > 0 then reset = ceil(t + W - now) end
  return true, limit - n - cost, 0, reset
end

ALGO.l = function(limit, W)
  return {
    limit = limit, W = W,
    step = sl_step, refund = sl_refund, fresh = sl_fresh, force = sl_force,
    load = sl_load, save = sl_save, write = setState,
  }
end

-- Twin of src/algorithms/concurrency.ts: leases are this log's entries with W = leaseMs. renew:
-- whether `cost` counting units were logged at exactly `at`; when they were, allowed, and with
-- `commit` they move to t; when not, denied with retryAfterMs Infinity and nothing changes.
local function sl_renew(P, S, now, cost, at, commit)
  local limit, W, ts, cs = P.limit, P.W, S.ts, S.cs
  local t, newest, i, off, n = sl_live(P, S, now)
  local found, r = 0, nil
  for j = i, S.last do
    if ts[j] == at then
      found, r = cs[j], j
      if j == i then found = found - off end
    end
  end
  local free = limit - n
  if free < 0 then free = 0 end
  if found < cost then
    local reset = 0
    if n > 0 then reset = ceil(newest + W - now) end
    return false, free, INF, reset
  end
  if commit then
    sl_drop(S, i, off, n)
    sl_refund(P, S, now, cost, at)
    sl_place(S, now, cost)
  end
  return true, free, 0, ceil(t + W - now)
end

-- Leases leave by release (the log's refund with a receipt) or expiry only: a refund is for rate
-- units and leaves them alone (see concurrency.ts).
local function sl_keep() end

ALGO.q = function(limit, W)
  return {
    limit = limit, W = W, exact = true,
    step = sl_step, refund = sl_keep, fresh = sl_fresh, force = sl_force,
    release = sl_refund, renew = sl_renew,
    load = sl_load, save = sl_save, write = setState,
  }
end
