-- wrk script for `tools/bench --compare-peer`: the launch upsert on the peer, django-push-notifications
-- (tools/peer/): an app that starts registers its APNs token again, POST /device/apns/ with the fields it
-- registered with. With UPDATE_ON_DUPLICATE_REG_ID the library finds the device holding that token and
-- updates it (200), as registryd's POST /v1/devices re-registers an existing device (reregister in
-- registry.lua).
--
-- Device k (0 <= k < $BENCH_DEVICES) is the row tools/peer/load.py wrote: its token is registry.lua's
-- push token of registryd's device k ("a1", zeros, k in 16 hex digits), device_id the UUID of k,
-- name "d" .. (k % 5), application_id "bench". Each thread owns every $BENCH_THREADS-th device,
-- visited in a permuted order, so two connections rarely write one device at once (as in registry.lua).
-- done() prints the "BENCH key=value ..." line of registry.lua, which tools/bench parses.

local devices = tonumber(os.getenv("BENCH_DEVICES") or "100000")
local nthreads = tonumber(os.getenv("BENCH_THREADS") or "2")

local threads = {}

function setup(thread)
  thread:set("tid_value", #threads)
  table.insert(threads, thread)
end

local tid = 0
local owned = 0
local counter = 0
local stride_prime = 1000003
counts = {}

function init(args)
  tid = tonumber(tid_value or 0)
  owned = math.floor((devices - 1 - tid) / nthreads) + 1
  if owned % stride_prime == 0 then stride_prime = 999983 end
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  counter = counter + 1
  local k = tid + nthreads * ((counter * stride_prime) % owned)
  local token = "a1" .. string.rep("0", 46) ..
    string.format("%08x%08x", math.floor(k / 4294967296), k % 4294967296)
  local uuid = string.format("00000000-0000-0000-0000-%012x", k)
  local body = '{"registration_id":"' .. token .. '","device_id":"' .. uuid .. '","name":"d' .. (k % 5) ..
    '","application_id":"bench","active":true}'
  return wrk.format("POST", "/device/apns/", headers, body)
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local statuses, non2xx = {}, 0
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("counts")) do
      statuses[status] = (statuses[status] or 0) + n
      if status < 200 or status > 299 then non2xx = non2xx + n end
    end
  end
  local status_text = {}
  for status, n in pairs(statuses) do status_text[#status_text + 1] = status .. ":" .. n end
  table.sort(status_text)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "BENCH requests=%d seconds=%.3f rps=%.2f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f non2xx=%d " ..
    "socket_errors=%d statuses=%s pages=0 walks=0 tokens=0 signout_passes=0\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    non2xx, e.connect + e.read + e.write + e.timeout, table.concat(status_text, ",")))
end
