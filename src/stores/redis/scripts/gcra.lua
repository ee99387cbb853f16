-- Twin of src/algorithms/gcra.ts (gcra, code g, and leaky-bucket, code b: the same arithmetic;
-- the leaky bucket also reports delayMs; storage: codecs/gcra.lua). State: the theoretical
-- arrival time tat. T arrives as the exact double the TS side computed (periodMs / limit or
-- 1000 / leakPerSecond).
local TWO_POW_M44 = math.ldexp(1, -44) -- 2^-44, exactly

local function em_fresh(P, S) return S.tat end

local function em_refund(P, S, now, cost, at)
  -- Backlog ahead of now shrinks by the refunded emissions; time already past stays past.
  -- With a receipt, what has drained since the check is not given back twice.
  local give = cost * P.T
  if at then
    local since = now - at
    if since < 0 then since = 0 end
    give = give - since
    if give < 0 then give = 0 end
  end
  local tat = S.tat
  if tat > now then
    tat = tat - give
    if now > tat then tat = now end
    S.tat = tat
  end
end

-- whole(ms) of the TS step: the units that still fit in `room` ms (the TS computes tau + tol - ms
-- left to right, as the callers' `lim - ms` does).
local function em_whole(room, T)
  local n = floor(room / T + 1e-9)
  if n < 0 then return 0 end
  return n
end

local function em_step(P, S, now, cost, commit)
  local T, burst, tau = P.T, P.burst, P.tau
  local tat = S.tat
  local start = now
  if tat > now then start = tat end
  local backlog = start - now -- ms of earlier requests still ahead of this one
  -- `next - now` summed from relative figures (epoch-ms magnitudes would add rounding).
  local ahead = backlog + cost * T
  -- Tolerance for the rounding absolute times carry (the TS step's formula, to the bit).
  local tol = (abs(now) + tau) * TWO_POW_M44
  if tol > 0.25 then tol = 0.25 end
  tol = EPSILON + tol
  local lim = tau + tol
  -- up(ms) of the TS step: ceilMs with that tolerance.
  local resetUp = 0
  if backlog > tol then resetUp = ceil(backlog - tol) end
  if cost > burst then return false, em_whole(lim - backlog, T), INF, resetUp end
  if ahead <= lim then
    if commit then S.tat = start + cost * T end
    local delay = 0
    if P.delays then delay = resetUp end
    local reset = 0
    if ahead > tol then reset = ceil(ahead - tol) end
    return true, em_whole(lim - ahead, T), delay, reset
  end
  local retry = 0
  if ahead - tau > tol then retry = ceil(ahead - tau - tol) end
  -- Float noise must never tell a client to come back before it can pass.
  local need = cost * T
  while true do
    local left = backlog - retry
    if left < 0 then left = 0 end
    if not (left + need > lim and retry < MAX_SAFE_INTEGER) then break end
    retry = retry + 1
  end
  return false, em_whole(lim - backlog, T), retry, resetUp
end

local function emission(delays)
  return function(T, burst)
    return {
      T = T, burst = burst, tau = burst * T, delays = delays, S = {},
      step = em_step, refund = em_refund, fresh = em_fresh,
      load = em_load, save = em_save, write = setState,
    }
  end
end
ALGO.g = emission(false)
ALGO.b = emission(true)
