-- A record's storage around decideRule: load, decide, write back (with blocks kept beside it).
-- Shared by the check script (check.lua) and the throttle's fleet queue (queue.lua).

-- Writes a changed record with its expiry at the record's freshAt (a bare rule's member may
-- write its own way after a check: see fw_write).
local function storeRecord(R, record, key, now, op, costText)
  if R.bare then
    local P = R.members[1]
    if op == CHECK then P.write(P, record, key, now, costText) else setState(P, record, key, now, costText) end
    return
  end
  -- Encoded before the write: an error leaves the stored record as it was.
  local value = saveRecord(R, record)
  call('PSETEX', key, ttl(recordFreshAt(R, record), now), value)
end

-- A key blocked on a rule without a ban (src/core/block.ts) is a hash { s = the record's value
-- (absent: fresh), b = when the block ends }: a never-blocked key stays the plain string the hot
-- path GETs, so no check pays for blocks, and a blocked key's GET fails there and comes here.
-- Returns the record's value (false: none) and the block's end (nil: never blocked).
local function loadRaw(key)
  local raw = redis.pcall('GET', key)
  if type(raw) ~= 'table' then return raw, nil end
  local v = call('HMGET', key, 's', 'b') -- a foreign type fails here, as GET would
  local till = tonumber(v[2])
  -- A foreign hash fails as any foreign type does, with Redis's own WRONGTYPE word.
  if not till then error('WRONGTYPE ' .. key .. ' holds a hash that is not a sluice blocked record') end
  return v[1], till
end

-- Writes a blocked key's hash (see loadRaw), expiring when both the block and the record would.
-- The record is left out only for a key that had none and still decides as a fresh one.
local function storeBlocked(R, record, key, now, till, raw)
  local fresh = recordFreshAt(R, record)
  local value = nil
  if raw or fresh > now then value = R.bare and R.first.save(R.first, record) or saveRecord(R, record) end
  call('DEL', key)
  if value then
    call('HSET', key, 'b', fmt('%.17g', till), 's', value)
  else
    call('HSET', key, 'b', fmt('%.17g', till))
  end
  if fresh < till then fresh = till end
  call('PEXPIRE', key, ttl(fresh, now))
end

-- One check: load the record, decide, write it back when the decision changed it. A stored key
-- that lost its expiry (PERSIST, a restore) gets it back on the next denial.
local function run(R, key, now, cost, op, costText, at)
  local raw, till = loadRaw(key)
  local record = loadRecord(R, raw)
  if op == BLOCK and not R.ban then till = now + cost end
  if till and till > now then
    local left = decideBlocked(R, record, now, cost, op, at, till)
    if op == BLOCK or op == REFUND or op == PENALTY or op == RELEASE then storeBlocked(R, record, key, now, till, raw) end
    return left, true
  end
  local left = decideRule(R, record, now, cost, op, at)
  if op == PEEK or op == GET then return left end
  local allowed = left == nil
  for f = 1, 4 * R.count, 4 do
    if not FIG[f] then allowed = false end
  end
  if till then
    -- The block has ended: a changed record goes back to the plain string the hot path GETs (SET
    -- replaces the hash), as every store forgets an ended block; kept as a hash, every later
    -- check of the key would pay the full path for as long as the key lives. Never the
    -- member's own write: fixed-window's INCRBY would meet the hash.
    if op == REFUND or op == PENALTY or op == RELEASE or allowed then
      local value = R.bare and R.first.save(R.first, record) or saveRecord(R, record)
      call('PSETEX', key, ttl(recordFreshAt(R, record), now), value)
    end
    return left
  end
  if not raw then
    if storesNewRecord(R, op, allowed) then storeRecord(R, record, key, now, op, costText) end
  elseif op == REFUND or op == PENALTY or op == BLOCK or op == RELEASE or allowed or R.ban then
    storeRecord(R, record, key, now, op, costText)
  elseif call('PTTL', key) == -1 then
    call('PEXPIRE', key, ttl(recordFreshAt(R, record), now))
  end
  return left
end

