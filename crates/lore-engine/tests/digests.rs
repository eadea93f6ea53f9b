//! Digests and evaluation runs (seed 004's wiki and training loop) through the Engine on a real
//! SQLite file: a digest holds only approved, non-sensitive sources and is made again only when
//! they change; it becomes the context's digest layer, cut tail-first; evaluation sets are
//! validated, graded against the recalled context, trended, and rerun by upkeep only when the
//! skill's memory changed.

#[path = "curation/support.rs"]
mod support;

use lore_core::model::{
    CurationMode, DigestMethod, EvalQuestion, EvalTrigger, Grader, LessonStatus,
};
use std::sync::{Arc, Mutex};

use lore_core::ports::knowledge::DigestStore;
use lore_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, Usage};
use lore_core::{Error, Scope, SkillPath};
use lore_engine::{
    Attribution, ContextLayer, ContextQuery, Engine, EvalRunRequest, LayerStatus, NewDecision,
    NewEvalSet, PageRequest,
};
use support::{Project, SKILL};

fn skill() -> SkillPath {
    SkillPath::parse(SKILL).unwrap()
}

fn page(limit: usize) -> PageRequest {
    PageRequest { limit, offset: 0 }
}

fn decide(p: &Project, situation: &str, action: &str, approve: bool) -> String {
    let d = p
        .engine
        .record_decision(NewDecision {
            skill: Some(skill()),
            situation: situation.into(),
            action: action.into(),
            rationale: "Customers were affected.".into(),
            ..NewDecision::default()
        })
        .unwrap();
    if approve {
        p.engine
            .review_decisions(std::slice::from_ref(&d.id), LessonStatus::Approved, "sound")
            .unwrap();
    }
    d.id.to_string()
}

#[test]
fn a_digest_holds_approved_sources_only_and_is_made_again_only_when_they_change() {
    let p = Project::new(CurationMode::Review);
    let kept = p.seed(
        "Quote the ticket number in every summary.",
        LessonStatus::Approved,
    );
    let waiting = p.seed("Shout at the customer.", LessonStatus::NeedsReview);
    let secret = p.seed(
        "Mail the summary to ana.lopez@example.com before closing.",
        LessonStatus::Approved,
    );
    let decision = decide(&p, "A refund after the deadline", "Refund it anyway", true);
    let pending = decide(&p, "A refund twice", "Refuse the second", false);

    let first = p.engine.build_digests(None, false).unwrap();
    assert_eq!(first.built.len(), 1);
    let digest = &first.built[0];
    assert_eq!(digest.skill, skill());
    assert_eq!(digest.method, DigestMethod::Extractive);
    assert!(
        digest.markdown.contains("Quote the ticket number"),
        "{}",
        digest.markdown
    );
    assert!(digest.markdown.contains(kept.id.as_str()));
    assert!(digest.markdown.contains("Refund it anyway"));
    assert!(
        !digest.markdown.contains("Shout"),
        "a lesson waiting for review stays out"
    );
    assert!(!digest.markdown.contains("Refuse the second"));
    assert!(
        !digest.markdown.contains("example.com"),
        "sensitive text stays out"
    );
    let ids: Vec<&str> = digest.sources.iter().map(|s| s.id.as_str()).collect();
    assert!(ids.contains(&kept.id.as_str()) && ids.contains(&decision.as_str()));
    for absent in [waiting.id.as_str(), secret.id.as_str(), pending.as_str()] {
        assert!(!ids.contains(&absent), "{absent} is not a source");
    }
    assert_eq!(digest.source_hash.len(), 64);

    // Nothing changed: nothing is made.
    let again = p.engine.build_digests(None, false).unwrap();
    assert!(again.built.is_empty());
    assert_eq!(again.unchanged, [skill()]);

    // An approval changes the sources: a new version, the old one kept as history.
    p.clock.advance(chrono::TimeDelta::minutes(5));
    p.engine
        .reject(
            std::slice::from_ref(&waiting.id),
            &Attribution::new(None, "wrong"),
        )
        .unwrap();
    let later = p.seed(
        "Name the product in the first line.",
        LessonStatus::Approved,
    );
    let third = p.engine.build_digests(Some(&skill()), false).unwrap();
    assert_eq!(third.built.len(), 1);
    assert!(third.built[0].markdown.contains(later.id.as_str()));
    assert_ne!(third.built[0].source_hash, digest.source_hash);
    let history = p.engine.digest_history(&skill(), page(10)).unwrap().items;
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].id, third.built[0].id, "newest first");
    assert_eq!(p.engine.digests(None).unwrap()[0].id, third.built[0].id);

    // Forcing makes one though nothing changed.
    assert_eq!(p.engine.build_digests(None, true).unwrap().built.len(), 1);
}

