-- Standalone (tools/bench uses registry.lua): wrk -s get.lua URL with $JWT set and a device "bench-read".
-- wrk script: authenticated reads of one device (JWT verify + LMDB read).
request = function()
  return wrk.format("GET", "/v1/devices/bench-read", {["Authorization"] = "Bearer " .. os.getenv("JWT")})
end
