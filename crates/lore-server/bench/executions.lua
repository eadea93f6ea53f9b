-- wrk -s executions.lua: POST /v1/executions, one small execution per request.
local headers = { ["Content-Type"] = "application/json" }
local n = 0
request = function()
  n = n + 1
  local body = string.format(
    '{"skill": "support/triage", "input": {"ticket": "Checkout fails for customer %d"}, ' ..
    '"output": {"priority": "normal"}, "outcome": "success", "latency_ms": 812}', n)
  return wrk.format("POST", "/v1/executions", headers, body)
end