#[test]
fn the_digest_is_the_contexts_digest_layer_cut_tail_first_and_redacted() {
    let p = Project::new(CurationMode::Review);
    for i in 0..30 {
        p.seed(
            &format!("Rule {i}: summarize ticket {i} with its priority and the customer's words."),
            LessonStatus::Approved,
        );
    }
    let built = p.engine.build_digests(None, false).unwrap();
    let id = built.built[0].id.to_string();
    let query = |layer: usize| ContextQuery {
        text: "summarize a ticket with its priority".into(),
        skill: Some(skill()),
        layer_budget: Some(layer),
        total_budget: Some(12_000),
        explain: false,
    };
    let roomy = p.engine.context(&query(4_000)).unwrap();
    let layer = roomy
        .layers
        .iter()
        .find(|l| l.layer == ContextLayer::Digest)
        .unwrap();
    assert_eq!(layer.status, LayerStatus::Filled);
    assert_eq!(layer.items, std::slice::from_ref(&id));
    assert!(!layer.truncated);
    assert!(
        roomy
            .text
            .contains(&format!("- **{id}** ({SKILL}; digest of 30 lessons"))
    );
    // Rules the lessons layer already shows are left out of the digest; the rest are quoted.
    assert!(roomy.text.contains("> - Rule "), "quoted as data");

    let tight = p.engine.context(&query(150)).unwrap();
    let layer = tight
        .layers
        .iter()
        .find(|l| l.layer == ContextLayer::Digest)
        .unwrap();
    assert!(layer.truncated && layer.tokens <= 150, "{layer:?}");
    assert_eq!(
        layer.items,
        std::slice::from_ref(&id),
        "the provenance line survives the cut"
    );
    let part = &tight.text[tight.text.find("## Digest of approved memory").unwrap()..];
    let part = &part[..part.find("## Team knowledge").unwrap_or(part.len())];
    assert!(part.contains(lore_recall::TRUNCATED));
    let last_rule = roomy
        .text
        .lines()
        .rfind(|l| l.starts_with("> - Rule "))
        .unwrap();
    assert!(!part.contains(last_rule), "the tail goes first");
    // The head stays: every rule the page holds before the first one quoted here is one the
    // tight read's lessons layer shows (a smaller budget shows fewer lessons, so the head may
    // be a rule the roomy read left out as already shown).
    let first_kept = part
        .lines()
        .find(|l| l.starts_with("> - Rule "))
        .expect("a rule survives the cut");
    // A rule is named by its number: the last line quoted may be cut mid-sentence.
    let rule = |line: &str| {
        let from = &line[line.find("Rule ").unwrap()..];
        from[..=from.find(':').unwrap()].to_string()
    };
    let page_rules: Vec<String> = built.built[0]
        .markdown
        .lines()
        .filter(|l| l.starts_with("- Rule "))
        .map(rule)
        .collect();
    let at = page_rules
        .iter()
        .position(|r| *r == rule(first_kept))
        .expect("the quoted rule is on the page");
    let lessons_part = &tight.text[..tight.text.find("## Digest of approved memory").unwrap()];
    for earlier in &page_rules[..at] {
        assert!(
            lessons_part.contains(earlier.as_str()),
            "the head stays: {earlier:?} was cut before {first_kept:?} in {part}"
        );
    }

    // A stored page that holds sensitive text (an older build, a hand edit) is redacted on read.
    let mut tampered = built.built[0].clone();
    tampered.id = lore_core::id::DigestId::generate(p.clock_now() + chrono::TimeDelta::hours(1));
    tampered.markdown = "# x\n\nCall ana.lopez@example.com about refunds.".into();
    p.store.put_digest(&tampered).unwrap();
    let read = p.engine.context(&query(4_000)).unwrap();
    assert!(read.text.contains(tampered.id.as_str()));
    assert!(
        !read.text.contains("ana.lopez@example.com"),
        "{}",
        read.text
    );

    // Without a skill, digests are found by the task's words; an unrelated task finds none,
    // even one sharing the words every page holds.
    let digest_layer = |text: &str| {
        p.engine
            .context(&ContextQuery {
                text: text.into(),
                ..ContextQuery::default()
            })
            .unwrap()
            .layers
            .into_iter()
            .find(|l| l.layer == ContextLayer::Digest)
            .unwrap()
    };
    for unrelated in [
        "kubernetes ingress certificates",
        "what is the weather and when",
    ] {
        assert_eq!(
            digest_layer(unrelated).status,
            LayerStatus::Empty,
            "{unrelated}"
        );
    }
    let related = digest_layer("how do I summarize this ticket");
    assert_eq!(related.status, LayerStatus::Filled);
}

