-- Standalone (tools/bench uses registry.lua): wrk -s upsert.lua URL with $JWT_FILE set.
-- wrk script: every request is a launch upsert of a new device (a new key,
-- so each one is a real durable write), JSON body, spread over the users
-- whose device JWTs are in the file named by $JWT_FILE (one per line), so
-- the device cap is rarely hit.
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

local tokens = {}

function init(args)
  thread_id = tonumber(tid) or 0
  for line in io.lines(os.getenv("JWT_FILE")) do table.insert(tokens, line) end
end

-- A distinct 32-byte APNs token per (thread, request): a repeated token
-- would move between devices (the one-owner rule) instead of adding one.
local function hex_token(n)
  return string.format("%016x%016x%016x%016x", thread_id, n, thread_id, n)
end

request = function()
  counter = counter + 1
  local id = string.format("bench-%d-%d", thread_id, counter)
  local body = '{"deviceId":"' .. id .. '","pushToken":"' .. hex_token(counter) ..
               '","osVersion":"18.2","appVersion":"2.1.0"}'
  return wrk.format("POST", "/v1/devices", {
    ["Authorization"] = "Bearer " .. tokens[(counter * 7 + thread_id) % #tokens + 1],
    ["Content-Type"] = "application/json",
  }, body)
end
