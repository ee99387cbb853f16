-- The throttle's fleet queue (src/stores/redis/fleet-queue.ts): one queue of tickets per
-- (throttle, key) in Redis, served in priority then arrival order across processes. A grant is
-- decided here, atomically, by the limiter's own rule code: `run` (record-io.lua) on the rate's
-- record (the same record the throttle's rate limiter checks and blocks) and on the
-- concurrency rule's record (whose leases are the concurrency twin's). No second copy of an
-- algorithm lives here: only the queue's bookkeeping.
--
-- KEYS: 1 the queue (a sorted set of ticket ids, score priority * 2^40 + arrival number),
-- 2 its hash (fields 't:<id>' a waiting ticket's "cost owner", 'g:<id>' a grant's
-- "owner leaseAt rateAt cost", 'o:<owner>' an owner's deadline, 'seq' the arrival counter,
-- 'due' the head owner told to wake, 'pz' the instant a fleet pause ends, 'pc' the instant its
-- cool-down ends, 'cg' the cool-down's running grant "id owner at", 'cw' the owners whose late
-- start waits for that grant to end, space-separated), 3 the rate record,
-- 4 the concurrency record, 5 the owners that enqueued on the key (a sorted set, score the last
-- enqueue: who hears a pause). All five share one hash tag: one Cluster slot.
-- ARGV (after the guard's deadline): 1 expiry grace, 2 op, 3 the owners' channel prefix,
-- 4 the calling owner, 5 an owner's time to live (ms), followed by 's' when an owner is alive
-- while its channel has a subscriber (no heartbeats: a standalone server, where PUBSUB NUMSUB
-- sees every subscriber; a killed process's connection closes, so it is dead at once), or by 'p'
-- (the same, from a caller whose subscription is still opening: alive by a deadline, field
-- 'o:<owner>', until it subscribes, and its grants are kept for it, below), 6 the
-- rate rule's descriptor ('' none), 7 the concurrency rule's ('' none), 8 the user key as sent
-- back in messages (fleet-queue.ts encodes it losslessly), 9 the lookahead (ms), then the op's
-- arguments:
--   'e' enqueue: id priority(+'f') cost(+'+'penalty), repeated   'c' cancel: id
--   'E' enqueue after a lost link (the same)      'r' release: id refund('1'/'0')
--   'n' renew: id                                 'h' heartbeat (the owner is alive)
--   'p' pump                                      'l' leave: pump, the caller (closing) wakes nothing
--   'z' pause: ms (no grant until now + ms; every other live owner of the key hears it at once)
--   'm' a late start: id cost at('-' none) (its units taken at `at` go back, `cost` are taken now)
--   'a' enqueue as 'e', from an owner whose subscription just opened: its grants made while it
--       opened (kept in fields 'm:<id>' "dueAt grant", as nobody could hear a PUBLISH) come back
--       in the reply, and so does its wake-up if it was told one (an owner enqueues at once and
--       subscribes meanwhile: its first jobs reach the queue a connection's opening earlier)
-- Every op then grants what now fits, head first: grants to the caller come back in the reply,
-- grants to other owners are PUBLISHed on their channel, and when the head must wait for the
-- rate (or a lease's expiry) its owner is told when to call again.
-- An owner whose late start was refused while 'cg' ran ('cw') is told when 'cg' is freed (its
-- release, its owner found dead, the cool-down's end): "f":1 in its channel's message.
-- Reply: "status|wait|grants": status (op-specific, below), wait (ms until the caller, owning
-- the head, should pump again; '' for no such wake) and the caller's grants
-- "id,leaseAt,delayMs,at[,c];..." (',c': granted during a cool-down, released when it ends), a
-- grant of bucket units then ",c,slack" or ",,slack": its units' slot starts `slack` ms past `at`
-- (slotSlack below; an older client reads the first five fields as before).

local KQ, KH, KR, KC, KP = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op, channel, me = ARGV[2], ARGV[3], ARGV[4]
local liveBy = sub(ARGV[5], -1)
local bySubscription = liveBy == 's' or liveBy == 'p'
-- The caller's subscription is still opening (ARGV 5 ends in 'p'): alive by a deadline meanwhile.
local opening = liveBy == 'p'
local ownerTtl = tonumber(bySubscription and sub(ARGV[5], 1, -2) or ARGV[5])
local userKey, lookahead = ARGV[8], tonumber(ARGV[9])
local now = sluice_ms
-- A fleet pause (op 'z', an upstream's 429): nothing is granted before it ends, and the queue
-- outlives it (an hour's X-RateLimit-Reset must not be forgotten by an idle queue). Its
-- cool-down follows (the rule of coolDownEnd, src/core/fleet-queue.ts, restated): a pause of ms
-- made at t cools the key down until t + 2 ms (a later pause only extends it), and while it
-- cools down (paused no more) a ticket is granted only when no job granted during a cool-down is
-- still running: one at a time. That job is the grant in 'cg', which its owner releases (op 'r')
-- when it ends, even without a lease (its grant says ',c'); a dead owner's holds nothing. Once it
-- ends, the rate resumes at its steady pace: the burst it refilled meanwhile is charged (below).
local pz = call('HMGET', KH, 'pz', 'pc')
local pausedUntil, coolUntil = tonumber(pz[1] or '0'), tonumber(pz[2] or '0')

-- A rule from its descriptor text: "count after withinMs forMs (code p1 p2 p3)*" (bound-rule.ts).
local function parseRule(text)
  if text == '' then return nil end
  local v = {}
  for w in string.gmatch(text, '%S+') do v[#v + 1] = w end
  local members = {}
  for i = 1, tonumber(v[1]) do
    local b = 5 + (i - 1) * 4
    members[i] = ALGO[v[b]](tonumber(v[b + 1]), tonumber(v[b + 2]), tonumber(v[b + 3]))
  end
  return compileRule(members, tonumber(v[2]), tonumber(v[3]), tonumber(v[4]))
end
local RR, RC = parseRule(ARGV[6]), parseRule(ARGV[7])

-- How long the queue's keys (KQ, KH, KP) outlive the last call on them (SPEC §8: every key
-- expires): a margin past its busiest owner's heartbeat (by subscription, past the waiting
-- processes' rescue calls, every 3 ownerTtl); past a lease's span, so a running job's grant
-- outlives its lease between renewals (every third of it); past a fleet pause's end.
local function keepFor(until_)
  local k = (bySubscription and 8 or 4) * ownerTtl
  if RC and RC.first.W + ownerTtl > k then k = RC.first.W + ownerTtl end
  if until_ > now then k = k + (until_ - now) end
  return k
end

-- `op` on a rule's record through the limiter's own path, at the instant `t` (default now);
-- returns allowed, the wait from now when refused (the longest of the refusing members', or a
-- block's / ban's time left) and delayMs.
local function decide(R, key, cost, rop, at, t)
  t = t or now
  -- Expiries are written relative to the instant decided at (ttl in prelude.lua): one decided
  -- ahead of now must still live until its record is fresh as seen from now.
  local base = grace
  grace = base + (t - now)
  local left = run(R, key, t, cost, rop, fmt('%d', cost), at)
  grace = base
  local allowed, wait = true, 0
  for f = 1, 4 * R.count, 4 do
    if not FIG[f] then
      allowed = false
      if FIG[f + 2] > wait then wait = FIG[f + 2] end
    end
  end
  if left then
    allowed = false
    if left > wait then wait = left end
  end
  return allowed, wait + (t - now), FIG[3]
end

-- How many ms past its instant the slot of the units just checked by `R` starts, from the figures
-- of that allowed check (src/core/unit-slot.ts, restated): a gcra or token bucket's backlog before
-- them, ceil(backlog + cost * T) = resetMs, so floor(resetMs - 1 - cost * T); any other member
-- (a log, a window, a leaky bucket) 0; the least over the members. A task that starts by its
-- slot's start is not late: its unit needs no move (runner.ts).
local function slotSlack(R, cost)
  local least = INF
  for i = 1, R.count do
    local P, f = R.members[i], 4 * i
    local T = nil
    if P.per and P.den and not P.delays then T = P.per / P.den elseif P.r and P.C then T = 1000 / P.r end
    local s = 0
    if T then
      s = FIG[f] - 1 - cost * T
      s = s - s % 1
      if s < 0 then s = 0 end
    end
    if s < least then least = s end
  end
  if least >= INF then return 0 end
  return least
end

local mine, others = {}, {}
-- Owners to tell that the cool-down's job ended (set by coolFree; sent with the grants, below).
local freed = {}

-- Grants every head ticket that fits now; returns the head's wait (nil: the queue is empty).
-- The instant rate decisions are made at: now, or the latest instant already decided ahead
-- (field 'hz'), so this key's rate record never sees time run back: a unit taken ahead counts
-- where it was taken, and no later decision at an earlier instant can start a job into it.
local cursor = now

-- How far ahead a call grants the head's next start when none is pending ahead (ms): one rate
-- spacing of 4 starts a second and faster (slower rates cost few commands a second anyway),
-- and the most a job so granted starts after its maxWaitMs.
local NEXT_MS = 250

-- Whether `owner` is alive: the caller is; else its channel has a subscriber, or its heartbeat
-- deadline has not passed (answers cached for this call).
local living = {}
-- Owners found alive by their deadline while their subscription opens: their grants and wake-up
-- are kept for them ('m:<id>', 'due'), not PUBLISHed to nobody.
local unheard = {}
local function alive(owner)
  if owner == me then return true end
  local known = living[owner]
  if known == nil then
    if bySubscription then
      known = call('PUBSUB', 'NUMSUB', channel .. owner)[2] > 0
      if not known and tonumber(call('HGET', KH, 'o:' .. owner) or '0') >= now then
        known = true
        unheard[owner] = true
      end
    else
      known = tonumber(call('HGET', KH, 'o:' .. owner) or '0') >= now
    end
    living[owner] = known
  end
  return known
end

-- The cool-down's running grant: id, owner and the instant granted at ('cg'), or nil.
local function coolGrant()
  local cg = call('HGET', KH, 'cg')
  if not cg then return nil end
  return match(cg, '^(%S+) (%S+) (%S+)$')
end

-- The cool-down's job ended (or the cool-down did): 'cg' goes, and the owners whose late start
-- waited for it ('cw') are told, so none polls for it (src/core/fleet-queue.ts, COOL_FALLBACK_MS:
-- their wait is only a fallback). The caller too: its own late start may have been refused just
-- before its own release arrived.
local function coolFree()
  local cw = call('HGET', KH, 'cw')
  call('HDEL', KH, 'cg', 'cw')
  if not cw then return end
  for owner in string.gmatch(cw, '%S+') do freed[owner] = true end
end

-- Whether a job granted during a cool-down still runs (its owner alive: a dead one's ended).
local function coolHeld()
  local id, owner = coolGrant()
  if not id then return false end
  if alive(owner) then return true end
  coolFree()
  return false
end

local function pump()
  local hz = tonumber(call('HGET', KH, 'hz') or '0')
  if hz > cursor then cursor = hz end
  while true do
    local head = call('ZRANGE', KQ, 0, 0)[1]
    if not head then return nil end
    local t = call('HGET', KH, 't:' .. head)
    local cost, owner
    if t then cost, owner = match(t, '^(%S+) (%S+)$') end
    if not (owner and alive(owner)) then
      -- A dead process's ticket never blocks the queue: it leaves when it reaches the head.
      call('ZREM', KQ, head)
      call('HDEL', KH, 't:' .. head)
    elseif pausedUntil > now then
      return pausedUntil - now, owner, 0, head
    elseif coolUntil > now and coolHeld() then
      -- Its one job runs: its release grants on, or else the cool-down's end.
      return coolUntil - now, owner, 0, head
    else
      -- "units+penalty": units past what the rate admits at once, spent once it is granted
      -- (the adaptive rate slowing a rate of burst 1 by a longer interval).
      local units, extra = match(cost, '^(%d+)%+(%d+)$')
      if units then cost, extra = tonumber(units), tonumber(extra) else cost, extra = tonumber(cost), 0 end
      local ok, wait, delay = true, 0, 0
      -- A grant ahead holds its slot from now: only while at least half the slots stay free.
      local ahead = lookahead
      if RC then
        ok, wait = decide(RC, KC, 1, PEEK, nil)
        if FIG[2] < ceil(RC.first.limit / 2) then ahead = 0 end
      end
      if not ok then return wait, owner, 0, head end
      -- After a lost store (a restart that lost the leases of jobs still running), nothing new
      -- is granted for a lease's span: running jobs take their slots back at their renewals.
      local hold = RC and tonumber(call('HGET', KH, 'hold') or '0') or 0
      if hold > now then return hold - now, owner, 0, head end
      local rateAt, leaseAt = '-', '-'
      local at = now
      local slack = 0
      if RR then
        at = cursor
        ok, wait, delay = decide(RR, KR, cost, CHECK, nil, at)
        -- With no grant pending ahead, one ticket due within NEXT_MS is granted ahead too: at
        -- saturation the call that follows a start (its process's next enqueue) decides the next
        -- start, so a job costs that call and one PUBLISH, not also a wake-up and its pump.
        local reach = ahead
        if ahead > 0 and cursor <= now and NEXT_MS > reach then reach = NEXT_MS end
        if not ok and wait <= reach then
          -- Due within the lookahead: the units are taken at the due instant itself (the
          -- rule decides at that instant, as it would then) and the job starts then (delayMs),
          -- so no round trip or timer lag of the wake-up costs the fleet a slot.
          at = now + ceil(wait)
          ok, wait, delay = decide(RR, KR, cost, CHECK, nil, at)
        end
        if not ok then return wait, owner, ahead, head end
        slack = slotSlack(RR, cost)
        if extra > 0 then decide(RR, KR, extra, PENALTY, nil, at) end
        delay = (delay or 0) + (at - now)
        rateAt = fmt('%d', at)
        if at > cursor then
          cursor = at
          call('HSET', KH, 'hz', fmt('%d', at))
        end
      end
      if RC then
        decide(RC, KC, 1, CHECK, nil)
        leaseAt = fmt('%d', now)
      end
      call('ZREM', KQ, head)
      call('HDEL', KH, 't:' .. head)
      -- Only a lease's grant is kept (its renewals, release and a crossing cancel need it): a
      -- rate-only grant holds nothing to give back, and a field per job would grow the hash of
      -- a busy key forever. (Its grant sent again after a lost message is a new grant.)
      if leaseAt ~= '-' then
        call('HSET', KH, 'g:' .. head, owner .. ' ' .. leaseAt .. ' ' .. rateAt .. ' ' .. fmt('%d', cost))
      end
      local g = head .. ',' .. leaseAt .. ',' .. fmt('%d', delay or 0) .. ',' .. fmt('%d', at)
      if coolUntil > now then
        call('HSET', KH, 'cg', head .. ' ' .. owner .. ' ' .. fmt('%d', at))
        g = g .. ',c'
      end
      if slack > 0 then
        if coolUntil <= now then g = g .. ',' end
        g = g .. ',' .. fmt('%d', slack)
      end
      if owner == me then
        mine[#mine + 1] = g
      else
        local list = others[owner]
        if not list then
          list = {}
          others[owner] = list
        end
        list[#list + 1] = g
      end
    end
  end
end

-- Gives a grant back: its lease, and with `refund` its rate units (by receipt), and the
-- cool-down's place if it held it. False: no such grant.
local function giveBack(id, refund)
  local cooled = false
  if coolUntil > 0 and coolGrant() == id then
    coolFree()
    cooled = true
  end
  local g = call('HGET', KH, 'g:' .. id)
  if not g then return cooled end
  local _, leaseAt, rateAt, cost = match(g, '^(%S+) (%S+) (%S+) (%S+)$')
  if RC and leaseAt ~= '-' then decide(RC, KC, 1, RELEASE, tonumber(leaseAt)) end
  if refund and RR and rateAt ~= '-' then decide(RR, KR, tonumber(cost), REFUND, tonumber(rateAt)) end
  call('HDEL', KH, 'g:' .. id)
  return true
end

-- Marks the caller alive until now + ownerTtl; returns whether it was known (alive) before.
-- (By subscription: known while the queue exists; its tickets dropped while its link was down
-- are sent again when the link comes back.)
local function touch()
  -- A queue that expired (or was lost) forgot every ticket: its owners send theirs again.
  local known = call('EXISTS', KH) == 1
  if opening then
    call('HSET', KH, 'o:' .. me, fmt('%d', now + ownerTtl))
  elseif not bySubscription then
    known = tonumber(call('HGET', KH, 'o:' .. me) or '0') >= now
    call('HSET', KH, 'o:' .. me, fmt('%d', now + ownerTtl))
  end
  return known
end

-- Holds new grants for a lease's span (see pump): the store lost leases of running jobs.
local function holdGrants()
  if not RC then return end
  local until_ = now + RC.first.W
  if tonumber(call('HGET', KH, 'hold') or '0') < until_ then call('HSET', KH, 'hold', fmt('%d', until_)) end
end

local status = '1'
-- The cool-down's end (coolDownEnd's rule, restated): the burst the rate refilled during the
-- pause and the cool-down does not survive them. At the first call after the end, the rate's
-- record is charged, at the end's instant (or the latest instant decided ahead, 'hz': the record
-- never sees time run back), what it could still admit there past one unit: the rate resumes at
-- its steady pace from the end (what it refills after the end is its own). Once per cool-down:
-- 'pc' goes. (A member without a penalty, the leaky bucket, admits no burst: nothing to charge.)
if coolUntil > 0 and coolUntil <= now then
  if RR then
    local forced = true
    for i = 1, RR.count do
      if not RR.members[i].force then forced = false end
    end
    local t = tonumber(call('HGET', KH, 'hz') or '0')
    if t < coolUntil then t = coolUntil end
    if forced then
      local ok = decide(RR, KR, 1, PEEK, nil, t)
      local left = INF
      for f = 2, 4 * RR.count, 4 do
        if FIG[f] < left then left = FIG[f] end
      end
      if ok and left > 0 and left < INF then decide(RR, KR, left, PENALTY, nil, t) end
    end
  end
  call('HDEL', KH, 'pc')
  coolFree()
  coolUntil = 0
end

if op == 'e' or op == 'E' or op == 'a' then
  -- 0: the store had forgotten this owner (its tickets that reached the head meanwhile were
  -- dropped as dead): it sends its other waiting tickets again.
  if not touch() then status = '0' end
  -- Sent again after a lost link: a concurrency record that is gone lost the leases of jobs
  -- that may still run.
  if op == 'E' and RC and call('EXISTS', KC) == 0 then holdGrants() end
  -- Subscribed now: its deadline served only while its subscription opened.
  if op == 'a' then call('HDEL', KH, 'o:' .. me) end
  -- Who hears a pause of this key: one entry per owner (written once per call, not per ticket).
  call('ZADD', KP, now, me)
  local seq = call('HINCRBY', KH, 'seq', (#ARGV - 9) / 3)
  local first = seq - (#ARGV - 9) / 3
  -- The cool-down's running grant, delivered again like a lease's when its ticket comes again.
  local coolId, coolOwner, coolAt
  if coolUntil > 0 then coolId, coolOwner, coolAt = coolGrant() end
  for i = 10, #ARGV, 3 do
    local id = ARGV[i]
    first = first + 1
    -- Idempotent: a ticket sent again after a reconnect keeps its place, or its grant, which
    -- its owner evidently never heard (it sends only tickets still waiting): delivered again.
    local g = call('HGET', KH, 'g:' .. id)
    local kept = op == 'a' and call('HGET', KH, 'm:' .. id)
    if kept then
      -- Granted while its owner's subscription opened: the grant kept for it, its delay now shorter.
      local dueAt, gid, leaseAt, _, at, flag = match(kept, '^(%S+) ([^,]+),([^,]+),([^,]+),([^,]+),?(%a*)$')
      local d = tonumber(dueAt) - now
      if d < 0 then d = 0 end
      mine[#mine + 1] = gid .. ',' .. leaseAt .. ',' .. fmt('%d', d) .. ',' .. at .. (flag == 'c' and ',c' or '')
      call('HDEL', KH, 'm:' .. id)
    elseif op == 'a' and (g or id == coolId) then
      -- Granted, but not while its owner's subscription opened (in a reply, or PUBLISHed once
      -- it was live): heard already. (A ticket known nowhere, dropped as dead while its owner's
      -- deadline lapsed, or granted rate-only once its subscription was live with the message
      -- still on its way, is enqueued again below: at worst a rate unit spent twice, never a
      -- job run twice, fleet-link.ts ignoring a grant heard twice.)
    elseif g then
      local _, leaseAt, rateAt = match(g, '^(%S+) (%S+) (%S+)')
      mine[#mine + 1] = id .. ',' .. leaseAt .. ',0,' .. rateAt .. (id == coolId and ',c' or '')
    elseif id == coolId then
      mine[#mine + 1] = id .. ',-,0,' .. coolAt .. ',c'
    elseif call('HEXISTS', KH, 't:' .. id) == 0 then
      -- A priority ending in 'f' keeps a place it had (a request sent again after a 429): ahead
      -- of every ticket of its priority that arrived without one, in arrival order among those.
      local p = ARGV[i + 1]
      local score = first
      if sub(p, -1) == 'f' then
        p = sub(p, 1, -2)
        score = first - 549755813888
      end
      call('ZADD', KQ, tonumber(p) * 1099511627776 + score, id)
      call('HSET', KH, 't:' .. id, ARGV[i + 2] .. ' ' .. me)
    end
  end
elseif op == 'c' then
  -- 1: it was waiting and is gone; 2: it had been granted, and the grant is given back; 0: unknown.
  local id = ARGV[10]
  if call('ZREM', KQ, id) == 1 then
    call('HDEL', KH, 't:' .. id)
  elseif giveBack(id, true) then
    status = '2'
  else
    status = '0'
  end
elseif op == 'r' then
  if not giveBack(ARGV[10], ARGV[11] == '1') then status = '0' end
elseif op == 'n' then
  -- 1: the lease is renewed (its receipt moves to now); 0: it is no longer held (it expired:
  -- its slot may have gone to the head), or it was lost and no slot is free to take it back.
  -- A grant the store lost (a restart, a failover) is taken again when a slot is free: the job
  -- is running, so it counts. A lost concurrency record also holds new grants for a lease's
  -- span (see pump), so the other running jobs get their slots back first.
  local id = ARGV[10]
  local g = call('HGET', KH, 'g:' .. id)
  status = '0'
  local owner, leaseAt, rateAt, cost = me, nil, '-', '1'
  if g then owner, leaseAt, rateAt, cost = match(g, '^(%S+) (%S+) (%S+) (%S+)$') end
  if leaseAt == '-' then
    status = '1'
  elseif RC then
    local held
    if g then
      held = decide(RC, KC, 1, RENEW, tonumber(leaseAt))
    else
      if call('EXISTS', KC) == 0 then holdGrants() end
      held = decide(RC, KC, 1, CHECK, nil)
    end
    if held then
      status = '1'
      call('HSET', KH, 'g:' .. id, owner .. ' ' .. fmt('%d', now) .. ' ' .. rateAt .. ' ' .. cost)
    end
  end
elseif op == 'z' then
  -- A fleet pause (the latest word wins: an upstream may shorten its own pause). Status
  -- "until,1" when the key was paused already (its pause has cut the adaptive rate), "until,0".
  -- Every other live owner that enqueued on the key hears it now, so a job it was granted ahead
  -- (or whose grant crossed this) goes back to the queue instead of reaching the upstream.
  local ms = tonumber(ARGV[10])
  status = fmt('%d', now + ms) .. (pausedUntil > now and ',1' or ',0')
  pausedUntil = now + ms
  if now + 2 * ms > coolUntil then coolUntil = now + 2 * ms end
  call('HSET', KH, 'pz', fmt('%d', pausedUntil), 'pc', fmt('%d', coolUntil))
  touch()
  local message = cjson.encode({ k = userKey, z = ms, u = pausedUntil })
  for _, owner in ipairs(call('ZRANGE', KP, 0, -1)) do
    if owner ~= me then
      if alive(owner) then
        call('PUBLISH', channel .. owner, message)
      else
        call('ZREM', KP, owner)
      end
    end
  end
elseif op == 'm' then
  -- A granted job starts late (its process stalled): the rate units its grant took at `at` go
  -- back (by receipt) and it takes `cost` at the latest instant decided (now, or the one granted
  -- ahead to: the record never sees time run back), ahead of the queue (its turn came). Status
  -- "1,at,delayMs[,c][,slack]" (start then; slack as a grant's), or "0,waitMs" (refused: ask
  -- again then, nothing to give back).
  -- During a cool-down a late start is a start like a grant: it waits while another job of the
  -- cool-down runs (its owner is recorded in 'cw' and told when that job ends; its wait, the rest
  -- of the cool-down up to COOL_FALLBACK_MS, 1 s, src/core/fleet-queue.ts, is only a fallback),
  -- and once it goes it is that job ("1,at,delayMs,c": its owner releases it when it ends).
  local id, cost, at = ARGV[10], tonumber(ARGV[11]), ARGV[12]
  if not RR then
    status = '1,' .. fmt('%d', now) .. ',0'
  elseif pausedUntil > now then
    if at ~= '-' then decide(RR, KR, cost, REFUND, tonumber(at)) end
    status = '0,' .. fmt('%d', pausedUntil - now)
  elseif coolUntil > now and coolGrant() ~= id and coolHeld() then
    if at ~= '-' then decide(RR, KR, cost, REFUND, tonumber(at)) end
    local cw = call('HGET', KH, 'cw')
    if not cw then
      call('HSET', KH, 'cw', me)
    elseif not string.find(' ' .. cw .. ' ', ' ' .. me .. ' ', 1, true) then
      call('HSET', KH, 'cw', cw .. ' ' .. me)
    end
    local left = coolUntil - now
    if left > 1000 then left = 1000 end
    status = '0,' .. fmt('%d', left)
  else
    if at ~= '-' then decide(RR, KR, cost, REFUND, tonumber(at)) end
    local t = tonumber(call('HGET', KH, 'hz') or '0')
    if t < now then t = now end
    local ok, wait, delay = decide(RR, KR, cost, CHECK, nil, t)
    if not ok and wait <= NEXT_MS then
      -- Refused, its units free within NEXT_MS: they are taken at that instant, as a grant ahead
      -- (its turn came: no later ticket is granted before it, and no second call is needed).
      -- Refused instead, it asked again on its own timer while the queue granted later tickets
      -- (attack8 F2) and each ask was a call.
      t = now + ceil(wait)
      ok, wait, delay = decide(RR, KR, cost, CHECK, nil, t)
      if ok and t > tonumber(call('HGET', KH, 'hz') or '0') then call('HSET', KH, 'hz', fmt('%d', t)) end
    end
    if ok then
      local slack = slotSlack(RR, cost)
      status = '1,' .. fmt('%d', t) .. ',' .. fmt('%d', (delay or 0) + (t - now))
      if coolUntil > now then
        call('HSET', KH, 'cg', id .. ' ' .. me .. ' ' .. fmt('%d', t))
        status = status .. ',c'
      end
      -- The moved units' slot (slotSlack), after a 4th field ('c' or empty).
      if slack > 0 then
        if coolUntil <= now then status = status .. ',' end
        status = status .. ',' .. fmt('%d', slack)
      end
      local g = call('HGET', KH, 'g:' .. id)
      if g then
        local owner, leaseAt, _, c = match(g, '^(%S+) (%S+) (%S+) (%S+)$')
        call('HSET', KH, 'g:' .. id, owner .. ' ' .. leaseAt .. ' ' .. fmt('%d', t) .. ' ' .. c)
      end
    else
      if wait >= INF then wait = 60000 end
      status = '0,' .. fmt('%d', ceil(wait))
    end
  end
elseif op == 'h' then
  -- 0: the store had forgotten this owner (a restart, a failover, a long pause): its tickets
  -- may be gone, and it sends them again.
  if not touch() then status = '0' end
end

-- A heartbeat by subscription is never sent; a heartbeat by deadline pumps (a dead head's
-- ticket leaves when its deadline passed).
local wait, headOwner, headAhead, headId = pump()
-- One process wakes when the head comes within the lookahead, and its call grants it (and what
-- follows); the others do not poll. The waker is recorded in 'due' ("waker head dueAt"), and
-- every reply tells its caller whether it is (still) the waker: one that is not any more drops
-- its wake-up (fleet-link.ts), so no wake-up is left over to cost a call.
local waitText = ''
local wakeFor, wakeMs = nil, nil
if wait and wait < INF then
  local w = ceil(wait - headAhead)
  if w < 1 then w = 1 end
  local dueAt = now + w
  local told = call('HGET', KH, 'due')
  local toldBy, toldId, toldAt
  if told then toldBy, toldId, toldAt = match(told, '^(%S+) (%S+) (%S+)$') end
  local waker = nil
  -- A process this call grants to, when the head is due soon: told in that grant's message,
  -- free. At saturation each start's message names who decides the next start (its own next
  -- call, which grants it ahead, or else its wake-up); the caller, superseded, drops its own.
  local last = nil
  for owner in pairs(others) do
    if not unheard[owner] and (last == nil or owner > last) then last = owner end
  end
  if last and w <= 2 * NEXT_MS + lookahead then
    waker, wakeFor, wakeMs = last, last, w
  elseif (headOwner == me or toldBy == me) and op ~= 'l' then
    -- The caller: told in its reply, free.
    waker = me
    waitText = fmt('%d', w)
  elseif toldId ~= headId or tonumber(toldAt) > dueAt or toldBy == me then
    -- The head's owner, told once per head ticket and again only when it is due earlier than
    -- told (each call would otherwise tell it anew: a PUBLISH per call). Due later than told,
    -- its wake-up's pump answers the rest. (One that dies before waking is found dead by the
    -- next call on the key: any waiting process's rare rescue pump, fleet-link.ts.)
    waker = headOwner
    -- (One whose subscription opens hears it in the reply to its 'a' call, as the waker in 'due'.)
    if not unheard[headOwner] then call('PUBLISH', channel .. headOwner, cjson.encode({ k = userKey, w = w })) end
  end
  if waker then call('HSET', KH, 'due', waker .. ' ' .. headId .. ' ' .. fmt('%d', dueAt)) end
else
  -- No head, or one that waits for nothing that will come: no waker.
  call('HDEL', KH, 'due')
end
for owner, list in pairs(others) do
  if unheard[owner] then
    -- Its subscription still opens: each grant kept for its 'a' call ("dueAt grant"), which takes it.
    for _, g in ipairs(list) do
      local d = tonumber(match(g, '^[^,]+,[^,]+,([^,]+),'))
      call('HSET', KH, 'm:' .. match(g, '^[^,]+'), fmt('%d', now + d) .. ' ' .. g)
    end
  else
    local m = { k = userKey, g = table.concat(list, ';') }
    if owner == wakeFor then m.w = wakeMs end
    if freed[owner] then
      m.f = 1
      freed[owner] = nil
    end
    call('PUBLISH', channel .. owner, cjson.encode(m))
  end
end
for owner in pairs(freed) do
  call('PUBLISH', channel .. owner, cjson.encode({ k = userKey, f = 1 }))
end
-- Every call, after its writes (a PEXPIRE before a key exists sets nothing, and HINCRBY / ZADD /
-- HSET create keys without one), moves the queue's three keys' expiry to `keep` from now, all
-- three alike: the arrival counter 'seq' never restarts while a ticket scored by it waits.
local keep = keepFor(coolUntil > pausedUntil and coolUntil or pausedUntil)
call('PEXPIRE', KH, keep)
call('PEXPIRE', KQ, keep)
call('PEXPIRE', KP, keep)
return status .. '|' .. waitText .. '|' .. table.concat(mine, ';')
