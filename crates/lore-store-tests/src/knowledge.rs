//! Knowledge documents and chunks, and resolved decisions: what seed 004's knowledge and
//! decision layers keep, the same in every store.

use chrono::TimeDelta;
use lore_core::Error;
use lore_core::id::DecisionId;
use lore_core::model::{
    ChunkVector, DecisionRecord, KnowledgeChunk, KnowledgeDocument, LessonStatus, RecordKind,
};
use lore_core::ports::knowledge::{DocumentUpdate, KnowledgeChanges};
use lore_core::ports::store::Store;
use lore_core::scope::{Scope, SkillPath};
use lore_recall::EmbedderId;

use crate::fixture::*;

impl Fixture {
    fn document(&self, skill: &SkillPath, source: &str, texts: &[&str]) -> DocumentUpdate {
        let chunks: Vec<KnowledgeChunk> = texts
            .iter()
            .zip(0u32..)
            .map(|(text, ordinal)| KnowledgeChunk {
                id: format!("chunk-{}-{source}-{ordinal}-{text}", self.tag),
                skill: skill.clone(),
                source: source.to_owned(),
                heading: "Runbook › Rollback".into(),
                // A paged document's page survives the round trip; the others have none.
                page: source.ends_with(".pdf").then_some(ordinal + 1),
                line_start: ordinal * 10 + 1,
                line_end: ordinal * 10 + 9,
                ordinal,
                text: (*text).to_owned(),
                redacted: ordinal == 1,
                // Every other chunk has a vector, with values that a lossy store would round.
                vector: (ordinal % 2 == 0).then(|| ChunkVector {
                    embedder: EmbedderId {
                        name: "test-embedder".into(),
                        dim: 3,
                    },
                    vector: vec![0.1, -f32::MIN_POSITIVE, 1.0 / 3.0 + ordinal as f32],
                }),
            })
            .collect();
        DocumentUpdate {
            document: KnowledgeDocument {
                skill: skill.clone(),
                source: source.to_owned(),
                hash: format!("sha-{source}-{}", texts.join("|")),
                chunks: chunks.len(),
                ingested_at: self.at(0),
                ingested_by: "ana".into(),
            },
            chunks,
        }
    }

    fn decision(&self, skill: &SkillPath, minutes: i64) -> DecisionRecord {
        let at = self.at(minutes);
        DecisionRecord {
            id: DecisionId::generate(at),
            skill: skill.clone(),
            situation: "refund above the limit — «срочно»".into(),
            action: "approve once".into(),
            rationale: "long-standing customer".into(),
            outcome: None,
            resolves: Some(format!("EXEC-{}", self.tag)),
            status: LessonStatus::NeedsReview,
            decided_by: "key:ana".into(),
            created_at: at,
            updated_at: at,
        }
    }
}

fn chunk_ids(chunks: &[KnowledgeChunk]) -> Vec<String> {
    ids(chunks, |c| c.id.as_str())
}

