-- wrk -s recall.lua: POST /v1/recall with one of a few task descriptions per request.
-- SKILL (env) limits recall to one skill; unset, recall searches every lesson.
local skill = os.getenv("SKILL")
local queries = {
  "a ticket reports errors for many customers, what priority",
  "refund over 500 EUR for a VIP account",
  "outage outside business hours with a stack trace",
  "payroll question written in French",
  "contract renewal with a deadline",
}
local bodies = {}
for i, q in ipairs(queries) do
  if skill then
    bodies[i] = string.format('{"query": "%s", "skill": "%s"}', q, skill)
  else
    bodies[i] = string.format('{"query": "%s"}', q)
  end
end
local headers = { ["Content-Type"] = "application/json" }
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/recall", headers, bodies[(n % #bodies) + 1])
end
