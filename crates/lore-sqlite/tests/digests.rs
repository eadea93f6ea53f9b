//! Digests, evaluation sets and runs in a real SQLite file: the newest digest per skill, every
//! version kept, sets replaced under their skill and name, runs appended in order, and every
//! read held to the caller's scope.

use chrono::{TimeDelta, TimeZone, Utc};
use lore_core::id::{DigestId, EvalRunId};
use lore_core::model::{Digest, DigestMethod, EvalQuestion, EvalRun, EvalSet, EvalTrigger, Grader};
use lore_core::{Error, Scope, SkillPath, Store};
use lore_sqlite::{OpenMode, SqliteStore};

fn skill(raw: &str) -> SkillPath {
    SkillPath::parse(raw).unwrap()
}

fn digest(skill_path: &str, minutes: i64, text: &str) -> Digest {
    let at = Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap() + TimeDelta::minutes(minutes);
    Digest {
        id: DigestId::generate(at),
        skill: skill(skill_path),
        markdown: text.to_owned(),
        sources: Vec::new(),
        source_hash: format!("hash-{minutes}"),
        method: DigestMethod::Extractive,
        model_error: None,
        generated_by: "lore".into(),
        generated_at: at,
    }
}

fn run(skill_path: &str, set: &str, score: f64) -> EvalRun {
    let at = Utc::now();
    EvalRun {
        id: EvalRunId::generate(at),
        skill: skill(skill_path),
        set: set.into(),
        answerer: "context".into(),
        grades: Vec::new(),
        passed: 0,
        total: 0,
        score,
        memory_hash: "h".into(),
        trigger: EvalTrigger::Manual,
        run_by: "lore".into(),
        run_at: at,
    }
}

#[test]
fn digests_sets_and_runs_round_trip_within_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    let digests = store.digests().unwrap();
    let first = digest("support/triage", 0, "first");
    digests.put_digest(&first).unwrap();
    let second = digest("support/triage", 5, "second");
    digests.put_digest(&second).unwrap();
    digests
        .put_digest(&digest("finance/audit", 1, "ledger"))
        .unwrap();
    assert!(matches!(
        digests.put_digest(&first),
        Err(Error::Conflict(_))
    ));

    let all = digests.digests(&Scope::unrestricted(), None).unwrap();
    let newest: Vec<(&str, &str)> = all
        .iter()
        .map(|d| (d.skill.as_str(), d.markdown.as_str()))
        .collect();
    assert_eq!(
        newest,
        [("finance/audit", "ledger"), ("support/triage", "second")]
    );
    let support = Scope::domains(["support"]);
    assert_eq!(digests.digests(&support, None).unwrap().len(), 1);
    assert!(
        digests
            .digests(&support, Some(&skill("finance/audit")))
            .unwrap()
            .is_empty()
    );
    let history = digests
        .digest_history(&skill("support/triage"), 10)
        .unwrap();
    assert_eq!(
        history.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        [second.id.clone(), first.id.clone()]
    );
    assert_eq!(
        digests
            .digest_history(&skill("support/triage"), 1)
            .unwrap()
            .len(),
        1
    );

    let evals = store.evals().unwrap();
    let mut set = EvalSet {
        skill: skill("support/triage"),
        name: "basics".into(),
        questions: vec![EvalQuestion {
            question: "q".into(),
            expected: "a".into(),
            grader: Grader::Exact,
        }],
        defined_by: "ana".into(),
        updated_at: Utc::now(),
    };
    evals.put_eval_set(&set).unwrap();
    set.questions.push(set.questions[0].clone());
    evals.put_eval_set(&set).unwrap();
    let sets = evals.eval_sets(&Scope::unrestricted(), None).unwrap();
    assert_eq!(sets.len(), 1, "replaced, not added");
    assert_eq!(sets[0].questions.len(), 2);
    assert!(
        evals
            .eval_sets(&Scope::domains(["finance"]), None)
            .unwrap()
            .is_empty()
    );

    for score in [0.25, 0.5] {
        evals
            .put_eval_run(&run("support/triage", "basics", score))
            .unwrap();
    }
    evals
        .put_eval_run(&run("support/triage", "other", 1.0))
        .unwrap();
    evals
        .put_eval_run(&run("finance/audit", "basics", 1.0))
        .unwrap();
    let scores: Vec<f64> = evals
        .eval_runs(&support, Some(&skill("support/triage")), Some("basics"))
        .unwrap()
        .iter()
        .map(|r| r.score)
        .collect();
    assert_eq!(scores, [0.25, 0.5], "oldest first");
    assert_eq!(evals.eval_runs(&support, None, None).unwrap().len(), 3);
    assert_eq!(
        evals
            .eval_runs(&Scope::unrestricted(), None, None)
            .unwrap()
            .len(),
        4
    );
}
