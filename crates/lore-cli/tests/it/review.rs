//! The review flow from the command line: curation modes, `lore review`, `lore maintain` and
//! `lore lessons purge`, on real SQLite files in temporary projects.

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

/// A project where every command runs in review mode with people's corrections reviewed.
fn project() -> Project {
    Project::with_env(vec![
        ("LORE_CURATION", "review".to_owned()),
        ("LORE_HUMAN_CORRECTIONS", "review".to_owned()),
    ])
    .initialized()
}

/// What only these tests need from a project.
impl Project {
    /// Records an execution, corrects it, returns the lesson's ID.
    fn lesson(&self, text: &str) -> String {
        let exec = self.ok(&[
            "record",
            SKILL,
            "--input",
            r#"{"t": 1}"#,
            "--output",
            r#"{"p": "normal"}"#,
        ]);
        self.correct(SKILL, exec.trim(), text)["lesson"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn status(&self, id: &str) -> String {
        let shown = self.json(&["lessons", "show", id]);
        shown["lesson"]["status"].as_str().unwrap().to_owned()
    }

    fn prompt(&self) -> String {
        self.ok(&["memory", "prompt", SKILL])
    }
}

#[test]
fn review_lists_what_waits_and_decisions_move_it_in_batches() {
    let p = project();
    let a = p.lesson("Always name the failing page in the summary.");
    let b = p.lesson("Use a formal tone with customers.");
    let c = p.lesson("Mention the refund amount when there is one.");
    let listed = p.ok(&["review"]);
    for id in [&a, &b, &c] {
        assert!(listed.contains(id.as_str()), "{listed}");
    }
    assert!(
        !p.prompt().contains(&a),
        "a lesson under review reached the prompt"
    );

    let out = p.json(&[
        "review", "approve", &a, &b, "--reason", "real", "--by", "mike",
    ]);
    assert_eq!(out.as_array().unwrap().len(), 2);
    assert!(p.prompt().contains(&a) && p.prompt().contains(&b));
    p.ok(&["review", "exception", &c, "--reason", "once"]);
    assert_eq!(p.status(&c), "one_time_exception");
    assert_eq!(p.ok(&["review"]).trim(), "nothing waits for review");

    let shown = p.json(&["lessons", "show", &a]);
    let last = shown["audit"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["from"].as_str(), last["to"].as_str()),
        (Some("needs_review"), Some("approved"))
    );
    assert_eq!(last["actor"], "mike");

    p.ok(&[
        "review",
        "supersede",
        &a,
        "--with",
        &b,
        "--reason",
        "merged",
    ]);
    assert_eq!(p.status(&a), "superseded");
    p.ok(&["review", "sensitive", &b]);
    assert!(!p.prompt().contains(&b));
}

#[test]
fn bad_review_input_is_refused_and_changes_nothing() {
    let p = project();
    let a = p.lesson("Always name the failing page in the summary.");
    let b = p.lesson("Use a formal tone with customers.");
    p.ok(&["review", "reject", &b]);
    let err = p.fails(&["review", "approve", &a, &b]);
    assert!(err.contains("from rejected to approved"), "{err}");
    assert_eq!(p.status(&a), "needs_review");
    assert!(p.fails(&["review", "approve"]).contains("required"));
    assert!(
        p.fails(&["review", "approve", "REFL-404"])
            .contains("not found")
    );
    assert!(
        p.fails(&["--curation", "sloppy", "review"])
            .contains("expected auto or review")
    );
    assert!(
        p.fails(&["review", "supersede", &a, "--with", &a])
            .contains("itself")
    );
    assert!(
        p.fails(&["maintain", "--expire-after-days", "0"])
            .contains("review expiry")
    );
    assert_eq!(p.status(&a), "needs_review");
}

#[test]
fn secrets_are_redacted_in_review_and_purge_erases_them() {
    let p = project();
    let id = p.lesson("Always copy the customer at jane.doe@example.com on refunds.");
    assert_eq!(p.status(&id), "sensitive");
    let listed = p.ok(&["review", "list", "--status", "sensitive"]);
    assert!(
        listed.contains("[redacted:email]") && !listed.contains("jane.doe@"),
        "{listed}"
    );
    assert!(p.fails(&["lessons", "purge", &id]).contains("--reason"));
    p.ok(&["lessons", "purge", &id, "--reason", "privacy request"]);
    let shown = p.ok(&["lessons", "show", &id]);
    assert!(
        shown.contains("[purged]") && !shown.contains("jane.doe@"),
        "{shown}"
    );
    let export = p.ok(&["export", "--jsonl", "-"]);
    assert!(!export.contains("jane.doe@example.com"));
}

#[test]
fn aws_secrets_and_key_bodies_never_show_in_review() {
    let p = project();
    let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    let body = [
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
    ];
    let texts = [
        format!("The run used aws_secret_access_key={aws}. Never log credentials."),
        format!("The summary quoted AKIAIOSFODNN7EXAMPLE {aws}. Never quote keys."),
        format!(
            "The summary pasted a key.\n-----BEGIN RSA PRIVATE KEY----- {}\n{}\n-----END RSA \
             PRIVATE KEY-----\nNever paste keys.",
            body[0], body[1]
        ),
        format!(
            "The summary pasted {}\n{}\nNever paste key lines.",
            body[0], body[1]
        ),
    ];
    for text in &texts {
        let id = p.lesson(text);
        assert_eq!(p.status(&id), "sensitive", "{text}");
    }
    let listed = p.ok(&["review", "list", "--status", "sensitive"]);
    let json = p.ok(&["review", "list", "--status", "sensitive", "--json"]);
    for shown in [&listed, &json] {
        for secret in [aws, "EXAMPLEKEY", "MIIEow", "VTLw7onL"] {
            assert!(!shown.contains(secret), "{secret} shows in review: {shown}");
        }
    }
    assert!(listed.contains("[redacted:private_key]"), "{listed}");
}

#[test]
fn maintain_expires_stale_reviews_once() {
    let p = project();
    let id = p.lesson("Always name the failing page in the summary.");
    // Nothing is 30 days old yet: a run changes nothing.
    let first = p.json(&["maintain"]);
    assert!(first["expired"].as_array().unwrap().is_empty());
    assert_eq!(p.status(&id), "needs_review");
    let pruned = p.json(&["maintain", "--prune", "hybrid", "--max-lessons", "1"]);
    assert!(pruned["pruned_by_rank"].as_array().unwrap().is_empty());
}

/// A conflicting pair: `lore review unlink` takes the link off both, audited, and a second
/// unlink of the same pair (or a malformed call) is refused with a message.
#[test]
fn review_unlink_takes_a_conflict_off_both_lessons() {
    let p = project();
    let a = p.lesson("Always include the stack trace in the bug report.");
    p.ok(&["review", "approve", &a, "--reason", "real"]);
    let b = p.lesson("Never include the stack trace in the bug report.");
    let shown = p.json(&["lessons", "show", &b]);
    assert_eq!(shown["lesson"]["links"][0]["kind"], "conflicts", "{shown}");
    let out = p.json(&[
        "review",
        "unlink",
        &a,
        &b,
        "--reason",
        "two audiences",
        "--by",
        "mike",
    ]);
    assert_eq!(out.as_array().unwrap().len(), 2, "{out}");
    for id in [&a, &b] {
        let shown = p.json(&["lessons", "show", id]);
        assert!(
            shown["lesson"]["links"]
                .as_array()
                .is_none_or(|l| l.is_empty()),
            "{shown}"
        );
        let last = shown["audit"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["actor"], "mike");
        assert!(last["reason"].as_str().unwrap().contains("two audiences"));
    }
    assert_eq!(p.status(&b), "needs_review");
    let again = p.fails(&["review", "unlink", &a, &b]);
    assert!(again.contains("not linked"), "{again}");
    let one = p.fails(&["review", "unlink", &a]);
    assert!(one.contains("LESSON_ID"), "{one}");
}

/// `lore bench curation` over a file of pairs: the figures name both halves, and a malformed
/// line is refused naming it.
#[test]
fn bench_curation_reports_merge_and_conflict_on_given_pairs() {
    let p = Project::new();
    let data = p.path().join("pairs.jsonl");
    std::fs::write(
        &data,
        [
            r#"{"class":"reworded","first":"Never commit secrets to the repository.","second":"Do not ever commit secrets to the repository."}"#,
            r#"{"class":"opposite","first":"Retry failed webhook deliveries.","second":"Never retry failed webhook deliveries."}"#,
            r#"{"class":"different_subject","first":"Reply in German when the customer writes German.","second":"Reply in Spanish when the customer writes Spanish."}"#,
            r#"{"class":"compatible","first":"Invoices must show the VAT number.","second":"Invoices must show the payment due date."}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let report = p.json(&["bench", "curation", "--data", data.to_str().unwrap()]);
    assert_eq!(report["all"]["pairs"], 4, "{report}");
    assert_eq!(report["all"]["merge"]["precision"], 1.0, "{report}");
    assert_eq!(report["all"]["conflict"]["recall"], 1.0, "{report}");
    assert!(report["wrong"].as_array().unwrap().is_empty(), "{report}");
    std::fs::write(
        &data,
        "{\"class\":\"sideways\",\"first\":\"a\",\"second\":\"b\"}\n",
    )
    .unwrap();
    let bad = p.fails(&["bench", "curation", "--data", data.to_str().unwrap()]);
    assert!(bad.contains("line 1"), "{bad}");
}
