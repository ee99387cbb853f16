-- Storage of one record per (rule, key) (the layout of src/core/rule.ts): a bare rule's record is
-- its one member's state, stored by that member's codec (so the hot path keeps its compact
-- forms: fixed-window's bare integer, GCRA's bare number). Any other record is one string:
-- per member a 4-byte length and the member codec's value, in spec order, then the ban's
-- state as three packed doubles (n, since, until). The math never sees any of this.
local LEN = '<I4'
local BAN = '<ddd'

-- Stores a bare rule's state with its expiry (the default `write`; fixed-window does better).
-- PSETEX, not SET ... PX: the same value and expiry, ~500 fewer Redis instructions (no option
-- to parse; callgrind). Every value with an expiry is written this way (record-io.lua).
local function setState(P, S, key, now, costText)
  call('PSETEX', key, ttl(P.fresh(P, S), now), P.save(P, S))
end

-- The ban's state from `raw` at `pos` (a fresh one without `raw`), into the scratch table B.
local function loadBan(B, raw, pos)
  if raw then
    B.n, B.since, B['until'] = unpack(BAN, raw, pos)
  else
    B.n, B.since, B['until'] = 0, -INF, -INF
  end
  return B
end

-- The record stored as `raw` (false: absent, so a fresh record), decoded for rule R. A
-- composite's record is R's scratch table, refilled on every load.
local function loadRecord(R, raw)
  local members = R.members
  if R.bare then
    local P = members[1]
    return P.load(P, raw)
  end
  local record, pos = R.record, 1
  for i = 1, R.count do
    local P = members[i]
    if raw then
      local len
      len, pos = unpack(LEN, raw, pos)
      record[i] = P.load(P, sub(raw, pos, pos + len - 1))
      pos = pos + len
    else
      record[i] = P.load(P, false)
    end
  end
  if R.ban then
    if raw and pos > #raw then error('not a sluice record with a ban: ' .. raw) end
    record[R.count + 1] = loadBan(R.banScratch, raw, pos)
  end
  return record
end

-- The value that stores `record` (any rule but a bare one).
local function saveRecord(R, record)
  local members, out = R.members, {}
  for i = 1, R.count do
    local P = members[i]
    local value = P.save(P, record[i])
    out[i] = pack(LEN, #value) .. value
  end
  if R.ban then
    local B = record[R.count + 1]
    out[R.count + 1] = pack(BAN, B.n, B.since, B['until'])
  end
  return table.concat(out)
end
