-- Twin of src/core/decide-rule.ts, the one decision path: composites all-or-nothing, bans, refunds
-- and peeks, on one record per (rule, key).
--
-- Where the TS returns a Decision, this writes the member decisions into FIG, 4 figures per
-- member in spec order (allowed, remaining, retryAfterMs when denied / delayMs when allowed,
-- resetMs), and returns the ban's time left when the key is banned (nil otherwise); reply.ts
-- combines them into the Decision exactly as the TS does (src/core/composite.ts, bannedDecision).

-- Operations (the check's op code): take units, only report, or give units back; and
-- rate-limiter-flexible's calls: a penalty (take whether or not it fits), a block (the ban slot
-- until now + cost ms) and a get (a peek of one unit that tells whether the record is fresh).
-- Leases (concurrency members only): a release and a renewal of the leases of a receipt.
local CHECK, PEEK, REFUND, PENALTY, BLOCK, GET, RELEASE, RENEW = 'c', 'p', 'r', 'x', 'b', 'g', 'e', 'n'

-- Whether the last get found a record equivalent to a fresh one (isFreshAnswer of the TS).
local GOT_FRESH = false

-- The member figures of the last decision (scratch, refilled by every decision).
local FIG = {}

-- The members decided at one `now`: all or nothing, committed only when every member allows.
-- Returns whether every member allowed.
local function evaluate(R, record, now, cost, commit)
  local members, count = R.members, R.count
  if count == 1 then
    local P = members[1]
    FIG[1], FIG[2], FIG[3], FIG[4] = P.step(P, memberState(R, record, 1), now, cost, commit)
    return FIG[1]
  end
  local all = true
  for i = 1, count do
    local P, f = members[i], 4 * i
    FIG[f - 3], FIG[f - 2], FIG[f - 1], FIG[f] = P.step(P, record[i], now, cost, false)
    if not FIG[f - 3] then all = false end
  end
  if not all then
    -- Nothing was consumed: members that would have allowed report as they stand (cost 0).
    for i = 1, count do
      local P, f = members[i], 4 * i
      if FIG[f - 3] then FIG[f - 3], FIG[f - 2], FIG[f - 1], FIG[f] = P.step(P, record[i], now, 0, false) end
    end
    return false
  end
  if commit then
    for i = 1, count do
      local P = members[i]
      P.step(P, record[i], now, cost, true)
    end
  end
  return true
end

-- A banned key: denied until `till`, and no sooner than its members would allow one unit
-- (the members' figures for one unit, and the ban's time left).
local function banned(R, record, now, till)
  evaluate(R, record, now, 1, false)
  return ceil(till - now)
end

-- Decides `op` for one key at `now` against its `record` (a fresh one for an absent key) and
-- updates the record in place when the operation changes state: an allowed check, a refund,
-- or a denial counted toward a ban. A refund returns what a peek of one unit then says; `at`
-- (nil or a number) is its receipt: the instant the refunded check was decided.
-- decideCall of the TS: penalty, block and get, kept off the check path.
local function decideCall(R, record, now, cost, op)
  local ban = banState(R, record)
  if op == PENALTY then
    for i = 1, R.count do
      local P = R.members[i]
      P.force(P, memberState(R, record, i), now, cost)
    end
  elseif op == BLOCK then
    -- A rule without a ban keeps blocks beside its record (run in check.lua, decideBlocked).
    if not ban then error('decideRule: a block without a ban slot is kept by the store') end
    ban['until'] = now + cost
  end
  local left = nil
  if ban and ban['until'] > now then
    left = banned(R, record, now, ban['until'])
  else
    evaluate(R, record, now, 1, false)
  end
  GOT_FRESH = op == GET and not (recordFreshAt(R, record) > now)
  return left
end

