#!/usr/bin/env python3
"""Write N approved lessons as a Lore JSONL export, for `lore import --jsonl`.

Usage: seed.py N > lessons.jsonl

Lessons are spread over 20 skills (5 domains x 4 skills) and built from a small vocabulary so
that queries match many of them, which is the expensive case for recall. Deterministic: the
same N gives the same file.
"""

import json
import random
import sys

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
DOMAINS = ["support", "finance", "hr", "legal", "ops"]
SKILLS = ["summarize", "triage", "reply", "audit"]
SUBJECTS = ["ticket", "invoice", "refund", "outage", "contract", "payroll", "customer", "order",
            "deployment", "password reset", "chargeback", "escalation", "renewal", "audit log"]
CONDITIONS = ["reports errors for many customers", "mentions a deadline", "comes from a VIP account",
              "is written in French", "includes a stack trace", "asks for a refund over 500 EUR",
              "repeats an earlier request", "arrives outside business hours"]
ACTIONS = ["set priority to urgent", "name the failing service first", "quote the order number",
           "never promise a fix date", "copy the account manager", "answer in the customer's language",
           "attach the runbook link", "flag it for legal review", "round totals to cents"]


def lesson_id(i):
    tail = ""
    for _ in range(8):
        tail = CROCKFORD[i % 32] + tail
        i //= 32
    return f"REFL-20260101000000-{tail}"


def main(n):
    rng = random.Random(42)
    at = "2026-01-01T00:00:00Z"
    for i in range(n):
        skill = f"{DOMAINS[i % 5]}/{SKILLS[(i // 5) % 4]}"
        subject, cond, action = rng.choice(SUBJECTS), rng.choice(CONDITIONS), rng.choice(ACTIONS)
        rule = f"When a {subject} {cond}, {action}."
        record = {
            "id": lesson_id(i), "skill": skill,
            "mistake": f"The output for a {subject} did not {action}.",
            "root_cause": "The condition was not recognized.",
            "rule": rule, "applies_when": f"When a {subject} {cond}.",
            "triggers": [], "tags": [subject.split()[0]],
            "tiers": {"summary": rule, "condition": f"When a {subject} {cond}.", "action": action,
                      "rationale": "", "steps": [action]},
            "confidence": round(0.5 + rng.random() / 2, 2), "source": "correction",
            "status": "approved", "utility": {"activations": 0, "helped": 0, "hurt": 0},
            "links": [], "validated_by_test": False, "generated_test_ids": [],
            "created_at": at, "updated_at": at,
        }
        print(json.dumps({"type": "lesson", "record": record}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
