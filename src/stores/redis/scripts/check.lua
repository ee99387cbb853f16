-- Decides a batch of checks, in order, each atomically (the whole script is atomic).
--
-- ARGV[1]: extra expiry grace in ms. ARGV[2]: R, the rules used in this batch; then per rule:
-- m (its members) and per member its algorithm code and two parameters (sent once per batch,
-- not once per check). Then 3 per check: its rule (1..R), its cost (negative: a peek) and now
-- ('' = Redis TIME) — or, when those 3 are the same for every check, '=' and the 3 once.
-- KEYS: the m member keys of each check in turn.
--
-- Reply: a flat array, 4 values per member of each check: 1 (allowed) or 0 (denied),
-- remaining, retryAfterMs when denied or delayMs when allowed, resetMs — the member decisions
-- to report (a denied composite reports each member that would have allowed as its unconsumed
-- cost-0 re-evaluation). Figures are integers, or exact text when they are not whole (see
-- enc). A check that failed (a foreign value at its key, say) has -1 and the error text in
-- place of its first member's status and remaining, and zeros elsewhere.
if redis.replicate_commands then pcall(redis.replicate_commands) end

local server_now = nil

-- Redis TIME as epoch ms, read at most once per script call.
local function redis_now()
  if not server_now then
    local t = call('TIME')
    server_now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  end
  return server_now
end

-- A stored key that lost its expiry (PERSIST, a restore) gets it back on the next denial.
local function repair(P, S, key, now)
  if call('PTTL', key) == -1 then call('PEXPIRE', key, ttl(P.fresh(P, S), now)) end
end

-- One member: the step commits by itself, exactly as the memory store runs it; the member
-- writes its state (see `write` in prelude.lua).
local function single(P, key, now, cost, commit, costText)
  local raw = call('GET', key)
  local S = P.load(P, raw)
  local ok, remaining, slot, reset = P.step(P, S, now, cost, commit)
  if commit then
    if ok then
      P.write(P, S, key, now, costText)
    elseif raw then
      repair(P, S, key, now)
    end
  end
  return ok, remaining, slot, reset
end

-- A composite: every member at one `now` without committing; all or nothing. Returns the
-- members' figures, 4 per member.
local function composite(ms, k, now, cost, commit)
  local count = #ms
  local raws, states, figures, all = {}, {}, {}, true
  for i = 1, count do
    local P = ms[i]
    raws[i] = call('GET', KEYS[k + i])
    states[i] = P.load(P, raws[i])
  end
  for i = 1, count do
    local P, f = ms[i], 4 * i
    local ok, remaining, slot, reset = P.step(P, states[i], now, cost, false)
    figures[f - 3], figures[f - 2], figures[f - 1], figures[f] = ok, remaining, slot, reset
    if not ok then all = false end
  end
  if all then
    if commit then
      -- Every member is computed and encoded before the first write: an error leaves nothing half-done.
      local values, ttls = {}, {}
      for i = 1, count do
        local P = ms[i]
        P.step(P, states[i], now, cost, true)
        values[i] = P.save(P, states[i])
        ttls[i] = ttl(P.fresh(P, states[i]), now)
      end
      for i = 1, count do call('SET', KEYS[k + i], values[i], 'PX', ttls[i]) end
    end
  else
    for i = 1, count do
      local P, f = ms[i], 4 * i
      if figures[f - 3] then
        figures[f - 3], figures[f - 2], figures[f - 1], figures[f] = P.step(P, states[i], now, 0, false)
      end
      if commit and raws[i] then repair(P, states[i], KEYS[k + i], now) end
    end
  end
  return figures
end

-- The rules of this batch: each member's parameters are parsed once. Rules are keyed by the
-- index text the checks name them by ("1", "2", ...), so a check needs no tonumber for it.
local rules = {}
local a = 3
for r = 1, tonumber(ARGV[2]) do
  local count = tonumber(ARGV[a])
  a = a + 1
  local ms = {}
  for i = 1, count do
    ms[i] = ALGO[ARGV[a]](tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]))
    a = a + 3
  end
  rules[tostring(r)] = ms
end

local out, n, k = {}, 0, 0
local function failed(count, err)
  if type(err) == 'table' then err = err.err end
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = -1, 'error: ' .. tostring(err), 0, 0
  for j = n + 5, n + 4 * count do out[j] = 0 end
  n = n + 4 * count
end

-- A check's cost (its sign says peek: then nothing is committed) and its now.
local function parse(costText, nowText)
  local cost = tonumber(costText)
  local commit = cost > 0
  if not commit then cost = -cost end
  if nowText == '' then return cost, commit, redis_now() end
  return cost, commit, tonumber(nowText)
end

-- Decides one check of rule `ms` and appends its figures to `out`.
local function decide(ms, cost, commit, now, costText)
  local count = #ms
  -- An error in one check (a foreign value at its key, say) fails that check alone: the
  -- checks before it in this batch have already counted and must be reported as decided.
  if count == 1 then
    local done, ok, remaining, slot, reset = pcall(single, ms[1], KEYS[k + 1], now, cost, commit, costText)
    if done then
      out[n + 1], out[n + 2], out[n + 3], out[n + 4] = ok and 1 or 0, enc(remaining), enc(slot), enc(reset)
      n = n + 4
    else
      failed(1, ok)
    end
  else
    local done, figures = pcall(composite, ms, k, now, cost, commit)
    if done then
      for f = 1, 4 * count, 4 do
        out[n + f] = figures[f] and 1 or 0
        out[n + f + 1], out[n + f + 2], out[n + f + 3] = enc(figures[f + 1]), enc(figures[f + 2]), enc(figures[f + 3])
      end
      n = n + 4 * count
    else
      failed(count, figures)
    end
  end
  k = k + count
end

if ARGV[a] == '=' then
  -- Every check of this batch has the same rule, cost and now (the usual case: one busy rule,
  -- cost 1, Redis TIME), sent once; the checks are counted by their keys.
  local ms, costText = rules[ARGV[a + 1]], ARGV[a + 2]
  local cost, commit, now = parse(costText, ARGV[a + 3])
  for _ = 1, #KEYS / #ms do decide(ms, cost, commit, now, costText) end
else
  for c = a, #ARGV, 3 do
    local costText = ARGV[c + 1]
    local cost, commit, now = parse(costText, ARGV[c + 2])
    decide(rules[ARGV[c]], cost, commit, now, costText)
  end
end
return out
