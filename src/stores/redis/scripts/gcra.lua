-- Twin of src/algorithms/gcra.ts (gcra, code g, and leaky-bucket, code b: the same arithmetic;
-- the leaky bucket also reports delayMs). State: the theoretical arrival time tat, stored as a
-- number (Redis writes it exactly; a whole one is kept as a bare integer).
-- T arrives as the exact double the TS side computed (periodMs / limit or 1000 / leakPerSecond).
local TWO_POW_M44 = math.ldexp(1, -44) -- 2^-44, exactly

-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
local function em_load(P, raw)
  local S = P.S
  if not raw then
    S.tat = -INF
    return S
  end
  local tat = tonumber(raw)
  if not tat then error('not a sluice gcra state: ' .. raw) end
  S.tat = tat
  return S
end

-- '%d' for a whole tat (cheap, and Redis keeps it as a bare integer); exact '%.17g' otherwise
-- (which also keeps the sign of a zero).
local function em_save(P, S)
  local tat = S.tat
  if tat == floor(tat) and tat < TWO_POW_53 and tat > -TWO_POW_53 and tat ~= 0 then return fmt('%d', tat) end
  return fmt('%.17g', tat)
end

local function em_fresh(P, S) return S.tat end

local function em_step(P, S, now, cost, commit)
  local T, burst, tau = P.T, P.burst, P.tau
  local tat = S.tat
  local start = now -- jmax(tat, now), inlined
  if tat > now then start = tat elseif tat == now and now == 0 then start = tat + now end
  local backlog = start - now -- ms of earlier requests still ahead of this one
  -- `next - now` summed from relative figures (epoch-ms magnitudes would add rounding).
  local ahead = backlog + cost * T
  -- Tolerance for the rounding absolute times carry (the TS step's formula, to the bit).
  local tol = EPSILON + jmin(0.25, (abs(now) + tau) * TWO_POW_M44)
  local lim = tau + tol
  -- up(ms) of the TS step: ceilMs with that tolerance; whole(ms): the units that still fit.
  local resetUp = 0
  if backlog > tol then resetUp = ceil(backlog - tol) end
  if cost > burst then return false, atLeast0(floor((lim - backlog) / T + 1e-9)), INF, resetUp end
  if ahead <= lim then
    if commit then S.tat = start + cost * T end
    local delay = 0
    if P.delays then delay = resetUp end
    local reset = 0
    if ahead > tol then reset = ceil(ahead - tol) end
    return true, atLeast0(floor((lim - ahead) / T + 1e-9)), delay, reset
  end
  local retry = 0
  if ahead - tau > tol then retry = ceil(ahead - tau - tol) end
  -- Float noise must never tell a client to come back before it can pass.
  local need = cost * T
  while jmax(0, backlog - retry) + need > lim and retry < MAX_SAFE_INTEGER do retry = retry + 1 end
  return false, atLeast0(floor((lim - backlog) / T + 1e-9)), retry, resetUp
end

local function emission(delays)
  return function(T, burst)
    return {
      T = T, burst = burst, tau = burst * T, delays = delays, S = {},
      load = em_load, step = em_step, fresh = em_fresh, save = em_save, write = write,
    }
  end
end
ALGO.g = emission(false)
ALGO.b = emission(true)