/// Documents are stored with their chunks (vectors bit for bit), read inside the scope by
/// source and position, replaced whole by a new version and removed with their chunks; every
/// sync that changes something moves the revision, and a sync that fails writes nothing.
pub fn knowledge_documents_sync_whole_within_scope(store: &dyn Store) {
    let knowledge = store.knowledge().expect("the store keeps knowledge");
    let f = Fixture::new();
    let start = knowledge.knowledge_revision().unwrap();
    let runbook = f.document(&f.hr, "docs/runbook.md", &["a", "b", "c"]);
    let adr = f.document(&f.hr, "docs/adr-1.pdf", &["x"]);
    let ledger = f.document(&f.finance, "ledger.txt", &["y", "z"]);
    knowledge
        .sync_documents(&[runbook.clone(), adr.clone(), ledger.clone()], &[])
        .unwrap();
    let after_put = knowledge.knowledge_revision().unwrap();
    assert!(after_put > start, "a sync moves the revision");

    let docs = knowledge.documents(&f.hr_scope(), None).unwrap();
    assert_eq!(docs, vec![adr.document.clone(), runbook.document.clone()]);
    let chunks = knowledge
        .knowledge_chunks(&f.hr_scope(), Some(&f.hr))
        .unwrap();
    let expected: Vec<KnowledgeChunk> = adr.chunks.iter().chain(&runbook.chunks).cloned().collect();
    assert_eq!(
        chunks, expected,
        "by source, then position, vectors included"
    );
    let bits = |c: &KnowledgeChunk| {
        c.vector
            .as_ref()
            .map(|v| v.vector.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    };
    assert_eq!(
        chunks.iter().map(bits).collect::<Vec<_>>(),
        expected.iter().map(bits).collect::<Vec<_>>()
    );
    assert_eq!(
        chunk_ids(
            &knowledge
                .knowledge_chunks(&f.both_scope(), Some(&f.finance))
                .unwrap()
        ),
        chunk_ids(&ledger.chunks)
    );
    assert!(
        knowledge
            .knowledge_chunks(&f.hr_scope(), Some(&f.finance))
            .unwrap()
            .is_empty(),
        "a skill outside the scope shows nothing"
    );

    let shorter = f.document(&f.hr, "docs/runbook.md", &["a2"]);
    knowledge
        .sync_documents(
            std::slice::from_ref(&shorter),
            &[(f.finance.clone(), "ledger.txt".into())],
        )
        .unwrap();
    let after_replace = knowledge.knowledge_revision().unwrap();
    assert!(after_replace > after_put);
    assert_eq!(
        chunk_ids(&knowledge.knowledge_chunks(&f.both_scope(), None).unwrap()),
        chunk_ids(&[adr.chunks.clone(), shorter.chunks.clone()].concat()),
        "the old version's chunks and the removed document's are gone"
    );
    assert_eq!(
        knowledge.documents(&f.both_scope(), None).unwrap(),
        vec![adr.document.clone(), shorter.document.clone()]
    );

    // Two documents claiming one chunk ID: the whole sync is refused.
    let mut clash = f.document(&f.hr_other, "notes.md", &["n"]);
    clash.chunks[0].id.clone_from(&adr.chunks[0].id);
    let fresh = f.document(&f.hr_other, "fresh.md", &["q"]);
    let result = knowledge.sync_documents(&[fresh, clash], &[]);
    expect_conflict(result, &adr.chunks[0].id);
    assert_eq!(knowledge.knowledge_revision().unwrap(), after_replace);
    assert!(
        knowledge
            .documents(&Scope::unrestricted(), Some(&f.hr_other))
            .unwrap()
            .is_empty(),
        "nothing of a refused sync is written"
    );
    knowledge.sync_documents(&[], &[]).unwrap();
    assert_eq!(
        knowledge.knowledge_revision().unwrap(),
        after_replace,
        "an empty sync changes nothing"
    );
}

/// What changed after a revision: the documents written or removed since (whatever the
/// order of their writes), the current chunks of those still there with their vectors, and
/// nothing of documents left alone; a name removed then written again comes back whole.
pub fn knowledge_changes_name_what_moved_after_a_revision(store: &dyn Store) {
    let knowledge = store.knowledge().expect("the store keeps knowledge");
    let f = Fixture::new();
    // Other tests may share the store: only this fixture's skills are looked at.
    let mine = |changes: &KnowledgeChanges| {
        let ours = |skill: &SkillPath| [&f.hr, &f.hr_other, &f.finance].contains(&skill);
        let documents: Vec<(String, String)> = changes
            .documents
            .iter()
            .filter(|(skill, _)| ours(skill))
            .map(|(skill, source)| (skill.to_string(), source.clone()))
            .collect();
        let chunks: Vec<KnowledgeChunk> = changes
            .chunks
            .iter()
            .filter(|c| ours(&c.skill))
            .cloned()
            .collect();
        (documents, chunks)
    };
    let name = |skill: &SkillPath, source: &str| (skill.to_string(), source.to_owned());
    let start = knowledge.knowledge_revision().unwrap();
    let runbook = f.document(&f.hr, "docs/runbook.md", &["a", "b"]);
    let manual = f.document(&f.hr, "docs/manual.pdf", &["m1", "m2"]);
    let ledger = f.document(&f.finance, "ledger.txt", &["y"]);
    knowledge
        .sync_documents(&[runbook.clone(), manual.clone(), ledger.clone()], &[])
        .unwrap();
    let first = knowledge.knowledge_revision().unwrap();

    let all = knowledge.knowledge_changes(start).unwrap();
    assert!(all.revision >= first, "{} < {first}", all.revision);
    let (documents, chunks) = mine(&all);
    assert_eq!(
        documents,
        vec![
            name(&f.finance, "ledger.txt"),
            name(&f.hr, "docs/manual.pdf"),
            name(&f.hr, "docs/runbook.md"),
        ],
        "by skill and source"
    );
    let expected: Vec<KnowledgeChunk> = [&ledger, &manual, &runbook]
        .iter()
        .flat_map(|d| d.chunks.clone())
        .collect();
    assert_eq!(chunks, expected, "as stored, vectors and pages included");

    // The runbook changes, the ledger goes, the manual stays as it was.
    let shorter = f.document(&f.hr, "docs/runbook.md", &["a2"]);
    knowledge
        .sync_documents(
            std::slice::from_ref(&shorter),
            &[(f.finance.clone(), "ledger.txt".into())],
        )
        .unwrap();
    let second = knowledge.knowledge_revision().unwrap();
    let since_first = knowledge.knowledge_changes(first).unwrap();
    assert!(since_first.revision >= second);
    let (documents, chunks) = mine(&since_first);
    assert_eq!(
        documents,
        vec![
            name(&f.finance, "ledger.txt"),
            name(&f.hr, "docs/runbook.md")
        ],
        "the changed and the removed document, not the one left alone"
    );
    assert_eq!(chunks, shorter.chunks, "only the new version's chunks");
    let (documents, chunks) = mine(&knowledge.knowledge_changes(second).unwrap());
    assert!(documents.is_empty() && chunks.is_empty(), "{documents:?}");

    // Removing what is not there leaves no record; a removed name written again comes back.
    knowledge
        .sync_documents(&[], &[(f.hr_other.clone(), "never.md".into())])
        .unwrap();
    let back = f.document(&f.finance, "ledger.txt", &["y2"]);
    knowledge
        .sync_documents(std::slice::from_ref(&back), &[])
        .unwrap();
    let (documents, chunks) = mine(&knowledge.knowledge_changes(second).unwrap());
    assert_eq!(documents, vec![name(&f.finance, "ledger.txt")]);
    assert_eq!(chunks, back.chunks);
    let (documents, _) = mine(&knowledge.knowledge_changes(first).unwrap());
    assert_eq!(
        documents,
        vec![
            name(&f.finance, "ledger.txt"),
            name(&f.hr, "docs/runbook.md")
        ]
    );

    // A revision at or past the store's names nothing and says where the store is.
    let now = knowledge.knowledge_revision().unwrap();
    let ahead = knowledge.knowledge_changes(now + 100).unwrap();
    assert!(ahead.documents.is_empty() && ahead.chunks.is_empty());
    assert!(ahead.revision >= now && ahead.revision < now + 100);
}

/// A decision is stored with its audit entry, refused under a taken ID, replaced only against
/// the `updated_at` its caller read, and a batch of changes lands whole or not at all; every
/// change moves the revision, and listings follow scope and skill, oldest first.
pub fn decisions_follow_their_lifecycle_atomically(store: &dyn Store) {
    let decisions = store.decisions().expect("the store keeps decisions");
    let f = Fixture::new();
    let start = decisions.decision_revision().unwrap();
    let first = f.decision(&f.hr, 0);
    let second = f.decision(&f.hr_other, 1);
    let other = f.decision(&f.finance, 2);
    for (d, minutes) in [(&first, 0), (&second, 1), (&other, 2)] {
        let audit = f.audit(RecordKind::Decision, d.id.as_str(), minutes);
        decisions.put_decision(d, &audit).unwrap();
    }
    let after_put = decisions.decision_revision().unwrap();
    assert!(after_put > start);
    assert_eq!(
        decisions.decision(&first.id).unwrap().as_ref(),
        Some(&first)
    );
    let taken = f.audit(RecordKind::Decision, first.id.as_str(), 3);
    expect_conflict(decisions.put_decision(&first, &taken), first.id.as_str());
    assert_eq!(store.audit(Some(first.id.as_str())).unwrap().len(), 1);

    let mut approved = first.clone();
    approved.status = LessonStatus::Approved;
    approved.updated_at = first.updated_at + TimeDelta::minutes(5);
    let audit = f.audit(RecordKind::Decision, first.id.as_str(), 5);
    decisions
        .update_decisions(&[(approved.clone(), first.updated_at, audit.clone())])
        .unwrap();
    assert_eq!(
        decisions.decision(&first.id).unwrap(),
        Some(approved.clone())
    );
    assert_eq!(store.audit(Some(first.id.as_str())).unwrap().len(), 2);
    let after_update = decisions.decision_revision().unwrap();
    assert!(after_update > after_put);

    let mut stale = approved.clone();
    stale.status = LessonStatus::Suppressed;
    let audit = f.audit(RecordKind::Decision, first.id.as_str(), 6);
    expect_conflict(
        decisions.update_decisions(&[(stale, first.updated_at, audit)]),
        first.id.as_str(),
    );
    let mut changed = second.clone();
    changed.status = LessonStatus::Approved;
    let unknown = f.decision(&f.hr, 9);
    let batch = [
        (
            changed,
            second.updated_at,
            f.audit(RecordKind::Decision, second.id.as_str(), 7),
        ),
        (
            unknown.clone(),
            unknown.updated_at,
            f.audit(RecordKind::Decision, unknown.id.as_str(), 8),
        ),
    ];
    assert!(matches!(
        decisions.update_decisions(&batch),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        decisions.decision(&second.id).unwrap(),
        Some(second.clone())
    );
    assert_eq!(decisions.decision(&unknown.id).unwrap(), None);
    assert_eq!(store.audit(Some(second.id.as_str())).unwrap().len(), 1);
    assert_eq!(decisions.decision_revision().unwrap(), after_update);

    assert_eq!(
        decisions.decisions(&f.hr_scope(), None).unwrap(),
        vec![approved, second.clone()]
    );
    assert_eq!(
        decisions
            .decisions(&f.both_scope(), Some(&f.finance))
            .unwrap(),
        vec![other]
    );
    assert!(
        decisions
            .decisions(&f.hr_scope(), Some(&f.finance))
            .unwrap()
            .is_empty()
    );
}

/// A knowledge sync and a decision each ring the change bell, so a server following the store
/// hears another server's ingest or decision at once.
pub fn knowledge_and_decision_writes_ring_the_change_bell(store: &dyn Store) {
    let Some(bell) = store.change_bell() else {
        return;
    };
    let f = Fixture::new();
    let wait = |mark| bell.wait(mark, std::time::Duration::from_secs(30));
    let mark = bell.rung();
    let doc = f.document(&f.hr, "docs/bell.md", &["b"]);
    store
        .knowledge()
        .unwrap()
        .sync_documents(&[doc], &[])
        .unwrap();
    assert_ne!(wait(mark), mark, "the sync did not ring the bell");
    let mark = bell.rung();
    let decision = f.decision(&f.hr, 0);
    let audit = f.audit(RecordKind::Decision, decision.id.as_str(), 0);
    store
        .decisions()
        .unwrap()
        .put_decision(&decision, &audit)
        .unwrap();
    assert_ne!(wait(mark), mark, "the decision did not ring the bell");
}

/// A decision or document that breaks a limit (a NUL, an oversized text, a `resolves` that
/// reads as a path, a source on two lines) is refused by the store itself, naming the field,
/// and nothing is written: whichever door a record came through, what is stored imports again.
pub fn knowledge_and_decision_writes_pass_the_limits(store: &dyn Store) {
    let decisions = store.decisions().expect("the store keeps decisions");
    let f = Fixture::new();
    let start = decisions.decision_revision().unwrap();
    type Spoil = fn(&mut DecisionRecord);
    let breaks: [(&str, Spoil); 5] = [
        ("situation", |d| d.situation = "a\0b".into()),
        ("action", |d| {
            d.action = "x".repeat(lore_core::limits::MAX_TEXT + 1)
        }),
        ("outcome", |d| d.outcome = Some("ok\0".into())),
        ("resolves", |d| d.resolves = Some("../../x".into())),
        ("decided_by", |d| d.decided_by = "k".repeat(300)),
    ];
    for (minutes, (field, spoil)) in (0..).zip(breaks) {
        let mut bad = f.decision(&f.hr, minutes);
        spoil(&mut bad);
        let audit = f.audit(RecordKind::Decision, bad.id.as_str(), minutes);
        expect_invalid(decisions.put_decision(&bad, &audit), field);
        assert_eq!(decisions.decision(&bad.id).unwrap(), None, "{field}");
    }
    let good = f.decision(&f.hr, 10);
    let audit = f.audit(RecordKind::Decision, good.id.as_str(), 10);
    decisions.put_decision(&good, &audit).unwrap();
    let mut spoiled = good.clone();
    spoiled.rationale = "because\0".into();
    spoiled.updated_at = good.updated_at + TimeDelta::minutes(1);
    let audit = f.audit(RecordKind::Decision, good.id.as_str(), 11);
    expect_invalid(
        decisions.update_decisions(&[(spoiled, good.updated_at, audit)]),
        "rationale",
    );
    assert_eq!(decisions.decision(&good.id).unwrap(), Some(good));
    assert_eq!(decisions.decision_revision().unwrap(), start + 1);

    let knowledge = store.knowledge().expect("the store keeps knowledge");
    let revision = knowledge.knowledge_revision().unwrap();
    let mut two_lines = f.document(&f.hr, "docs/a.md", &["fine"]);
    two_lines.document.source = "docs/a.md\n## System".into();
    let mut nul_chunk = f.document(&f.hr, "docs/b.md", &["fine"]);
    nul_chunk.chunks[0].text = "bad\0text".into();
    for (update, field) in [(two_lines, "source"), (nul_chunk, "chunk.text")] {
        expect_invalid(knowledge.sync_documents(&[update], &[]), field);
    }
    assert_eq!(knowledge.knowledge_revision().unwrap(), revision);
    assert!(knowledge.documents(&f.hr_scope(), None).unwrap().is_empty());
}

fn expect_invalid(result: lore_core::Result<()>, field: &str) {
    match result {
        Err(Error::Invalid { what, .. }) if what.contains(field) => {}
        other => panic!("a bad {field} was not refused by name: {other:?}"),
    }
}

/// Reviewers changing one decision at once, each from the version it read: exactly one wins,
/// the others are told it changed, and the stored decision and its audit trail are the
/// winner's, never a mix or a silently overwritten review.
pub fn concurrent_reviews_of_a_decision_let_exactly_one_win(store: &dyn Store) {
    let decisions = store.decisions().expect("the store keeps decisions");
    let f = Fixture::new();
    let statuses = [
        LessonStatus::Approved,
        LessonStatus::Rejected,
        LessonStatus::Suppressed,
        LessonStatus::Archived,
    ];
    for round in 0..5 {
        let read = f.decision(&f.hr, round * 10);
        let audit = f.audit(RecordKind::Decision, read.id.as_str(), round * 10);
        decisions.put_decision(&read, &audit).unwrap();
        let outcomes: Vec<(LessonStatus, lore_core::Result<()>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..)
                .zip(statuses)
                .map(|(i, status)| {
                    let read = &read;
                    let f = &f;
                    s.spawn(move || {
                        let mut changed = read.clone();
                        changed.status = status;
                        changed.updated_at = read.updated_at + TimeDelta::seconds(i);
                        let audit = f.audit(RecordKind::Decision, read.id.as_str(), round * 10 + i);
                        (
                            status,
                            decisions.update_decisions(&[(changed, read.updated_at, audit)]),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<LessonStatus> = outcomes
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {outcomes:?}");
        for (_, result) in &outcomes {
            assert!(
                matches!(result, Ok(()) | Err(Error::Conflict(_))),
                "{result:?}"
            );
        }
        let stored = decisions.decision(&read.id).unwrap().unwrap();
        assert_eq!(stored.status, won[0], "round {round}");
        assert_eq!(store.audit(Some(read.id.as_str())).unwrap().len(), 2);
    }
}
