-- The entry point: decides a batch of checks, in order, each atomically (the whole script is
-- atomic), by decideRule (decide-rule.lua) on the one record each (rule, key) has.
--
-- ARGV[1]: extra expiry grace in ms. ARGV[2]: the number of rules used in this batch; then per
-- rule (sent once per batch, not once per check): m (its members), its ban policy as after,
-- withinMs and forMs (after 0: no ban), and per member its algorithm code and three parameters.
-- Then 4 per check: its rule (1..), its op ('c' check, 'p' peek, 'r' refund, 'r<at>' refund
-- with a receipt, 'x' penalty, 'b' block for cost ms, 'g' get, 'e<at>' / 'n<at>' a release /
-- renewal of the leases of receipt <at>), its cost and
-- now ('' = Redis TIME) — or, when those 4 are the same for every check, '=' and the 4 once
-- ('*' in place of '=': no key comes twice in the batch, so every record may be read at once).
-- KEYS: the record key of each check in turn.
--
-- Reply: the text of one JSON array (see enc in prelude.lua), per check 4 values per member
-- (1 allowed or 0 denied, remaining, retryAfterMs when denied or delayMs when allowed, resetMs:
-- the member decisions decideRule made), then, for a rule with a ban, the ban's time left (0:
-- not banned); a rule without a ban carries a block's time left on its first status instead
-- ("b1/<ms>", "b0/<ms>"). Figures are integers, or exact %.17g when they are not whole (see
-- enc). A check that failed (a foreign value at its key, say) has -1 and the error text in
-- place of its first status and remaining, and zeros elsewhere.

-- Effects replication and the server's clock are the deadline guard's (script.ts): it asks for
-- the first and reads Redis TIME as epoch ms once, as the call begins (sluice_ms), before this
-- code runs. A check without an injected now is decided at that reading, so a call reads the
-- clock once (a second TIME here cost each call another command, callgrind).

-- The rules of this batch and the reply so far (figures `out`, n of them; k checks decided),
-- made anew by every call (sluice_batch).
local rules, out, n, k = {}, {}, 0, 0

-- The records of a batch's keys read at once (MGET: one command where a GET per check cost each
-- check ~1,500 Redis instructions more, callgrind), value i for KEYS[i], false where absent;
-- nil when each check reads its own. Only for a batch whose keys are distinct (a key written
-- earlier in the call would be read stale) and hold no blocked record (see readAll).
local VALS = nil

-- The hot path, checks of a bare rule: decideRule's first branch (the member's step, committed)
-- with the record's storage around it, inlined: one GET, one step, one write, and none of the
-- composite bookkeeping. Every other operation and rule goes through `run`. The parity suite
-- holds both against the TS decideRule.
-- It decides the keys k+1..last in turn, each a bare check of member P, unprotected: the
-- caller's one pcall covers them all (a pcall per check cost 6-8% of a check, callgrind), and
-- k says where an error stopped them. A check that stops it changed nothing (it writes last, in
-- one command). The loop makes no Lua call of its own per check: a per-check function cost
-- ~1,000 Redis instructions of a ~44,000 check, and a figure whose text enc already made this
-- call is taken from TXT directly (TXT holds only enc's texts of whole figures, TXT[-0] is
-- TXT[0]), which saved 3,000-4,000 more (callgrind). `load` is P.load, or on the batch's first
-- pass P.quick where the member has one (a cheaper read of its usual value that raises on any
-- other: that check is then decided again, by `decide`, through P.load).
local function bareChecks(P, now, cost, costText, last, load)
  for i = k + 1, last do
    local key = KEYS[i]
    local raw
    if VALS then raw = VALS[i] else raw = call('GET', key) end
    local S = load(P, raw)
    local ok, remaining, slot, reset = P.step(P, S, now, cost, true)
    if ok then
      P.write(P, S, key, now, costText)
    elseif raw and call('PTTL', key) == -1 then
      call('PEXPIRE', key, ttl(P.fresh(P, S), now))
    end
    k = i
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] =
      ok and '1' or '0', TXT[remaining] or enc(remaining), TXT[slot] or enc(slot), TXT[reset] or enc(reset)
    n = n + 4
  end
end

-- Appends the reply of a check of rule R that failed with `err`: -1 and the error text in place
-- of its first status and remaining, zeros elsewhere.
local function failed(R, err)
  local width = 4 * R.count
  if R.ban then width = width + 1 end
  if type(err) == 'table' then err = err.err end
  out[n + 1], out[n + 2] = '-1', cjson.encode('error: ' .. tostring(err))
  for j = n + 3, n + width do out[j] = '0' end
  n = n + width
end

