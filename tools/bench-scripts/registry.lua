-- wrk script for tools/bench: one file, the workload chosen by $BENCH_WORKLOAD.
--
-- It addresses the data set `registry-bench load` wrote (Sources/registry-bench/Loader.swift):
-- device k (0 <= k < $BENCH_DEVICES) belongs to user k / $BENCH_PER_USER, which is
-- "u" .. 8-digit index, and has deviceId "d" .. (k % per user); its push token is
-- "a1" .. zeros .. k in 16 hex digits (64 hex digits in all). With $BENCH_EXPIRE_EVERY = M > 0,
-- devices with k % M == 0 are expired and never addressed.
--
-- Workloads:
--   get          GET $BENCH_PATH (healthz, nginx)
--   upsert-mix   POST /v1/devices as apps send it: 90% re-registration of an existing device
--                with its token, 8% a new device of an existing user, 2% a token rotation
--   reregister   POST /v1/devices, 100% re-registration (same token, new sequence)
--   signout      DELETE /v1/devices/{id}?sequence=N, each request a different existing device
--   activity     POST /v1/activities/live-{c % 500}/activity-token, a new update token of an existing device
--   lookup       GET /internal/v1/users/{u}/devices
--   batch-lookup POST /internal/v1/users/lookup with $BENCH_BATCH (100) users
--   fanout       GET /internal/v1/activities/$BENCH_ACTIVITY/tokens?limit=$BENCH_PAGE_LIMIT, every
--                connection walking the activity page by page through nextCursor
--   peer         the launch upsert on the peer, django-push-notifications (tools/peer/, --compare-peer):
--                POST /device/apns/ of device k with the fields tools/peer/load.py created it with
--                (its push token, device_id the UUID of k, name "d" .. (k % per user), application_id
--                "bench"); with UPDATE_ON_DUPLICATE_REG_ID the library finds the device holding that
--                token and updates it (200), as registryd's reregister does
--
-- Device JWTs come from $BENCH_JWT_FILE: line s + 1 is user s * $BENCH_USER_STRIDE, for s below
-- $BENCH_SAMPLED_USERS (a large store is sampled evenly); the internal key from $BENCH_API_KEY.
-- Each thread owns every $BENCH_THREADS-th slot (a sampled user's device), visited in a permuted
-- order, so two threads never write one device and sequences ($BENCH_SEQ_BASE + a per-thread counter) only rise
-- per device. Rotations go to the last device of each user (d4 with 5 per user), re-registrations
-- to the others, so a rotated token is never re-sent as if unchanged by a later run.
-- done() prints one line "BENCH key=value ..." that tools/bench parses.

local workload = os.getenv("BENCH_WORKLOAD") or "get"
local devices = tonumber(os.getenv("BENCH_DEVICES") or "100000")
local per_user = tonumber(os.getenv("BENCH_PER_USER") or "5")
local expire_every = tonumber(os.getenv("BENCH_EXPIRE_EVERY") or "0")
local nthreads = tonumber(os.getenv("BENCH_THREADS") or "2")
local seq_base = tonumber(os.getenv("BENCH_SEQ_BASE") or "0")
local run_id = tonumber(os.getenv("BENCH_RUN") or "0")
local users = math.floor((devices + per_user - 1) / per_user)
-- The users with JWTs: user s * stride for s < sampled (line s + 1 of the JWT file); a large data
-- set is sampled evenly, so writes and reads still land all over the store.
local user_stride = tonumber(os.getenv("BENCH_USER_STRIDE") or "1")
local sampled = tonumber(os.getenv("BENCH_SAMPLED_USERS") or tostring(users))
local api_key = os.getenv("BENCH_API_KEY") or ""
local path = os.getenv("BENCH_PATH") or "/healthz"
local batch = tonumber(os.getenv("BENCH_BATCH") or "100")
local activity = os.getenv("BENCH_ACTIVITY") or "big"
local page_limit = os.getenv("BENCH_PAGE_LIMIT") or "500"

local threads = {}

function setup(thread)
  thread:set("tid_value", #threads)
  table.insert(threads, thread)
end

-- Per-thread state. The globals are what done() reads through thread:get.
local tid = 0
local jwts = {}
counts = {}              -- status -> count
local walks = {}         -- walk name -> counter
local requests_made = 0
first_pass_size = 0      -- sign-out: how far the walk went (> owned: devices deleted twice)
local seq = 0
local cursors = {}       -- fan-out: cursors waiting for their next page (a queue)
local cursor_head, cursor_tail = 1, 0
pages, walks_done, tokens_seen = 0, 0, 0

local function user_id(i) return string.format("u%08d", i) end

local function hex_token(prefix, k)
  return prefix .. string.rep("0", 46) .. string.format("%08x%08x", math.floor(k / 4294967296), k % 4294967296)
end

-- A token no one holds: kind prefix, run id, thread, counter.
local function fresh_token(prefix, n)
  return prefix .. string.rep("0", 38) .. string.format("%08x%04x%012x", run_id % 4294967296, tid, n)
end

-- Slots: slot i is device i % per_user of sampled user floor(i / per_user). This thread owns the
-- slots tid + nthreads * m, m < owned, walked in the order m = c * P mod owned.
owned = 0
local stride_prime = 1000003

function init(args)
  tid = tonumber(tid_value or 0)
  owned = math.floor((sampled * per_user - 1 - tid) / nthreads) + 1
  if owned % stride_prime == 0 then stride_prime = 999983 end
  local file = os.getenv("BENCH_JWT_FILE")
  if file and file ~= "" then
    for line in io.lines(file) do jwts[#jwts + 1] = line end
  end
end

-- Next device of the walk `name` satisfying `accept(k)`: its index k, the counter c, and the
-- sampled user s it belongs to (its JWT is jwts[s + 1]).
local function next_device(name, accept)
  for _ = 1, 1000 do
    local c = (walks[name] or 0) + 1
    walks[name] = c
    local slot = tid + nthreads * ((c * stride_prime) % owned)
    local s = math.floor(slot / per_user)
    local k = s * user_stride * per_user + slot % per_user
    if k < devices and (expire_every == 0 or k % expire_every ~= 0) and accept(k) then return k, c, s end
  end
  error("no device satisfies the walk " .. name)
end

local function any_device(k) return true end
local function stable_device(k) return per_user == 1 or k % per_user ~= per_user - 1 end
local function rotation_device(k) return per_user == 1 or k % per_user == per_user - 1 end

local function next_sequence()
  seq = seq + 1
  return string.format("%.0f", seq_base + seq * nthreads + tid)
end

local function device_headers(s)
  return {
    ["Authorization"] = "Bearer " .. jwts[s + 1],
    ["Content-Type"] = "application/json",
  }
end

local function upsert(k, s, token)
  local body = '{"deviceId":"d' .. (k % per_user) .. '","pushToken":"' .. token ..
    '","platform":"apns","environment":"production","osVersion":"18.2","appVersion":"2.1.0","sequence":' ..
    next_sequence() .. '}'
  return wrk.format("POST", "/v1/devices", device_headers(s), body)
end

local builders = {}

builders["get"] = function()
  return wrk.format("GET", path)
end

builders["reregister"] = function()
  local k, _, s = next_device("stable", stable_device)
  return upsert(k, s, hex_token("a1", k))
end

builders["upsert-mix"] = function()
  requests_made = requests_made + 1
  local r = requests_made % 100
  if r < 90 then
    local k, _, s = next_device("stable", stable_device)
    return upsert(k, s, hex_token("a1", k))
  elseif r < 98 then
    -- A new install of an existing user: a new deviceId and a token no one holds.
    local n = (walks["new"] or 0) + 1
    walks["new"] = n
    local s = (tid + nthreads * n * 7919) % sampled
    local body = '{"deviceId":"n' .. run_id .. '-' .. tid .. '-' .. n .. '","pushToken":"' .. fresh_token("e5", n) ..
      '","platform":"apns","environment":"production","osVersion":"18.2","appVersion":"2.1.0","sequence":' ..
      next_sequence() .. '}'
    return wrk.format("POST", "/v1/devices", device_headers(s), body)
  else
    local k, c, s = next_device("rotation", rotation_device)
    return upsert(k, s, fresh_token("f6", c))
  end
end

builders["signout"] = function()
  local k, c, s = next_device("signout", any_device)
  if c > first_pass_size then first_pass_size = c end
  return wrk.format("DELETE", "/v1/devices/d" .. (k % per_user) .. "?sequence=" .. next_sequence(),
                    { ["Authorization"] = "Bearer " .. jwts[s + 1] })
end

builders["activity"] = function()
  local k, c, s = next_device("activity", any_device)
  local body = '{"deviceId":"d' .. (k % per_user) .. '","token":"' .. fresh_token("7a", c) ..
    '","environment":"production","sequence":' .. next_sequence() .. '}'
  return wrk.format("POST", "/v1/activities/live-" .. (c % 500) .. "/activity-token", device_headers(s), body)
end

local internal_headers = function() return { ["Authorization"] = "Bearer " .. api_key } end

builders["lookup"] = function()
  local k = next_device("lookup", any_device)
  return wrk.format("GET", "/internal/v1/users/" .. user_id(math.floor(k / per_user)) .. "/devices", internal_headers())
end

builders["batch-lookup"] = function()
  local ids = {}
  for i = 1, batch do
    local k = next_device("lookup", any_device)
    ids[i] = '"' .. user_id(math.floor(k / per_user)) .. '"'
  end
  local headers = internal_headers()
  headers["Content-Type"] = "application/json"
  return wrk.format("POST", "/internal/v1/users/lookup", headers, '{"userIds":[' .. table.concat(ids, ",") .. ']}')
end

builders["fanout"] = function()
  local url = "/internal/v1/activities/" .. activity .. "/tokens?limit=" .. page_limit
  if cursor_head <= cursor_tail then
    url = url .. "&cursor=" .. cursors[cursor_head]
    cursors[cursor_head] = nil
    cursor_head = cursor_head + 1
  end
  return wrk.format("GET", url, internal_headers())
end

builders["peer"] = function()
  local k = next_device("peer", any_device)
  local body = '{"registration_id":"' .. hex_token("a1", k) .. '","device_id":"' ..
    string.format("00000000-0000-0000-0000-%012x", k) .. '","name":"d' .. (k % per_user) ..
    '","application_id":"bench","active":true}'
  return wrk.format("POST", "/device/apns/", { ["Content-Type"] = "application/json" }, body)
end

request = builders[workload] or error("unknown BENCH_WORKLOAD " .. workload)

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  if workload == "fanout" and status == 200 then
    pages = pages + 1
    local _, n = string.gsub(body, '"token":', "")
    tokens_seen = tokens_seen + n
    local cursor = string.match(body, '"nextCursor":"([^"]+)"')
    if cursor then
      cursor_tail = cursor_tail + 1
      cursors[cursor_tail] = cursor
    else
      walks_done = walks_done + 1
    end
  end
end

function done(summary, latency, requests)
  local statuses, non2xx = {}, 0
  local pages_total, walks_total, tokens_total, max_pass = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    local c = thread:get("counts")
    for status, n in pairs(c) do
      statuses[status] = (statuses[status] or 0) + n
      if status < 200 or status > 299 then non2xx = non2xx + n end
    end
    pages_total = pages_total + (thread:get("pages") or 0)
    walks_total = walks_total + (thread:get("walks_done") or 0)
    tokens_total = tokens_total + (thread:get("tokens_seen") or 0)
    local pass = thread:get("first_pass_size") or 0
    local own = thread:get("owned") or 1
    if own > 0 and pass / own > max_pass then max_pass = pass / own end
  end
  local status_text = {}
  for status, n in pairs(statuses) do status_text[#status_text + 1] = status .. ":" .. n end
  table.sort(status_text)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "BENCH requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f non2xx=%d " ..
    "socket_errors=%d statuses=%s pages=%d walks=%d tokens=%d signout_passes=%.2f\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    non2xx, e.connect + e.read + e.write + e.timeout, table.concat(status_text, ","),
    pages_total, walks_total, tokens_total, max_pass))
end
