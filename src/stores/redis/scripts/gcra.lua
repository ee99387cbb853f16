-- Twin of src/algorithms/gcra.ts (gcra, code g, and leaky-bucket, code b: the same arithmetic;
-- the leaky bucket also reports delayMs; storage: codecs/gcra.lua). State: the theoretical
-- arrival time as whole ms plus ticks of 1/den ms. The interval arrives as the exact fraction
-- the TS side computed (emissionInterval): per ticks per emission, den ticks per ms. Every
-- value below is an integer under 2^53 (a difference from now of at most a few tau), so these
-- doubles compute exactly what the TS computes, at any clock value.

-- The state's arrival time in this rule's ticks: as written, or rounded up to the next ms when
-- written under another interval (msOf / ticksOf of the TS step).
local function em_at(P, S)
  if S.den == P.den or S.ticks == 0 then return S.ms, S.ticks end
  return S.ms + 1, 0
end

-- Stores ms + ticks (ticks may exceed a ms, or be negative after a refund: whole ms carry).
local function em_write(P, S, ms, ticks)
  local den = P.den
  local carry = floor(ticks / den)
  S.ms, S.ticks, S.den = ms + carry, ticks - carry * den, den
end

local function em_fresh(P, S)
  if S.ticks > 0 then return S.ms + 1 end
  return S.ms
end

local function em_remaining(P, backlog)
  local n = floor((P.tau - backlog) / P.per)
  if n < 0 then return 0 end
  return n
end

local function em_refund(P, S, now, cost, at)
  -- Backlog ahead of now shrinks by the refunded emissions; time already past stays past.
  local den, per = P.den, P.per
  local nowMs = floor(now)
  local nowTicks = floor((now - nowMs) * den)
  local ms, ticks = em_at(P, S)
  local dm, frac = ms - nowMs, ticks - nowTicks
  if not (dm > 0 or (dm == 0 and frac > 0)) then return end
  local give = cost * per
  if at and now > at then
    -- With a receipt, what has drained since the check is not given back twice.
    local drained = ceil((now - at) * den)
    if drained >= give then return end
    give = give - drained
  end
  local backlog = dm * den + frac
  if give >= backlog then
    em_write(P, S, nowMs, nowTicks)
  else
    -- From the state's own instant, so a large backlog (a clock stepped back) is never re-based.
    em_write(P, S, ms, ticks - give)
  end
end

-- A penalty: the arrival time moves `cost` emissions past max(itself, now).
local function em_force(P, S, now, cost)
  local den = P.den
  local nowMs = floor(now)
  local nowTicks = floor((now - nowMs) * den)
  local ms, ticks = em_at(P, S)
  local dm = ms - nowMs
  if dm > 0 or (dm == 0 and ticks > nowTicks) then
    em_write(P, S, ms, ticks + cost * P.per)
  else
    em_write(P, S, nowMs, nowTicks + cost * P.per)
  end
end

-- Every gcra check runs this: em_at, and on the admitting path em_write and em_remaining, are
-- written out inline, since a Lua call costs Redis about 1,000 instructions per check
-- (bench/redis-callgrind.mjs). The denying paths keep the calls.
local function em_step(P, S, now, cost, commit)
  local den, per, burst, tau = P.den, P.per, P.burst, P.tau
  -- floor(x) of a finite x is x - x % 1 here, exactly (x % 1 is x - floor(x), an exact
  -- difference), without math.floor's C call (~500 Redis instructions each, callgrind).
  local nowMs = now - now % 1
  local nowTicks = (now - nowMs) * den
  nowTicks = nowTicks - nowTicks % 1
  local ms, ticks = S.ms, S.ticks
  if S.den ~= den and ticks ~= 0 then ms, ticks = ms + 1, 0 end
  local dm, frac = ms - nowMs, ticks - nowTicks
  local ahead = dm > 0 or (dm == 0 and frac > 0)
  if ahead and dm > P.nearMs then
    -- Far ahead: backlog > tau; figures are whole ms plus a tick remainder, never ms * den.
    local reset = dm + ceil(frac / den)
    if cost > burst then return false, 0, INF, reset end
    return false, 0, dm + ceil((frac + cost * per - tau) / den), reset
  end
  local backlog = 0 -- ticks of earlier requests still ahead of this one
  if ahead then backlog = dm * den + frac end
  if cost > burst then return false, em_remaining(P, backlog), INF, ceil(backlog / den) end
  local need = cost * per
  if backlog <= tau - need then
    local after = backlog + need
    if commit then
      local at = nowTicks + after
      local carry = at / den
      carry = carry - carry % 1
      S.ms, S.ticks, S.den = nowMs + carry, at - carry * den, den
    end
    local delay = 0
    if P.delays then delay = ceil(backlog / den) end
    -- after <= tau: never below 0, so em_remaining's clamp is not needed here. The same floor
    -- as above, and ceil(q) as floor(q) + 1 unless q is whole (q >= 0: no sign of zero to keep).
    local left = (tau - after) / per
    local reset = after / den
    local part = reset % 1
    if part > 0 then reset = reset - part + 1 end
    return true, left - left % 1, delay, reset
  end
  return false, em_remaining(P, backlog), ceil((backlog + need - tau) / den), ceil(backlog / den)
