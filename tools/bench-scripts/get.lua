-- wrk script: authenticated reads of one device (JWT verify + LMDB read).
request = function()
  return wrk.format("GET", "/v1/devices/bench-read", {["Authorization"] = "Bearer " .. os.getenv("JWT")})
end
