-- Twin of src/core/rule.ts: a rule compiled for this batch and the layout of its one record per
-- key. R = { members = { P, ... } (spec order), first (members[1]), count, ban = policy or nil,
-- bare, and scratch tables for decoding }. bare (one member, no ban): the record is the member's state itself;
-- otherwise the members' states in spec order, then the ban's state when there is a ban.

-- Compiles a rule from its script parameters (see check.lua): members and an optional ban.
local function compileRule(members, after, withinMs, forMs)
  local ban = nil
  if after > 0 then ban = { after = after, withinMs = withinMs, forMs = forMs } end
  return {
    members = members, first = members[1], count = #members, ban = ban, bare = #members == 1 and ban == nil,
    record = {}, banScratch = {},
  }
end

-- Member i's state in `record`.
local function memberState(R, record, i)
  if R.bare then return record end
  return record[i]
end

-- The ban's state in `record` (nil for rules without a ban).
local function banState(R, record)
  if R.ban then return record[R.count + 1] end
  return nil
end

-- The instant from which `record` decides exactly like a fresh one (its key's expiry).
local function recordFreshAt(R, record)
  local members = R.members
  if R.bare then
    local P = members[1]
    return P.fresh(P, record)
  end
  local at = -INF
  for i = 1, R.count do
    local P = members[i]
    local f = P.fresh(P, record[i])
    if f > at then at = f end
  end
  local ban = banState(R, record)
  if ban then
    local f = banFreshAt(ban, R.ban)
    if f > at then at = f end
  end
  return at
end