end

-- bareChecks (check.lua) for a member whose interval is whole ms (den 1, so every record is a
-- bare whole-ms number and ticks are 0): the checks first..last in one function, the record's
-- load (em_quick), em_step's admitting path and em_store written out inline, with the state in
-- locals, not P.S: no Lua call and no scratch table per admitted check (with live keys a
-- decision cost Redis 34,998 instructions through bareChecks and 28,115 here, callgrind,
-- bench/redis-callgrind.mjs, 2026-12-07). A check it does not admit is decided by
-- em_step itself. Same figures, same write, same reply as bareChecks; like it, it appends each
-- check's 4 figures to out (from n) after its write, and raises on a record it cannot read
-- (the caller then takes that check again through em_load: check.lua).
local function em_bare(P, now, cost, first, last, keys, vals, out, n)
  local S, per, burst, tau, nearMs = P.S, P.per, P.burst, P.tau, P.nearMs
  local nowMs = now - now % 1
  -- em_step's nowTicks with den 1: floor of a fraction below 1.
  local need = cost * per
  for i = first, last do
    local key = keys[i]
    local raw
    if vals then raw = vals[i] else raw = call('GET', key) end
    local ms = -INF
    if raw then
      ms = raw + 0
      if ms ~= ms then error('not a sluice gcra state: ' .. raw) end
      local part = ms % 1
      if part > 0 then
        if ms >= 0 then ms = ms - part + 1 else ms = ceil(ms) end
      end
    end
    local dm = ms - nowMs
    local backlog = 0
    if dm > 0 then backlog = dm end
    if dm > nearMs or cost > burst or backlog > tau - need then
      S.ms, S.ticks, S.den = ms, 0, 1
      local ok, remaining, slot, reset = em_step(P, S, now, cost, true)
      if ok then
        em_store(P, S, key, now)
      elseif raw and call('PTTL', key) == -1 then
        call('PEXPIRE', key, ttl(em_fresh(P, S), now))
      end
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] =
        ok and '1' or '0', TXT[remaining] or enc(remaining), TXT[slot] or enc(slot), TXT[reset] or enc(reset)
    else
      local after = backlog + need
      ms = nowMs + after
      local delay = 0
      if P.delays then delay = backlog end
      local left = (tau - after) / per
      left = left - left % 1
      -- em_store with ticks 0: the expiry, its text kept in TXT (it is resetMs, `after`, when
      -- now is whole and there is no grace), and the value.
      local ttlMs = ms - now
      local part = ttlMs % 1
      if part > 0 then ttlMs = ttlMs - part + 1 end
      if not (ttlMs >= 1) then ttlMs = 1 end
      ttlMs = ttlMs + grace
      if ttlMs > MAX_TTL then ttlMs = MAX_TTL end
      local ttlText = TXT[ttlMs]
      if not ttlText then
        ttlText = fmt('%d', ttlMs)
        if ttlMs < TWO_POW_53 then TXT[ttlMs] = ttlText end
      end
      local value
      if ms < TWO_POW_53 and ms > -TWO_POW_53 then
        value = fmt('%d', ms)
      else
        S.ms, S.ticks, S.den = ms, 0, 1
        value = em_save(P, S)
      end
      call('PSETEX', key, ttlText, value)
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] =
        '1', TXT[left] or enc(left), TXT[delay] or enc(delay), TXT[after] or enc(after)
    end
    n = n + 4
  end
end

local function emission(delays)
  return function(per, den, burst)
    local tau = burst * per
    return {
      per = per, den = den, burst = burst, tau = tau, nearMs = ceil(tau / den) + 1, delays = delays,
      S = {}, tails = {}, tailCount = 0,
      step = em_step, refund = em_refund, fresh = em_fresh, force = em_force,
      load = em_load, save = em_save, write = em_store, quick = den == 1 and em_quick or em_load,
      bare = den == 1 and em_bare or nil,
    }
  end
end
ALGO.g = emission(false)
ALGO.b = emission(true)
