-- Twin of src/algorithms/gcra.ts (gcra, code g, and leaky-bucket, code b: the same arithmetic;
-- the leaky bucket also reports delayMs). State "tat": the theoretical arrival time.
-- T arrives as the exact double the TS side computed (periodMs / limit or 1000 / leakPerSecond).
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
      local function whole(ms) return jmax(0, math.floor((tau - ms) / T + 1e-9)) end
      local start = jmax(state.tat, now)
      local nxt = start + cost * T
      local backlog = start - now
      if cost > burst then return dec(false, burst, whole(backlog), INF, ceilMs(backlog)) end
      if nxt - now <= tau + EPSILON then
        if commit then state.tat = nxt end
        local delay = 0
        if delays then delay = ceilMs(backlog) end
        return dec(true, burst, whole(nxt - now), 0, ceilMs(nxt - now), delay)
      end
      local retry = ceilMs(nxt - tau - now)
      -- Float noise must never tell a client to come back before it can pass.
      while jmax(state.tat, now + retry) + cost * T - (now + retry) > tau + EPSILON do retry = retry + 1 end
      return dec(false, burst, whole(backlog), retry, ceilMs(backlog))
    end,
  }
end
ALGO.g = emission(false)
ALGO.b = emission(true)
