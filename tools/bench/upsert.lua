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

local function hex_token(n)
  local t = {}
  for i = 1, 32 do t[i] = string.format("%02x", (n * 31 + i * 7) % 256) end
  return table.concat(t)
end

request = function()
  counter = counter + 1
  local id = string.format("bench-%d-%d", thread_id, counter)
  local body = '{"deviceId":"' .. id .. '","pushToken":"' .. hex_token(counter + thread_id * 1000003) ..
               '","osVersion":"18.2","appVersion":"2.1.0"}'
  return wrk.format("POST", "/v1/devices", {
    ["Authorization"] = "Bearer " .. tokens[(counter * 7 + thread_id) % #tokens + 1],
    ["Content-Type"] = "application/json",
  }, body)
end