#[test]
fn upkeep_makes_digests_and_runs_evaluations_only_when_memory_changed() {
    let p = Project::new(CurationMode::Review);
    p.seed(
        "Quote the ticket number in every summary.",
        LessonStatus::Approved,
    );
    p.engine
        .define_eval_set(NewEvalSet {
            skill: Some(skill()),
            name: "basics".into(),
            questions: vec![
                EvalQuestion {
                    question: "What goes into every ticket summary?".into(),
                    expected: "the ticket number".into(),
                    grader: Grader::Contains,
                },
                EvalQuestion {
                    question: "Which product does a summary name first?".into(),
                    expected: "Name the product in the first line".into(),
                    grader: Grader::Exact,
                },
            ],
        })
        .unwrap();

    let first = p.engine.maintain().unwrap();
    assert_eq!(first.digests.len(), 1);
    assert_eq!(first.evals.len(), 1, "a set never run gets its first run");
    assert_eq!(first.evals[0].trigger, EvalTrigger::Maintain);
    assert_eq!((first.evals[0].passed, first.evals[0].total), (1, 2));

    let second = p.engine.maintain().unwrap();
    assert!(second.digests.is_empty(), "no source changed");
    assert!(second.evals.is_empty(), "no memory changed");

    p.clock.advance(chrono::TimeDelta::minutes(1));
    p.seed(
        "Name the product in the first line.",
        LessonStatus::Approved,
    );
    let third = p.engine.maintain().unwrap();
    assert_eq!(third.digests.len(), 1);
    assert_eq!(third.evals.len(), 1);
    assert_eq!((third.evals[0].passed, third.evals[0].total), (2, 2));

    let trends = p.engine.eval_trends(Some(&skill()), None).unwrap();
    assert_eq!(trends.len(), 1);
    let trend = &trends[0];
    assert_eq!(trend.runs, 2);
    assert_eq!(trend.points.len(), 2);
    assert!((trend.change - 0.5).abs() < 1e-9, "{trend:?}");
    assert!((trend.best - 1.0).abs() < 1e-9);
    // A set defined again has new questions: upkeep runs it though memory did not change.
    p.clock.advance(chrono::TimeDelta::minutes(1));
    let mut again = p.engine.eval_sets(None).unwrap().remove(0);
    again.questions.truncate(1);
    p.engine
        .define_eval_set(NewEvalSet {
            skill: Some(again.skill),
            name: again.name,
            questions: again.questions,
        })
        .unwrap();
    let fourth = p.engine.maintain().unwrap();
    assert!(fourth.digests.is_empty());
    assert_eq!(fourth.evals.len(), 1);
    assert_eq!(fourth.evals[0].total, 1);
    assert!(p.engine.maintain().unwrap().evals.is_empty());
    let recent = p.engine.eval_trends(None, Some(1)).unwrap();
    assert_eq!(recent[0].points.len(), 1);
    assert_eq!(recent[0].runs, 3);
}

#[test]
fn a_manual_run_grades_the_recalled_context() {
    let p = Project::new(CurationMode::Review);
    let lesson = p.seed(
        "Quote the ticket number in every summary.",
        LessonStatus::NeedsReview,
    );
    p.engine
        .define_eval_set(NewEvalSet {
            skill: Some(skill()),
            name: "basics".into(),
            questions: vec![EvalQuestion {
                question: "What goes into every ticket summary?".into(),
                expected: "quote the ticket number".into(),
                grader: Grader::Contains,
            }],
        })
        .unwrap();
    let before = p.engine.run_evals(&EvalRunRequest::default()).unwrap();
    assert_eq!(
        before[0].passed, 0,
        "a lesson waiting for review is not memory yet"
    );
    assert_eq!(before[0].trigger, EvalTrigger::Manual);
    p.engine
        .approve(
            std::slice::from_ref(&lesson.id),
            &Attribution::new(None, "right"),
        )
        .unwrap();
    let after = p
        .engine
        .run_evals(&EvalRunRequest {
            skill: Some(skill()),
            set: Some("basics".into()),
        })
        .unwrap();
    assert_eq!(after[0].passed, 1);
    assert!(after[0].grades[0].items.contains(&lesson.id.to_string()));
    assert_eq!(p.engine.eval_runs(None, Some("basics")).unwrap().len(), 2);
    let missing = p.engine.run_evals(&EvalRunRequest {
        set: Some("nope".into()),
        ..EvalRunRequest::default()
    });
    assert!(
        matches!(missing, Err(Error::NotFound { .. })),
        "{missing:?}"
    );
}

