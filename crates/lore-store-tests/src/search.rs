//! Full-text search over lessons and executions.

use serde_json::json;

use crate::fixture::*;
use lore_core::model::{LessonStatus, RecordKind};
use lore_core::ports::store::{ListFilter, Record, Store};

/// A lesson is found by a word of its rule, in any case, with a short snippet of the match.
pub fn search_finds_a_lesson_by_a_rule_word(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    for query in [
        f.word.clone(),
        f.word.to_uppercase(),
        format!("nothing {} else", f.word),
    ] {
        let hits = search(store, &query, &ListFilter::default(), 10);
        assert_eq!(hits.len(), 1, "{query:?}: {hits:?}");
        let hit = &hits[0];
        assert_eq!(
            (hit.kind, hit.id.as_str()),
            (RecordKind::Lesson, lesson.id.as_str())
        );
        assert_eq!(hit.skill, f.hr);
        assert!(hit.score.is_finite(), "{hit:?}");
        assert!(
            hit.snippet.contains(&f.word),
            "the snippet shows the match: {hit:?}"
        );
        assert!(hit.snippet.chars().count() <= 160, "{hit:?}");
    }
}

/// Search honours the statuses (lessons only) and the skill of the filter.
pub fn search_respects_statuses_and_skill(store: &dyn Store) {
    let f = Fixture::new();
    let approved = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    let review = f.findable_lesson(&f.hr, LessonStatus::NeedsReview, 1);
    let elsewhere = f.findable_lesson(&f.hr_other, LessonStatus::Approved, 2);
    let mut execution = f.execution(&f.hr, 3);
    execution.output = json!({"summary": format!("checked {}", f.word)});
    let records = vec![
        Record::Lesson(approved.clone()),
        Record::Lesson(review.clone()),
        Record::Lesson(elsewhere.clone()),
        Record::Execution(execution.clone()),
    ];
    write(store, records);

    let filter = |status: LessonStatus| ListFilter {
        statuses: Some([status].into()),
        ..f.of(&f.hr)
    };
    let found = hit_ids(&search(store, &f.word, &filter(LessonStatus::Approved), 10));
    assert_eq!(
        found,
        [approved.id.to_string(), execution.id.to_string()].into()
    );
    let found = hit_ids(&search(
        store,
        &f.word,
        &filter(LessonStatus::NeedsReview),
        10,
    ));
    assert_eq!(
        found,
        [review.id.to_string(), execution.id.to_string()].into()
    );
    let found = hit_ids(&search(store, &f.word, &f.of(&f.hr_other), 10));
    assert_eq!(found, [elsewhere.id.to_string()].into());
}

/// Executions are found by the words of their input and output, values and keys alike.
pub fn search_finds_executions_by_their_input(store: &dyn Store) {
    let f = Fixture::new();
    let key_word = format!("k{}", f.tag);
    let out_word = format!("o{}", f.tag);
    let mut execution = f.execution(&f.hr, 0);
    execution.input = json!({
        "candidate": format!("Zoë {}", f.word),
        "details": {key_word.clone(): ["nested", 3]},
    });
    execution.output = json!({"verdict": format!("hire {out_word}")});
    write(store, vec![Record::Execution(execution.clone())]);
    for query in [&f.word, &key_word, &out_word] {
        let hits = search(store, query, &ListFilter::default(), 10);
        assert_eq!(hits.len(), 1, "{query:?}: {hits:?}");
        assert_eq!(hits[0].kind, RecordKind::Execution);
        assert_eq!(hits[0].id, execution.id.as_str());
        assert_eq!(hits[0].skill, f.hr);
    }
}

/// Results come best first, scores never rise, and `limit` bounds the merged list.
pub fn search_ranks_best_first_within_limit(store: &dyn Store) {
    let f = Fixture::new();
    let w = &f.word;
    let mut strong = f.lesson(&f.hr, LessonStatus::Approved, 0);
    strong.rule = format!("{w} {w} {w}");
    strong.applies_when = w.clone();
    strong.tiers.summary = w.clone();
    strong.tags = vec![w.clone()];
    let mut records = vec![Record::Lesson(strong.clone())];
    for minutes in 1..5 {
        let mut weak = f.lesson(&f.hr, LessonStatus::Approved, minutes);
        weak.rule = format!(
            "When the candidate lists many frameworks and tools, mention {w} only in passing \
             after reviewing every project, reference, certificate and interview note."
        );
        records.push(Record::Lesson(weak));
        let mut execution = f.execution(&f.hr, minutes);
        execution.input = json!({"text": format!("a long note that says {w} once among words")});
        records.push(Record::Execution(execution));
    }
    write(store, records);

    let hits = search(store, w, &ListFilter::default(), 3);
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert_eq!(
        hits[0].id,
        strong.id.as_str(),
        "the strongest match comes first: {hits:?}"
    );
    assert!(
        hits.windows(2).all(|p| p[0].score >= p[1].score),
        "{hits:?}"
    );
    assert_eq!(search(store, w, &ListFilter::default(), 50).len(), 9);
    assert!(search(store, w, &ListFilter::default(), 0).is_empty());
}

