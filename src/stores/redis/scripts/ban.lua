-- Twin of src/core/ban.ts: escalation after repeated denials. A policy is { after, withinMs, forMs };
-- a ban state { n, since, until } (`until` is a Lua keyword, hence B['until']).

-- When the ban state no longer changes any decision.
local function banFreshAt(state, policy)
  local at = -INF
  if state.n > 0 then at = state.since + policy.withinMs end
  if state['until'] > at then return state['until'] end
  return at
end

-- Counts one denial at `now`; returns true when it starts a ban. The count restarts when the
-- span since the first counted denial has passed, and after a ban begins.
local function countDenial(state, policy, now)
  if state.n == 0 or now - state.since >= policy.withinMs then
    state.since = now
    state.n = 0
  end
  state.n = state.n + 1
  if state.n < policy.after then return false end
  state['until'] = now + policy.forMs
  state.n = 0
  return true
end
