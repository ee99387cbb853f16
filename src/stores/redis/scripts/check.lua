-- Decides a batch of checks, in order, each atomically (the whole script is atomic).
-- ARGV[1]: extra expiry grace in ms. Then per check: m (members), now ('' = Redis TIME), cost,
-- peek (1/0), and per member: algorithm code and its two parameters. KEYS: the m member keys of
-- each check in turn. Reply: per check, per member, 6 strings (allowed, limit, remaining,
-- retryAfterMs, resetMs, delayMs): the member decisions to report (a denied composite reports
-- each member that would have allowed as its unconsumed cost-0 re-evaluation).
if redis.replicate_commands then pcall(redis.replicate_commands) end

local grace = tonumber(ARGV[1])
local server_now = nil

-- Redis TIME as epoch ms, read at most once per script call.
local function redis_now()
  if not server_now then
    local t = redis.call('TIME')
    server_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return server_now
end

-- Milliseconds until `state` is equivalent to an absent key: the key's expiry (at least 1 ms).
local function ttl(m, now)
  local ms = math.ceil(m.algo.fresh_at(m.p, m.state) - now)
  if not (ms >= 1) then ms = 1 end
  return string.format('%.0f', ms + grace)
end

local function save(m, now)
  redis.call('SET', m.key, m.algo.save(m.state), 'PX', ttl(m, now))
end

-- A stored key that lost its expiry (PERSIST, a restore) gets it back on the next denial.
local function repair(m, now)
  if m.raw and redis.call('PTTL', m.key) == -1 then redis.call('PEXPIRE', m.key, ttl(m, now)) end
end

local out = {}
local function emit(d)
  out[#out + 1] = d[1] and '1' or '0'
  for j = 2, 6 do out[#out + 1] = num(d[j]) end
end

-- One check: its members' keys and parameters are parsed before it runs.
local function decide(ms, now, cost, peek)
  local count = #ms
  for i = 1, count do
    local m = ms[i]
    local raw = redis.call('GET', m.key)
    if raw then m.raw = raw end
    m.state = m.algo.load(m.raw, m.p)
  end
  if count == 1 then
    -- One member: the step commits by itself, exactly as the memory store runs it.
    local m = ms[1]
    local d = m.algo.step(m.p, m.state, now, cost, not peek)
    if not peek then
      if d[1] then save(m, now) else repair(m, now) end
    end
    return { d }
  end
  -- A composite: every member at one `now` without committing; all or nothing.
  local parts, all = {}, true
  for i = 1, count do
    local m = ms[i]
    parts[i] = m.algo.step(m.p, m.state, now, cost, false)
    if not parts[i][1] then all = false end
  end
  if all then
    if not peek then
      -- Commit only after every member has been computed, so a failure leaves nothing half-done.
      for i = 1, count do ms[i].algo.step(ms[i].p, ms[i].state, now, cost, true) end
      local text = {}
      for i = 1, count do text[i] = { ms[i].algo.save(ms[i].state), ttl(ms[i], now) } end
      for i = 1, count do redis.call('SET', ms[i].key, text[i][1], 'PX', text[i][2]) end
    end
  else
    for i = 1, count do
      local m = ms[i]
      if parts[i][1] then parts[i] = m.algo.step(m.p, m.state, now, 0, false) end
      if not peek then repair(m, now) end
    end
  end
  return parts
end

local a, k = 2, 0
while a <= #ARGV do
  local count = tonumber(ARGV[a])
  local now = ARGV[a + 1]
  if now == '' then now = redis_now() else now = tonumber(now) end
  local cost = tonumber(ARGV[a + 2])
  local peek = ARGV[a + 3] == '1'
  a = a + 4
  local ms = {}
  for i = 1, count do
    k = k + 1
    local algo = ALGO[ARGV[a]]
    ms[i] = { algo = algo, p = algo.params(ARGV[a + 1], ARGV[a + 2]), key = KEYS[k] }
    a = a + 3
  end
  -- An error in one check (a foreign value at its key, say) fails that check alone: the
  -- checks before it in this batch have already counted and must be reported as decided.
  local ok, result = pcall(decide, ms, now, cost, peek)
  if ok then
    out[#out + 1] = 'ok'
    for i = 1, count do emit(result[i]) end
  else
    if type(result) == 'table' then result = result.err end
    out[#out + 1] = 'error: ' .. tostring(result)
    for _ = 1, count * 6 do out[#out + 1] = '' end
  end
end
return out
