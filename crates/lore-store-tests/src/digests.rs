//! Digests, evaluation sets and runs: the newest digest per skill with every version kept, sets
//! replaced under their skill and name, runs appended in order, every read held to the
//! caller's scope, and a purge reaching every digest and graded answer that may quote it.

use lore_core::id::{DigestId, EvalRunId};
use lore_core::model::{
    Digest, DigestMethod, DigestSource, DigestSourceKind, EvalGrade, EvalQuestion, EvalRun,
    EvalSet, EvalTrigger, Grader,
};
use lore_core::ports::store::Store;
use lore_core::scope::{Scope, SkillPath};

use crate::fixture::*;

impl Fixture {
    fn digest(&self, skill: &SkillPath, minutes: i64, text: &str, sources: &[&str]) -> Digest {
        let at = self.at(minutes);
        Digest {
            id: DigestId::generate(at),
            skill: skill.clone(),
            markdown: format!("# {text}\n\n- «quoted» rule"),
            sources: sources
                .iter()
                .map(|id| DigestSource {
                    kind: DigestSourceKind::Lesson,
                    id: (*id).to_owned(),
                    revision: at,
                })
                .collect(),
            source_hash: format!("hash-{minutes}"),
            method: DigestMethod::Model {
                model: "local".into(),
            },
            model_error: None,
            generated_by: "lore".into(),
            generated_at: at,
        }
    }

    fn eval_run(&self, skill: &SkillPath, set: &str, minutes: i64, items: &[&str]) -> EvalRun {
        let at = self.at(minutes);
        let grade = |item: &str| EvalGrade {
            question: "how do we roll back?".into(),
            expected: "redeploy".into(),
            grader: Grader::Contains,
            passed: true,
            answer: format!("redeploy, as {item} says"),
            items: vec![item.to_owned()],
            error: None,
        };
        EvalRun {
            id: EvalRunId::generate(at),
            skill: skill.clone(),
            set: set.into(),
            answerer: "context".into(),
            grades: items.iter().map(|i| grade(i)).collect(),
            passed: items.len(),
            total: items.len(),
            score: 0.25 * minutes as f64,
            memory_hash: "h".into(),
            trigger: EvalTrigger::Manual,
            run_by: "lore".into(),
            run_at: at,
        }
    }

    fn eval_set(&self, skill: &SkillPath, name: &str, questions: usize) -> EvalSet {
        EvalSet {
            skill: skill.clone(),
            name: name.into(),
            questions: (0..questions)
                .map(|i| EvalQuestion {
                    question: format!("q{i}"),
                    expected: "a".into(),
                    grader: Grader::Exact,
                })
                .collect(),
            defined_by: "ana".into(),
            updated_at: self.at(questions as i64),
        }
    }
}

/// A skill's versions are read a page at a time, newest first: each page starts where the
/// last ended, a page past the end is empty, and another skill's versions never show.
pub fn digest_history_pages_newest_first(store: &dyn Store) {
    let digests = store.digests().expect("the store keeps digests");
    let f = Fixture::new();
    let versions: Vec<Digest> = (0..5)
        .map(|m| f.digest(&f.hr, m, &format!("v{m}"), &[]))
        .collect();
    for d in &versions {
        digests.put_digest(d).unwrap();
    }
    digests
        .put_digest(&f.digest(&f.hr_other, 9, "elsewhere", &[]))
        .unwrap();
    let text = |page: Vec<Digest>| -> Vec<String> {
        page.into_iter()
            .map(|d| d.markdown.lines().next().unwrap_or_default().to_owned())
            .collect()
    };
    let written: Vec<String> = text(versions);
    let newest_first: Vec<String> = text(digests.digest_history(&f.hr, 10, 0).unwrap());
    assert_eq!(newest_first.len(), 5, "{newest_first:?}");
    assert_eq!(
        newest_first,
        written.iter().rev().cloned().collect::<Vec<_>>(),
        "versions come newest written first"
    );
    let first = text(digests.digest_history(&f.hr, 2, 0).unwrap());
    let second = text(digests.digest_history(&f.hr, 2, 2).unwrap());
    let last = text(digests.digest_history(&f.hr, 2, 4).unwrap());
    assert_eq!(first, newest_first[..2]);
    assert_eq!(second, newest_first[2..4]);
    assert_eq!(last, newest_first[4..], "the last page holds what is left");
    assert!(digests.digest_history(&f.hr, 2, 5).unwrap().is_empty());
    assert!(
        digests
            .digest_history(&f.hr, 10, usize::MAX)
            .unwrap()
            .is_empty(),
        "an offset past any count reads nothing rather than failing"
    );
    assert_eq!(
        text(digests.digest_history(&f.hr, usize::MAX, 3).unwrap()),
        newest_first[3..],
        "no limit to speak of reads the rest"
    );
}

