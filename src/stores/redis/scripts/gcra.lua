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

local function emission(delays)
  return function(per, den, burst)
    local tau = burst * per
    return {
      per = per, den = den, burst = burst, tau = tau, nearMs = ceil(tau / den) + 1, delays = delays,
      S = {}, tails = {}, tailCount = 0,
      step = em_step, refund = em_refund, fresh = em_fresh, force = em_force,
      load = em_load, save = em_save, write = em_store,
    }
  end
end
ALGO.g = emission(false)
ALGO.b = emission(true)
