-- Twin of src/algorithms/gcra.ts (gcra, code g, and leaky-bucket, code b: the same arithmetic;
-- the leaky bucket also reports delayMs). State "tat": the theoretical arrival time.
-- T arrives as the exact double the TS side computed (periodMs / limit or 1000 / leakPerSecond).
-- 2^-44, exactly.
local TWO_POW_M44 = math.ldexp(1, -44)

local function emission(delays)
  return {
    params = function(a, b)
      local T, burst = tonumber(a), tonumber(b)
      return { T = T, burst = burst, tau = burst * T }
    end,
    load = function(raw)
      if not raw then return { tat = -INF } end
      return { tat = tonumber(raw) }
    end,
    save = function(s) return num(s.tat) end,
    fresh_at = function(p, s) return s.tat end,
    step = function(p, state, now, cost, commit)
      local T, burst, tau = p.T, p.burst, p.tau
      -- Whole units that still fit behind `ms` of backlog, by the same test (and tolerance) as admission.
      local function whole(ms, tol) return jmax(0, math.floor((tau + tol - ms) / T + 1e-9)) end
      local start = jmax(state.tat, now)
      local backlog = start - now
      -- `next - now` summed from relative figures (epoch-ms magnitudes would add rounding).
      local ahead = backlog + cost * T
      -- Tolerance for the rounding absolute times carry (the TS step's formula, to the bit).
      local tol = EPSILON + jmin(0.25, (math.abs(now) + tau) * TWO_POW_M44)
      local function up(ms)
        if ms <= tol then return 0 end
        return math.ceil(ms - tol)
      end
      if cost > burst then return dec(false, burst, whole(backlog, tol), INF, up(backlog)) end
      if ahead <= tau + tol then
        if commit then state.tat = start + cost * T end
        local delay = 0
        if delays then delay = up(backlog) end
        return dec(true, burst, whole(ahead, tol), 0, up(ahead), delay)
      end
      local retry = up(ahead - tau)
      -- Float noise must never tell a client to come back before it can pass.
      while jmax(0, backlog - retry) + cost * T > tau + tol and retry < MAX_SAFE_INTEGER do retry = retry + 1 end
      return dec(false, burst, whole(backlog, tol), retry, up(backlog))
    end,
  }
end
ALGO.g = emission(false)
ALGO.b = emission(true)