#[test]
fn bad_sets_are_refused_and_nothing_is_stored() {
    let p = Project::new(CurationMode::Review);
    let q = |question: &str, expected: &str, grader| EvalQuestion {
        question: question.into(),
        expected: expected.into(),
        grader,
    };
    let ok = q("What goes first?", "the number", Grader::Contains);
    let cases = [
        (None, "basics", vec![ok.clone()], "skill"),
        (Some(skill()), " ", vec![ok.clone()], "name"),
        (Some(skill()), "basics", vec![], "questions"),
        (
            Some(skill()),
            "basics",
            vec![q(" ", "x", Grader::Contains)],
            "questions[0].question",
        ),
        (
            Some(skill()),
            "basics",
            vec![ok.clone(), q("x", "", Grader::Exact)],
            "questions[1].expected",
        ),
        (
            Some(skill()),
            "basics",
            vec![q("x", "y", Grader::Judge)],
            "questions[0].grader",
        ),
        (
            Some(skill()),
            "basics",
            vec![q("Who?", "ana.lopez@example.com", Grader::Contains)],
            "questions[0].expected",
        ),
        (Some(skill()), "a\u{7}b", vec![ok.clone()], "name"),
    ];
    for (skill, name, questions, field) in cases {
        let err = p
            .engine
            .define_eval_set(NewEvalSet {
                skill,
                name: name.into(),
                questions,
            })
            .unwrap_err();
        assert!(
            matches!(&err, Error::Invalid { what, .. } if what == field),
            "{field}: {err:?}"
        );
    }
    assert!(p.engine.eval_sets(None).unwrap().is_empty());

    // Outside the handle's scope: forbidden, nothing stored.
    let narrow = p.engine.scoped(Scope::domains(["other"]));
    let err = narrow
        .define_eval_set(NewEvalSet {
            skill: Some(skill()),
            name: "basics".into(),
            questions: vec![ok],
        })
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err:?}");
    assert!(matches!(
        narrow.build_digests(Some(&skill()), false),
        Err(Error::Forbidden(_))
    ));
    assert!(p.engine.eval_sets(None).unwrap().is_empty());
}

/// A model that answers from a script and keeps what it was asked.
#[derive(Debug)]
struct Scripted {
    answer: fn(&LlmRequest) -> Result<String, LlmError>,
    asked: Mutex<Vec<String>>,
}

impl Llm for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "m1"
    }

    fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let text: String = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect();
        self.asked.lock().unwrap().push(text);
        Ok(LlmResponse {
            text: (self.answer)(request)?,
            json: None,
            usage: Usage::default(),
            model: "m1".into(),
        })
    }
}

fn with_model(
    p: &Project,
    answer: fn(&LlmRequest) -> Result<String, LlmError>,
) -> (Engine, Arc<Scripted>) {
    let llm = Arc::new(Scripted {
        answer,
        asked: Mutex::new(Vec::new()),
    });
    (p.engine.clone().with_proposer(llm.clone()), llm)
}

