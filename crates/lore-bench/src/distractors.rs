//! Approved lessons that no benchmark task is about, to measure recall in a crowded store.
//!
//! A store in use holds thousands of lessons from many skills; a lesson found first among forty
//! may lose its place among ten thousand, and a relevance floor tuned on forty may let a task
//! that no lesson is about through once many lessons share some of its words. These lessons are
//! written from templates over a vocabulary of many domains (operations, data, support, finance,
//! people, science, shipping, …), so they share everyday working words with real tasks, yet each
//! is a specific rule about a specific object. The draw is seeded: the same count gives the same
//! lessons on every run.

use chrono::{DateTime, Utc};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonSource, LessonStatus, Tiers, UtilityStats};

/// One domain: a skill, the things its lessons are about, and what people do there.
struct Domain {
    skill: &'static str,
    things: &'static [&'static str],
    doings: &'static [&'static str],
}

const DOMAINS: &[Domain] = &[
    Domain {
        skill: "ops/services",
        things: &[
            "queue consumer",
            "cron job",
            "reverse proxy",
            "service mesh sidecar",
            "log shipper",
            "config map",
            "health check",
            "worker pool",
        ],
        doings: &[
            "restarting the cluster",
            "scaling the workers",
            "rotating the nodes",
            "patching the kernel",
            "draining a zone",
            "upgrading the runtime",
        ],
    },
    Domain {
        skill: "data/warehouse",
        things: &[
            "partition key",
            "staging table",
            "materialized view",
            "dedup step",
            "timestamp column",
            "dimension table",
            "row filter",
            "surrogate key",
        ],
        doings: &[
            "loading the nightly batch",
            "rebuilding the marts",
            "merging late records",
            "exporting a report",
            "compacting old partitions",
            "changing the schema",
        ],
    },
    Domain {
        skill: "support/chat",
        things: &[
            "greeting macro",
            "escalation tag",
            "order lookup",
            "shipping estimate",
            "tone of the reply",
            "handover note",
            "satisfaction survey",
            "knowledge base link",
        ],
        doings: &[
            "answering a delivery question",
            "closing a conversation",
            "handing over to billing",
            "replying after hours",
            "apologizing for a delay",
            "answering in Spanish",
        ],
    },
    Domain {
        skill: "finance/ledger",
        things: &[
            "accrual entry",
            "cost centre",
            "VAT line",
            "reconciliation sheet",
            "payment batch",
            "credit note",
            "exchange difference",
            "closing balance",
        ],
        doings: &[
            "closing the month",
            "booking supplier bills",
            "paying contractors",
            "preparing the audit pack",
            "reversing an entry",
            "reporting to the board",
        ],
    },
    Domain {
        skill: "people/hiring",
        things: &[
            "interview scorecard",
            "offer letter",
            "reference check",
            "salary band",
            "job ad",
            "take-home exercise",
            "rejection email",
            "panel schedule",
        ],
        doings: &[
            "hiring a designer",
            "closing a candidate",
            "planning interviews",
            "posting a role",
            "calibrating a panel",
            "extending an offer",
        ],
    },
    Domain {
        skill: "web/frontend",
        things: &[
            "form validation",
            "route guard",
            "image carousel",
            "date picker",
            "error boundary",
            "translation key",
            "focus trap",
            "bundle split",
        ],
        doings: &[
            "adding a settings page",
            "upgrading the framework",
            "fixing a layout bug",
            "building a wizard",
            "adding analytics",
            "improving accessibility",
        ],
    },
    Domain {
        skill: "backend/api",
        things: &[
            "rate limiter",
            "idempotency key",
            "webhook signature",
            "retry budget",
            "request timeout",
            "pagination cursor",
            "error envelope",
            "batch endpoint",
        ],
        doings: &[
            "adding an endpoint",
            "calling a partner API",
            "handling webhooks",
            "versioning the API",
            "moving to gRPC",
            "adding bulk import",
        ],
    },
    Domain {
        skill: "science/analysis",
        things: &[
            "control group",
            "outlier rule",
            "unit conversion",
            "confidence interval",
            "calibration curve",
            "random seed",
            "baseline reading",
            "sample label",
        ],
        doings: &[
            "running the assay",
            "fitting the model",
            "plotting the results",
            "cleaning the readings",
            "comparing two cohorts",
            "writing the methods section",
        ],
    },
    Domain {
        skill: "logistics/warehouse",
        things: &[
            "pick list",
            "bin location",
            "carrier label",
            "cold chain log",
            "returns form",
            "packing slip",
            "dock schedule",
            "stock count",
        ],
        doings: &[
            "receiving a delivery",
            "shipping an order",
            "counting inventory",
            "handling a return",
            "booking a courier",
            "moving stock between sites",
        ],
    },
    Domain {
        skill: "content/writing",
        things: &[
            "headline",
            "call to action",
            "style guide rule",
            "quote attribution",
            "meta description",
            "summary paragraph",
            "image caption",
            "reading level",
        ],
        doings: &[
            "writing a blog post",
            "editing a press release",
            "drafting a case study",
            "updating the help centre",
            "writing a product page",
            "preparing a newsletter",
        ],
    },
    Domain {
        skill: "security/ops",
        things: &[
            "access review",
            "audit log",
            "API token",
            "SSO group",
            "firewall rule",
            "vulnerability ticket",
            "backup key",
            "session timeout",
        ],
        doings: &[
            "offboarding an employee",
            "answering a security questionnaire",
            "rotating credentials",
            "triaging a scan",
            "granting production access",
            "responding to an alert",
        ],
    },
    Domain {
        skill: "mobile/app",
        things: &[
            "push notification",
            "deep link",
            "offline cache",
            "app icon",
            "crash reporter",
            "feature flag",
            "in-app purchase",
            "splash screen",
        ],
        doings: &[
            "releasing a beta",
            "adding payments",
            "supporting tablets",
            "handling low memory",
            "localizing the app",
            "migrating the database",
        ],
    },
];