/// Characters that mean something to a full-text engine are plain text to Lore's search:
/// they never fail a query, and the words around them are still found.
pub fn search_treats_special_characters_as_words(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let filter = ListFilter::default();
    let odd = [
        "\"", "\"\"", "'", "*", "NEAR(", "NEAR(a b", "-", "--", ":", "rule:", "a:b", "(", ")",
        "AND", "OR", "NOT", "^", "+", "{", "}", "[", "]", "\\", "%", "_", ";", "/*", "é",
        "e\u{301}", "🦀", "\u{0}", "\u{200b}", "²", "a\"b", "* OR *",
    ];
    for query in odd {
        store
            .search(query, &filter, 10)
            .unwrap_or_else(|e| panic!("search for {query:?} failed: {e}"));
    }
    let w = &f.word;
    for query in [
        format!("\"{w}"),
        format!("{w}*"),
        format!("-{w}"),
        format!("rule:{w}"),
        format!("NEAR({w}"),
        format!("NOT {w}"),
        format!("{w} AND"),
        format!("({w}))"),
    ] {
        let hits = search(store, &query, &filter, 10);
        assert_eq!(hit_ids(&hits), [lesson.id.to_string()].into(), "{query:?}");
    }
}

/// A query without words finds nothing, and is not an error.
pub fn empty_search_finds_nothing(store: &dyn Store) {
    let f = Fixture::new();
    write(
        store,
        vec![Record::Lesson(f.findable_lesson(
            &f.hr,
            LessonStatus::Approved,
            0,
        ))],
    );
    for query in ["", "   ", "!!! --- ***", "\n\t"] {
        assert!(
            search(store, query, &ListFilter::default(), 10).is_empty(),
            "{query:?}"
        );
    }
}

/// Words are read by their stem, as recall reads them: a search for "system design" finds a
/// rule about "systems designs", an execution's "deployments failed" is found by "deployment
/// fails", and archival memory where Bob "drinks" is found by "drinking". Every store stems
/// alike, so a store can be swapped for another without its searches finding less.
pub fn search_reads_words_by_their_stem(store: &dyn Store) {
    let f = Fixture::new();
    let mut lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    lesson.rule = format!("Review the systems designs with {} first.", f.word);
    lesson.tiers.summary = lesson.rule.clone();
    let mut execution = f.execution(&f.hr, 1);
    execution.input = json!({"report": "three deployments failed overnight"});
    let memory = f.memory(
        &f.hr,
        lore_core::model::MemoryCategory::Archival,
        "Bob drinks black coffee every morning",
        2,
    );
    write(
        store,
        vec![
            Record::Lesson(lesson.clone()),
            Record::Execution(execution.clone()),
            Record::Memory(memory.clone()),
        ],
    );
    let only_hr = f.of(&f.hr);
    let found = hit_ids(&search(store, "system design", &only_hr, 10));
    assert!(found.contains(lesson.id.as_str()), "{found:?}");
    // A rule in the singular is found by the plural and by the verb's other forms.
    let mut scored = f.lesson(&f.hr, LessonStatus::Approved, 3);
    scored.rule = "Score system design separately.".to_owned();
    scored.tiers.summary = scored.rule.clone();
    write(store, vec![Record::Lesson(scored.clone())]);
    for query in ["system design", "designs", "designing", "scoring systems"] {
        let found = hit_ids(&search(store, query, &only_hr, 10));
        assert!(found.contains(scored.id.as_str()), "{query:?}: {found:?}");
    }
    let found = hit_ids(&search(store, "deployment fails", &only_hr, 10));
    assert_eq!(found, [execution.id.to_string()].into());
    let hits = store
        .search_memories(
            "who is drinking",
            &ListFilter {
                scope: f.hr_scope(),
                ..ListFilter::default()
            },
            lore_core::model::MemoryCategory::Archival,
            10,
        )
        .unwrap();
    assert_eq!(
        hits.iter().map(|(m, _)| m.id.as_str()).collect::<Vec<_>>(),
        [memory.id.as_str()],
        "{hits:?}"
    );
}
