-- Storage of a sliding-log state: ONE string of packed runs, 12 bytes each (little-endian
-- double time, uint32 count), oldest first. Why not a sorted set: a ZSET needs a unique member
-- per admitted unit (a cost-5 request would be 5 members) and costs a skiplist/listpack entry
-- with member and score each; the step must also read the whole live log anyway (newest
-- entry, the (n+cost-limit)-th oldest, pruning), and the log is bounded by `limit` (O(limit)
-- is the algorithm's documented price). A packed string is one allocation, one GET and one
-- SET, and a run per admitted request (not per unit), so a key that sends cost-10 requests
-- holds a tenth of the entries.
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