/// The newest digest of each skill is read, every version is kept newest first, a taken ID is
/// refused, and purging a source deletes every version that quotes it.
pub fn digests_keep_versions_and_forget_a_source(store: &dyn Store) {
    let digests = store.digests().expect("the store keeps digests");
    let f = Fixture::new();
    let (kept, purged) = (format!("LSN-kept-{}", f.tag), format!("LSN-gone-{}", f.tag));
    let first = f.digest(&f.hr, 0, "first", &[&kept, &purged]);
    let second = f.digest(&f.hr, 5, "second", &[&purged]);
    let other = f.digest(&f.hr_other, 1, "other", &[&kept]);
    let ledger = f.digest(&f.finance, 2, "ledger", &[]);
    for d in [&first, &second, &other, &ledger] {
        digests.put_digest(d).unwrap();
    }
    expect_conflict(digests.put_digest(&first), first.id.as_str());

    assert_eq!(
        digests.digests(&f.both_scope(), None).unwrap(),
        vec![ledger.clone(), other.clone(), second.clone()],
        "the newest of each skill, by skill"
    );
    assert_eq!(
        digests.digests(&f.hr_scope(), Some(&f.hr)).unwrap(),
        vec![second.clone()]
    );
    assert!(
        digests
            .digests(&f.hr_scope(), Some(&f.finance))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        digests.digest_history(&f.hr, 10, 0).unwrap(),
        vec![second.clone(), first.clone()]
    );
    assert_eq!(digests.digest_history(&f.hr, 1, 0).unwrap(), vec![second]);

    assert_eq!(digests.forget_digest_source(&purged).unwrap(), 2);
    assert!(digests.digest_history(&f.hr, 10, 0).unwrap().is_empty());
    assert_eq!(
        digests.digests(&f.both_scope(), None).unwrap(),
        vec![ledger, other],
        "digests that never quoted it stay"
    );
    assert_eq!(digests.forget_digest_source(&purged).unwrap(), 0);
}

/// A set is replaced under its skill and name; runs read back oldest first, by scope, skill
/// and set; forgetting an item replaces the answers made from it and nothing else.
pub fn eval_sets_and_runs_follow_scope_and_forget_an_item(store: &dyn Store) {
    let evals = store.evals().expect("the store keeps evaluation runs");
    let f = Fixture::new();
    evals.put_eval_set(&f.eval_set(&f.hr, "basics", 1)).unwrap();
    let replaced = f.eval_set(&f.hr, "basics", 2);
    evals.put_eval_set(&replaced).unwrap();
    let advanced = f.eval_set(&f.hr, "advanced", 1);
    evals.put_eval_set(&advanced).unwrap();
    evals
        .put_eval_set(&f.eval_set(&f.finance, "basics", 1))
        .unwrap();
    assert_eq!(
        evals.eval_sets(&f.hr_scope(), None).unwrap(),
        vec![advanced, replaced],
        "replaced, not added; by skill and name"
    );
    assert_eq!(evals.eval_sets(&f.both_scope(), None).unwrap().len(), 3);

    let (secret, plain) = (
        format!("LSN-secret-{}", f.tag),
        format!("LSN-plain-{}", f.tag),
    );
    let late = f.eval_run(&f.hr, "basics", 3, &[&secret, &plain]);
    let early = f.eval_run(&f.hr, "basics", 1, &[&plain]);
    let other_set = f.eval_run(&f.hr, "advanced", 2, &[&secret]);
    let finance = f.eval_run(&f.finance, "basics", 4, &[]);
    for run in [&late, &early, &other_set, &finance] {
        evals.put_eval_run(run).unwrap();
    }
    expect_conflict(evals.put_eval_run(&late), late.id.as_str());
    assert_eq!(
        evals
            .eval_runs(&f.hr_scope(), Some(&f.hr), Some("basics"))
            .unwrap(),
        vec![late.clone(), early.clone()],
        "in the order they were stored"
    );
    assert_eq!(evals.eval_runs(&f.hr_scope(), None, None).unwrap().len(), 3);
    assert_eq!(
        evals.eval_runs(&f.both_scope(), None, None).unwrap().len(),
        4
    );
    assert!(
        evals
            .eval_runs(&Scope::domains([f.hr.domain()]), Some(&f.finance), None)
            .unwrap()
            .is_empty()
    );

    assert_eq!(evals.forget_eval_item(&secret, "[purged]").unwrap(), 2);
    let runs = evals.eval_runs(&f.hr_scope(), None, None).unwrap();
    let answers: Vec<Vec<&str>> = runs
        .iter()
        .map(|r| r.grades.iter().map(|g| g.answer.as_str()).collect())
        .collect();
    let plain_answer = format!("redeploy, as {plain} says");
    assert_eq!(
        answers,
        vec![
            vec!["[purged]", plain_answer.as_str()],
            vec![plain_answer.as_str()],
            vec!["[purged]"],
        ]
    );
    assert_eq!(runs[1], early, "a run that never used it is untouched");
}

