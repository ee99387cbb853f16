-- Storage of a fixed-window state (w, c): ONE integer k * 2^21 + c, where k = w / W is the
-- window's index, whenever 0 <= k < 2^32 and 0 <= c < 2^21 (windows of 410 ms and more until
-- 2106, fewer than 2M requests per window): Redis keeps such a value as a bare integer, without
-- an allocation. Anything else (a fresh state's -Infinity included) as the exact text "w c".
local FW_M = 2097152 -- 2^21
local FW_K = 4294967296 -- 2^32

-- The member's scratch state (P.S) is refilled by every load: no table is built per check.
-- S.w0 remembers the stored window when it was stored as an integer (else nil), for fw_write.
local function fw_load(P, raw)
  local S = P.S
  if not raw then
    S.w, S.c, S.w0 = -INF, 0, nil
    return S
  end
  local v = tonumber(raw)
  if v then
    local c = v % FW_M
    -- (v - c) / 2^21 is exact, and k * W reproduces the stored w bit for bit (checked on save).
    local w = ((v - c) / FW_M) * P.W
    S.w, S.c, S.w0 = w, c, w
    return S
  end
  local w, c = match(raw, '^(%S+) (%S+)$')
  if not w then error('not a sluice fixed-window state: ' .. raw) end
  S.w, S.c, S.w0 = tonumber(w), tonumber(c), nil
  return S
end

local function fw_save(P, S)
  local w, c, W = S.w, S.c, P.W
  local k = w / W
  if k >= 0 and k < FW_K and k == floor(k) and k * W == w and c >= 0 and c < FW_M and c == floor(c) then
    return fmt('%d', k * FW_M + c)
  end
  return fmt('%.17g %.17g', w, c)
end

-- After a check within the window already stored as an integer, INCRBY adds the cost
-- (k * 2^21 + c stays below 2^53 while c < 2^21) and keeps the key's expiry, which is this
-- window's end and so still exactly when the state becomes fresh: one cheap command instead
-- of a SET with PX. (A key whose expiry was removed gets it back at its next window or denial.)
local function fw_write(P, S, key, now, costText)
  if S.w0 == S.w and S.c < FW_M then
    call('INCRBY', key, costText)
  else
    setState(P, S, key, now, costText)
  end
end

-- Storage of a first-hit window state (w, c) (anchor "first", ALGO.F): w is any instant (the
-- key's first counted request, fractions included), so it is kept as the exact text "w c".
local function ff_load(P, raw)
  local S = P.S
  if not raw then
    S.w, S.c = -INF, 0
    return S
  end
  local w, c = match(raw, '^(%S+) (%S+)$')
  if not w then error('not a sluice first-hit window state: ' .. raw) end
  S.w, S.c = tonumber(w), tonumber(c)
  return S
end

local function ff_save(P, S)
  return fmt('%.17g %.17g', S.w, S.c)
end