-- Decides one check of rule R and appends its figures to `out`.
local function decide(R, op, cost, now, costText)
  -- An error in one check (a foreign value at its key, say) fails that check alone: the
  -- checks before it in this batch have already counted and must be reported as decided.
  local done, left, blocked
  if op == CHECK and R.bare then
    done, left = pcall(bareChecks, R.first, now, cost, costText, k + 1, R.first.load)
    if done then return end
  end
  k = k + 1
  -- A receipt rides on its op code: a refund's 'r', a release's 'e' or a renewal's 'n', followed
  -- by the instant the check (or the last renewal) was decided.
  local at = nil
  if #op > 1 then
    at = tonumber(sub(op, 2))
    op = sub(op, 1, 1)
  end
  -- Every other operation, and a bare check whose GET found a blocked key's hash (see loadRaw).
  if not (op == CHECK and R.bare) or string.find(tostring(type(left) == 'table' and left.err or left), 'WRONGTYPE', 1, true) then
    done, left, blocked = pcall(run, R, KEYS[k], now, cost, op, costText, at)
  end
  if not done then
    failed(R, left)
    return
  end
  local count = R.count
  local width = 4 * count
  if R.ban then width = width + 1 end
  for f = 1, 4 * count, 4 do
    out[n + f] = FIG[f] and '1' or '0'
    out[n + f + 1], out[n + f + 2], out[n + f + 3] = enc(FIG[f + 1]), enc(FIG[f + 2]), enc(FIG[f + 3])
  end
  -- A get of a record equivalent to a fresh one: status 2 (allowed, fresh) on its first member.
  if op == GET and GOT_FRESH then out[n + 1] = '2' end
  if R.ban then
    out[n + width] = left and enc(left) or '0'
  elseif blocked then
    -- A block on a rule without a ban: its time left rides on the first status, as 'b1/<ms>'
    -- or 'b0/<ms>' (that member allows one unit or not), so the reply keeps its width.
    out[n + 1] = (FIG[1] and '"b1/' or '"b0/') .. fmt('%d', left) .. '"'
  end
  n = n + width
end

-- Reads every key's record at once into VALS (the batch's keys are distinct). MGET answers
-- false for a key holding another type as for an absent one: when one of the keys it found no
-- string at exists (a blocked key's hash, a foreign value), every check reads its own, so those
-- fail their GET and are decided the way they are today (`decide`).
local function readAll(last)
  VALS = call('MGET', unpackList(KEYS, 1, last))
  local gone, m = nil, 0
  for i = 1, last do
    if not VALS[i] then
      if m == 0 then gone = {} end
      m = m + 1
      gone[m] = KEYS[i]
    end
  end
  if m > 0 and call('EXISTS', unpackList(gone, 1, m)) > 0 then VALS = nil end
end

-- A check's now: injected, or Redis TIME (the guard's reading).
local function parseNow(nowText)
  if nowText == '' then return sluice_ms end
  return tonumber(nowText)
end

-- Compiled rules by the text of their parameters. A function library keeps them from call to
-- call (a script starts empty on every call): parsing a one-member rule (seven tonumber, four
-- tables) cost a call ~30,000 Redis instructions, a one-check call's quarter (callgrind). A
-- compiled rule holds nothing of a call but scratch refilled on use. Emptied past 256 rules.
-- A script, whose table is new on every call, skips it (ARGV is there as a script loads; a
-- library is defined before any call).
local compiled, compiledCount, keepRules = {}, 0, not ARGV

-- Decides the call's batch; returns the reply's text. The rules are keyed by the index text the
-- checks name them by ("1", "2", ...), so a check needs no tonumber for it.
local function sluice_batch()
  rules, out, n, k, VALS = {}, {}, 0, 0, nil
  local a = 3
  for r = 1, tonumber(ARGV[2]) do
    local last = a + 3 + 4 * tonumber(ARGV[a])
    local text = keepRules and table.concat(ARGV, ' ', a, last)
    local R = text and compiled[text]
    if not R then
      local members = {}
      for i = 1, tonumber(ARGV[a]) do
        local m = a + 4 * i
        members[i] = ALGO[ARGV[m]](tonumber(ARGV[m + 1]), tonumber(ARGV[m + 2]), tonumber(ARGV[m + 3]))
      end
      R = compileRule(members, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]))
      if text then
        if compiledCount >= 256 then compiled, compiledCount = {}, 0 end
        compiled[text], compiledCount = R, compiledCount + 1
      end
    end
    rules[r == 1 and '1' or tostring(r)] = R
    a = last + 1
  end
  local uniform = ARGV[a]
  if uniform == '=' or uniform == '*' then
    -- Every check of this batch has the same rule, op, cost and now (the usual case: one busy
    -- rule, cost 1, Redis TIME), sent once; the checks are counted by their keys.
    local R, op, costText = rules[ARGV[a + 1]], ARGV[a + 2], ARGV[a + 3]
    local cost, now = tonumber(costText), parseNow(ARGV[a + 4])
    if op == CHECK and R.bare then
      -- The hot path. A check that stops it changed nothing: `decide` takes that key again, the
      -- way every other check goes (a blocked key's hash is decided there; a foreign value fails
      -- that check alone), and the rest go on.
      local last = #KEYS
      -- Protected: where MGET or EXISTS is refused (an ACL allowing GET alone, say), every
      -- check reads its own, as before.
      if uniform == '*' and last > 1 and not pcall(readAll, last) then VALS = nil end
      local P = R.first
      local load, bare = P.quick or P.load, P.bare
      while k < last do
        local done
        if bare then
          -- The member's own loop (gcra.lua's em_bare): it appends each check's 4 figures after
          -- its write, so what `out` holds says how far it got, even when it stopped.
          done = pcall(bare, P, now, cost, k + 1, last, KEYS, VALS, out, n)
          local m = #out
          k, n = k + (m - n) / 4, m
        else
          done = pcall(bareChecks, P, now, cost, costText, last, load)
        end
        if not done then decide(R, op, cost, now, costText) end
      end
    else
      for _ = 1, #KEYS do decide(R, op, cost, now, costText) end
    end
  else
    for c = a, #ARGV, 4 do
      local costText = ARGV[c + 2]
      decide(rules[ARGV[c]], ARGV[c + 1], tonumber(costText), parseNow(ARGV[c + 3]), costText)
    end
  end
  return '[' .. table.concat(out, ',') .. ']'
end