const FAILURES: &[&str] = &[
    "was skipped without a warning",
    "used a stale value",
    "ran twice",
    "was applied to the wrong account",
    "silently dropped the last item",
    "timed out under load",
    "was left at its default",
    "was copied from an old template",
    "mixed two time zones",
    "was checked after the change instead of before",
];

const RULES: &[&str] = &[
    "Check the {thing} before {doing}",
    "Always confirm the {thing} with its owner when {doing}",
    "Never reuse the {thing} from a previous run when {doing}",
    "Review the {thing} by hand before {doing}",
    "Write the {thing} down in the runbook before {doing}",
    "Test the {thing} on one item first when {doing}",
    "Keep the {thing} separate for each team when {doing}",
    "Recompute the {thing} from source data when {doing}",
];

/// `count` approved lessons made from the templates, the same ones for the same count.
pub fn lessons(count: usize, at: DateTime<Utc>) -> Vec<Lesson> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        // SplitMix64: good enough to spread the draws, and stable across platforms.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    };
    (0..count)
        .map(|_| {
            let d = &DOMAINS[next(DOMAINS.len())];
            let thing = d.things[next(d.things.len())];
            let other = d.things[next(d.things.len())];
            let doing = d.doings[next(d.doings.len())];
            let failure = FAILURES[next(FAILURES.len())];
            let rule = RULES[next(RULES.len())]
                .replace("{thing}", other)
                .replace("{doing}", doing)
                + ".";
            lesson(d.skill, thing, failure, doing, &rule, at)
        })
        .collect()
}

fn lesson(
    skill: &str,
    thing: &str,
    failure: &str,
    doing: &str,
    rule: &str,
    at: DateTime<Utc>,
) -> Lesson {
    Lesson {
        id: LessonId::generate(at),
        skill: SkillPath::parse(skill).expect("the templates' skills are valid"),
        agent: None,
        correction_id: None,
        execution_id: None,
        mistake: format!("The {thing} {failure} while {doing}."),
        root_cause: String::new(),
        rule: rule.to_owned(),
        applies_when: String::new(),
        triggers: Vec::new(),
        tags: Vec::new(),
        tiers: Tiers {
            summary: rule.to_owned(),
            ..Tiers::default()
        },
        confidence: 0.8,
        source: LessonSource::Import,
        status: LessonStatus::Approved,
        utility: UtilityStats::default(),
        links: Vec::new(),
        validated_by_test: false,
        generated_test_ids: Vec::new(),
        merged_from: Vec::new(),
        created_at: at,
        updated_at: at,
        extra: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_count_draws_the_same_varied_lessons() {
        let at = Utc::now();
        let a = lessons(500, at);
        let b = lessons(500, at);
        let rules = |l: &[Lesson]| l.iter().map(|l| l.rule.clone()).collect::<Vec<_>>();
        assert_eq!(rules(&a), rules(&b));
        let mut distinct = rules(&a);
        distinct.sort();
        distinct.dedup();
        assert!(
            distinct.len() > 400,
            "only {} distinct rules",
            distinct.len()
        );
        let skills: std::collections::HashSet<_> = a.iter().map(|l| l.skill.clone()).collect();
        assert_eq!(skills.len(), DOMAINS.len());
    }
}