#[test]
fn a_configured_model_writes_the_digest_from_approved_sources_only() {
    let p = Project::new(CurationMode::Review);
    let kept = p.seed(
        "Quote the ticket number in every summary.",
        LessonStatus::Approved,
    );
    p.seed("Shout at the customer.", LessonStatus::NeedsReview);
    let (engine, llm) = with_model(&p, |_| {
        Ok(r##"{"markdown": "# Summaries\n\n- Always quote the ticket number."}"##.into())
    });
    let built = engine.build_digests(None, false).unwrap();
    let digest = &built.built[0];
    assert_eq!(
        digest.method,
        DigestMethod::Model {
            model: "scripted/m1".into()
        }
    );
    assert_eq!(
        digest.markdown,
        "# Summaries\n\n- Always quote the ticket number."
    );
    assert!(digest.model_error.is_none());
    let asked = llm.asked.lock().unwrap().join("\n");
    assert!(asked.contains(kept.id.as_str()), "{asked}");
    assert!(
        !asked.contains("Shout"),
        "the model sees approved sources only"
    );

    // A model that answers with personal data: the extractive page stands, and says why.
    p.clock.advance(chrono::TimeDelta::minutes(1));
    p.seed("Name the product first.", LessonStatus::Approved);
    let (engine, _) = with_model(&p, |_| {
        Ok(r#"{"markdown": "Mail ana.lopez@example.com first."}"#.into())
    });
    let built = engine.build_digests(None, false).unwrap();
    let digest = &built.built[0];
    assert_eq!(digest.method, DigestMethod::Extractive);
    assert!(
        digest.model_error.as_deref().unwrap().contains("personal"),
        "{digest:?}"
    );
    assert!(!digest.markdown.contains("example.com"));

    // A model that fails: the same.
    p.clock.advance(chrono::TimeDelta::minutes(1));
    let (engine, _) = with_model(&p, |_| Err(LlmError::Protocol("down".into())));
    let built = engine.build_digests(None, true).unwrap();
    assert_eq!(built.built[0].method, DigestMethod::Extractive);
    assert!(
        built.built[0]
            .model_error
            .as_deref()
            .unwrap()
            .contains("down")
    );
}

#[test]
fn a_judge_grades_with_the_configured_model() {
    let p = Project::new(CurationMode::Review);
    p.seed(
        "Quote the ticket number in every summary.",
        LessonStatus::Approved,
    );
    let (engine, llm) = with_model(&p, |r| {
        let text: String = r.messages.iter().map(|m| m.content.as_str()).collect();
        Ok(
            if text.contains("ticket number") && text.contains("Expected answer: the ID") {
                r#"{"passed": true, "why": "the number is the ID"}"#.into()
            } else {
                r#"{"passed": false}"#.into()
            },
        )
    });
    engine
        .define_eval_set(NewEvalSet {
            skill: Some(skill()),
            name: "judged".into(),
            questions: vec![
                EvalQuestion {
                    question: "What goes into every summary?".into(),
                    expected: "the ID".into(),
                    grader: Grader::Judge,
                },
                EvalQuestion {
                    question: "What goes into every summary?".into(),
                    expected: "the weather".into(),
                    grader: Grader::Judge,
                },
            ],
        })
        .unwrap();
    let run = &engine.run_evals(&EvalRunRequest::default()).unwrap()[0];
    assert_eq!(
        run.grades.iter().map(|g| g.passed).collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(llm.asked.lock().unwrap().len(), 2);
    // The same set run where no model is configured fails judged questions and says why.
    let offline = p.engine.run_evals(&EvalRunRequest::default()).unwrap();
    assert_eq!(offline[0].passed, 0);
    assert!(
        offline[0].grades[0]
            .error
            .as_deref()
            .unwrap()
            .contains("no model")
    );
}

#[test]
fn a_purged_lessons_text_leaves_digests_and_graded_answers() {
    let p = Project::new(CurationMode::Review);
    let secret = p.seed(
        "Quote the Zanzibar contract number in every summary.",
        LessonStatus::Approved,
    );
    p.seed(
        "Name the product in the first line.",
        LessonStatus::Approved,
    );
    p.engine.build_digests(None, false).unwrap();
    p.engine
        .define_eval_set(NewEvalSet {
            skill: Some(skill()),
            name: "basics".into(),
            questions: vec![EvalQuestion {
                question: "What goes into every summary?".into(),
                expected: "contract number".into(),
                grader: Grader::Contains,
            }],
        })
        .unwrap();
    let before = p.engine.run_evals(&EvalRunRequest::default()).unwrap();
    assert!(before[0].grades[0].answer.contains("Zanzibar"));

    p.clock.advance(chrono::TimeDelta::minutes(1));
    p.engine
        .purge_lesson(&secret.id, &Attribution::new(None, "holds a client's name"))
        .unwrap();
    assert!(
        p.engine
            .digest_history(&skill(), page(50))
            .unwrap()
            .items
            .is_empty()
    );
    let runs = p.engine.eval_runs(None, None).unwrap();
    assert_eq!(runs[0].grades[0].answer, lore_engine::PURGED);
    let rebuilt = p.engine.maintain().unwrap();
    assert_eq!(rebuilt.digests.len(), 1);
    let digest = &p.engine.digests(None).unwrap()[0];
    assert!(!digest.markdown.contains("Zanzibar"), "{}", digest.markdown);
    assert!(digest.markdown.contains("Name the product"));
}
