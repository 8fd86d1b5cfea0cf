-- wrk script: every request is a launch upsert of a new device (a new key,
-- so each one is a real durable write), JSON body, device JWT from $JWT.
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  thread_id = tonumber(tid) or 0
  math.randomseed(os.time() + thread_id)
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
    ["Authorization"] = "Bearer " .. os.getenv("JWT"),
    ["Content-Type"] = "application/json",
  }, body)
end
