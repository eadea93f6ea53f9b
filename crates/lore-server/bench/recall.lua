-- wrk -s recall.lua: POST /v1/recall, each request with another query.
-- SKILL (env) limits recall to one skill; unset, recall searches every lesson.
--
-- The queries are generated from seed.py's vocabulary (and some words it never uses) so that
-- they are many and distinct: a handful of repeated queries would let any cache, in the
-- server or the CPU, flatter the figure. QUERIES (env) sets how many (default 400); the
-- generator is deterministic, so every run sends the same ones.
local skill = os.getenv("SKILL")
local count = tonumber(os.getenv("QUERIES") or "400")
local subjects = { "ticket", "invoice", "refund", "outage", "contract", "payroll", "customer",
  "order", "deployment", "password reset", "chargeback", "escalation", "renewal", "audit log" }
local conditions = { "reports errors for many customers", "mentions a deadline",
  "comes from a VIP account", "is written in French", "includes a stack trace",
  "asks for a refund over 500 EUR", "repeats an earlier request", "arrives outside business hours" }
local actions = { "set priority to urgent", "name the failing service first",
  "quote the order number", "never promise a fix date", "copy the account manager",
  "answer in the customer's language", "attach the runbook link", "flag it for legal review",
  "round totals to cents" }
local extras = { "", "", "urgent", "again", "today", "weekend", "Berlin office", "second time",
  "angry tone", "mobile app", "API", "quarter end" }
local templates = {
  "a %s %s, what should I do %s",
  "how to handle a %s that %s %s",
  "%s %s: %s",
  "the %s %s and I must %s",
  "%s %s",
}
-- Park and Miller's generator: the same sequence on every run, exact in a double.
local state = 12345
local function pick(list)
  state = (state * 16807) % 2147483647
  return list[(state % #list) + 1]
end
local bodies, seen = {}, {}
while #bodies < count do
  local t = pick(templates)
  local q
  if t == "%s %s: %s" or t == "the %s %s and I must %s" then
    q = string.format(t, pick(subjects), pick(conditions), pick(actions))
  elseif t == "%s %s" then
    q = string.format(t, pick(actions), pick(extras))
  else
    q = string.format(t, pick(subjects), pick(conditions), pick(extras))
  end
  q = q:gsub("%s+$", ""):gsub("'", "")
  if not seen[q] then
    seen[q] = true
    if skill then
      bodies[#bodies + 1] = string.format('{"query": "%s", "skill": "%s"}', q, skill)
    else
      bodies[#bodies + 1] = string.format('{"query": "%s"}', q)
    end
  end
end
local headers = { ["Content-Type"] = "application/json" }
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/v1/recall", headers, bodies[(n % #bodies) + 1])
end