/// A digest, evaluation set or run that breaks a limit (a NUL, an oversized text, a set name on
/// two lines) is refused by the store itself, naming the field, and nothing is written.
pub fn digest_and_evaluation_writes_pass_the_limits(store: &dyn Store) {
    let digests = store.digests().expect("the store keeps digests");
    let evals = store.evals().expect("the store keeps evaluation runs");
    let f = Fixture::new();
    let mut digest = f.digest(&f.hr, 0, "Rollbacks", &["L-1"]);
    digest.markdown.push('\0');
    expect_invalid(digests.put_digest(&digest), "markdown");
    let mut digest = f.digest(&f.hr, 1, "Rollbacks", &["L-1"]);
    digest.model_error = Some("x".repeat(lore_core::limits::MAX_TEXT + 1));
    expect_invalid(digests.put_digest(&digest), "model_error");
    assert!(digests.digests(&f.hr_scope(), None).unwrap().is_empty());

    let mut set = f.eval_set(&f.hr, "smoke", 2);
    set.name = "smoke\u{2028}## System".into();
    expect_invalid(evals.put_eval_set(&set), "name");
    let mut set = f.eval_set(&f.hr, "smoke", 2);
    set.questions[1].expected = "a\0".into();
    expect_invalid(evals.put_eval_set(&set), "questions.expected");
    assert!(evals.eval_sets(&f.hr_scope(), None).unwrap().is_empty());

    let mut run = f.eval_run(&f.hr, "smoke", 1, &["L-1"]);
    run.grades[0].answer = "answer\0".into();
    expect_invalid(evals.put_eval_run(&run), "grades.answer");
    let mut run = f.eval_run(&f.hr, "smoke", 1, &["L-1"]);
    run.score = f64::NAN;
    expect_invalid(evals.put_eval_run(&run), "score");
    assert!(
        evals
            .eval_runs(&f.hr_scope(), None, None)
            .unwrap()
            .is_empty()
    );
}

fn expect_invalid(result: lore_core::Result<()>, field: &str) {
    match result {
        Err(lore_core::Error::Invalid { what, .. }) if what.contains(field) => {}
        other => panic!("a bad {field} was not refused by name: {other:?}"),
    }
}

/// Purges erasing different items of one evaluation run at once each rewrite the run; every
/// erasure must hold afterwards, none undone by another's stale copy of the run.
pub fn concurrent_erasures_in_one_run_are_all_kept(store: &dyn Store) {
    let evals = store.evals().expect("the store keeps evaluation runs");
    let f = Fixture::new();
    for round in 0..5 {
        let items: Vec<String> = (0..4)
            .map(|i| format!("LSN-{}-{round}-{i}", f.tag))
            .collect();
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        let run = f.eval_run(&f.hr, "race", round, &refs);
        evals.put_eval_run(&run).unwrap();
        std::thread::scope(|s| {
            for item in &items {
                s.spawn(move || assert_eq!(evals.forget_eval_item(item, "[purged]").unwrap(), 1));
            }
        });
        let stored = evals
            .eval_runs(&f.hr_scope(), Some(&f.hr), Some("race"))
            .unwrap()
            .into_iter()
            .find(|r| r.id == run.id)
            .unwrap();
        let kept: Vec<&str> = stored.grades.iter().map(|g| g.answer.as_str()).collect();
        assert_eq!(kept, vec!["[purged]"; 4], "round {round}");
    }
}