-- decideLease of the TS: a release gives back `cost` leases of receipt `at` in every concurrency
-- member (rate members untouched) and reports a peek of one unit; a renewal moves them to now in
-- every concurrency member or in none (held: allowed; else denied, retryAfterMs Infinity), rate
-- members reporting as they stand (cost 0; one past its limit does not refuse it). A banned key
-- still releases (answered as banned); its leases are not renewed.
local function decideLease(R, record, now, cost, op, at)
  local members, count = R.members, R.count
  local ban = banState(R, record)
  if op == RELEASE then
    for i = 1, count do
      local P = members[i]
      if P.release then P.release(P, memberState(R, record, i), now, cost, at) end
    end
    if ban and ban['until'] > now then return banned(R, record, now, ban['until']) end
    evaluate(R, record, now, 1, false)
    return nil
  end
  if ban and ban['until'] > now then return banned(R, record, now, ban['until']) end
  local held = false
  for i = 1, count do
    local P = members[i]
    if P.renew then
      if not P.renew(P, memberState(R, record, i), now, cost, at, false) then
        held = false
        break
      end
      held = true
    end
  end
  for i = 1, count do
    local P, f = members[i], 4 * i
    local S = memberState(R, record, i)
    if P.renew then
      FIG[f - 3], FIG[f - 2], FIG[f - 1], FIG[f] = P.renew(P, S, now, cost, at, held)
    else
      FIG[f - 3], FIG[f - 2], FIG[f - 1], FIG[f] = P.step(P, S, now, 0, false)
      if held and not FIG[f - 3] then FIG[f - 3], FIG[f - 1] = true, 0 end
    end
  end
  return nil
end

local function decideRule(R, record, now, cost, op, at)
  if op == PENALTY or op == BLOCK or op == GET then return decideCall(R, record, now, cost, op) end
  if op == RELEASE or op == RENEW then return decideLease(R, record, now, cost, op, at) end
  if R.bare then
    local P = R.members[1]
    if op ~= REFUND then
      FIG[1], FIG[2], FIG[3], FIG[4] = P.step(P, record, now, cost, op == CHECK)
      return nil
    end
    P.refund(P, record, now, cost, at)
    FIG[1], FIG[2], FIG[3], FIG[4] = P.step(P, record, now, 1, false)
    return nil
  end
  local ban = banState(R, record)
  -- A refund gives units back even to a banned key (a group rolled back, say); the ban stays.
  if op == REFUND then
    for i = 1, R.count do
      local P = R.members[i]
      P.refund(P, memberState(R, record, i), now, cost, at)
    end
    if ban and ban['until'] > now then return banned(R, record, now, ban['until']) end
    evaluate(R, record, now, 1, false)
    return nil
  end
  if ban and ban['until'] > now then return banned(R, record, now, ban['until']) end
  local allowed = evaluate(R, record, now, cost, op == CHECK)
  if not allowed and op == CHECK and ban and countDenial(ban, R.ban, now) then
    return banned(R, record, now, ban['until'])
  end
  return nil
end

-- Whether a key with no stored record must be stored after `op` decided `allowed`: only when
-- the operation changed the record (a refund of a fresh key changes nothing that counts).
local function storesNewRecord(R, op, allowed)
  return (op == CHECK and (allowed or R.ban ~= nil)) or op == PENALTY or op == BLOCK
end

-- Twin of src/core/block.ts decideBlocked: `op` on the record of a key blocked until `till`
-- (> now) on a rule without a ban. Refunds, penalties and releases still reach the members; everything
-- else reads one unit; the answer is banned for the time left (returned, like a ban's).
local function decideBlocked(R, record, now, cost, op, at, till)
  if op == RELEASE then
    -- A blocked key's leases can still be released (never renewed: they run out as they stand).
    for i = 1, R.count do
      local P = R.members[i]
      if P.release then P.release(P, memberState(R, record, i), now, cost, at) end
    end
  elseif op == REFUND then
    for i = 1, R.count do
      local P = R.members[i]
      P.refund(P, memberState(R, record, i), now, cost, at)
    end
  elseif op == PENALTY then
    for i = 1, R.count do
      local P = R.members[i]
      P.force(P, memberState(R, record, i), now, cost)
    end
  end
  GOT_FRESH = false
  return banned(R, record, now, till)
end
