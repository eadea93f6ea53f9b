//! The layers beside the records travel whole between real SQLite files: knowledge documents
//! with their chunk vectors, decisions with their original audit entry, every digest version,
//! evaluation sets and runs, tuning runs, checkpoints with their weights and the active
//! checkpoint; through a JSONL file too. A second copy writes nothing, and an item stored with
//! other content is refused before anything is written.

use chrono::{TimeDelta, TimeZone, Utc};
use lore_core::Error;
use lore_core::id::{AuditId, CheckpointId, DecisionId, DigestId, EvalRunId};
use lore_core::model::{
    AuditAction, AuditEntry, ChunkVector, DecisionRecord, Digest, DigestMethod, EvalQuestion,
    EvalRun, EvalSet, EvalTrigger, Grader, KnowledgeChunk, KnowledgeDocument, LessonStatus,
    RecordKind,
};
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::knowledge::DocumentUpdate;
use lore_core::ports::store::{OnDuplicate, Record, Store};
use lore_core::ports::tuning::{Checkpoint, Evaluation, TunePlan, TuneRun, TuneStatus};
use lore_core::scope::{Scope, SkillPath};
use lore_engine::layers::{
    self, LayerItem, layer_sums, read_export, read_layers, write_layer_lines, write_layers,
};
use lore_sqlite::{OpenMode, SqliteStore};

fn skill(raw: &str) -> SkillPath {
    SkillPath::parse(raw).unwrap()
}

fn entry(kind: RecordKind, subject: &str, minutes: i64) -> AuditEntry {
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0).unwrap() + TimeDelta::minutes(minutes);
    AuditEntry {
        id: AuditId::generate(at),
        subject_kind: kind,
        subject: subject.to_owned(),
        action: AuditAction::Created,
        from: None,
        to: None,
        actor: "ana".into(),
        at,
        reason: "original".into(),
        evidence: serde_json::Value::Null,
    }
}

/// A store holding one item of every layer kind, in two domains.
fn filled(dir: &std::path::Path) -> SqliteStore {
    let store = SqliteStore::open(dir.join("source.db"), OpenMode::Create).unwrap();
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0).unwrap() + TimeDelta::nanoseconds(7);
    let (support, finance) = (skill("support/triage"), skill("finance/audit"));
    let chunk = |ordinal: u32, vector: Option<Vec<f32>>| KnowledgeChunk {
        id: format!("chunk-{ordinal}"),
        skill: support.clone(),
        source: "docs/runbook.md".into(),
        heading: "Runbook › Rollback".into(),
        page: None,
        line_start: 1,
        line_end: 9,
        ordinal,
        text: format!("roll back step {ordinal}"),
        redacted: false,
        vector: vector.map(|vector| ChunkVector {
            embedder: EmbedderId {
                name: "builtin".into(),
                dim: 3,
            },
            vector,
        }),
    };
    let document = KnowledgeDocument {
        skill: support.clone(),
        source: "docs/runbook.md".into(),
        hash: "abc".into(),
        chunks: 2,
        ingested_at: at,
        ingested_by: "ana".into(),
    };
    store
        .knowledge()
        .unwrap()
        .sync_documents(
            &[DocumentUpdate {
                document,
                chunks: vec![
                    chunk(0, Some(vec![0.1, 1.0 / 3.0, -f32::MIN_POSITIVE])),
                    chunk(1, None),
                ],
            }],
            &[],
        )
        .unwrap();
    for (s, minutes) in [(&support, 0), (&finance, 1)] {
        let decision = DecisionRecord {
            id: DecisionId::generate(at + TimeDelta::minutes(minutes)),
            skill: s.clone(),
            situation: "refund above the limit".into(),
            action: "approve once".into(),
            rationale: "loyal customer".into(),
            outcome: None,
            resolves: None,
            status: LessonStatus::Approved,
            decided_by: "key:ana".into(),
            created_at: at,
            updated_at: at,
        };
        let audit = entry(RecordKind::Decision, decision.id.as_str(), minutes);
        store
            .decisions()
            .unwrap()
            .put_decision(&decision, &audit)
            .unwrap();
    }
    for minutes in [0, 5] {
        let at = at + TimeDelta::minutes(minutes);
        store
            .digests()
            .unwrap()
            .put_digest(&Digest {
                id: DigestId::generate(at),
                skill: support.clone(),
                markdown: format!("version {minutes}"),
                sources: Vec::new(),
                source_hash: format!("h{minutes}"),
                method: DigestMethod::Extractive,
                model_error: None,
                generated_by: "lore".into(),
                generated_at: at,
            })
            .unwrap();
    }
    let evals = store.evals().unwrap();
    evals
        .put_eval_set(&EvalSet {
            skill: finance.clone(),
            name: "basics".into(),
            questions: vec![EvalQuestion {
                question: "Who approves a refund above the limit?".into(),
                expected: "a lead".into(),
                grader: Grader::Contains,
            }],
            defined_by: "ana".into(),
            updated_at: at,
        })
        .unwrap();
    evals
        .put_eval_run(&EvalRun {
            id: EvalRunId::generate(at),
            skill: finance,
            set: "basics".into(),
            answerer: "context".into(),
            grades: Vec::new(),
            passed: 0,
            total: 0,
            score: 0.0,
            memory_hash: "m".into(),
            trigger: EvalTrigger::Manual,
            run_by: "ana".into(),
            run_at: at,
        })
        .unwrap();
    let tuning = store.tuning().unwrap();
    let base = EmbedderId {
        name: "builtin".into(),
        dim: 2,
    };
    let mut run = TuneRun::started(TunePlan::default(), base.clone(), "ops".into(), at);
    let checkpoint = Checkpoint {
        id: CheckpointId::generate(at),
        run: run.id.clone(),
        base,
        created_at: at,
        evaluation: Evaluation::default(),
        weights: vec![1.0, 0.1, -0.2, f32::MIN_POSITIVE],
    };
    run.status = TuneStatus::Finished;
    run.checkpoint = Some(checkpoint.id.clone());
    tuning.put_run(&run).unwrap();
    tuning.finish_run(&run, &checkpoint).unwrap();
    let activated = entry(RecordKind::Embedder, checkpoint.id.as_str(), 9);
    tuning
        .set_active_checkpoint(Some(&checkpoint.id), &activated)
        .unwrap();
    store
}

/// Copies the layers and then the audit trail, as `lore migrate` does.
fn copy(from: &dyn Store, to: &dyn Store) -> usize {
    let audits = from.audit(None).unwrap();
    let items = read_layers(from, &Scope::unrestricted()).unwrap();
    let by = layers::Writer {
        actor: "test",
        at: Utc::now(),
        audits: &audits,
    };
    let written = write_layers(to, &items, &by).unwrap().written;
    let records: Vec<Record> = audits.into_iter().map(Record::Audit).collect();
    to.write(&records, OnDuplicate::SkipIdentical).unwrap();
    written
}

#[test]
fn every_layer_kind_is_copied_whole_and_a_second_copy_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let source = filled(dir.path());
    let dest = SqliteStore::open(dir.path().join("dest.db"), OpenMode::Create).unwrap();
    let sums = layer_sums(&source).unwrap();
    let counts: Vec<(&str, usize)> = sums.iter().map(|(k, (n, _))| (*k, *n)).collect();
    assert_eq!(
        counts,
        [
            ("active_checkpoint", 1),
            ("checkpoint", 1),
            ("decision", 2),
            ("digest", 2),
            ("eval_run", 1),
            ("eval_set", 1),
            ("knowledge_document", 1),
            ("tune_run", 1),
        ]
    );
    assert_eq!(copy(&source, &dest), 10);
    assert_eq!(layer_sums(&dest).unwrap(), sums);
    assert_eq!(
        dest.audit(None).unwrap(),
        source.audit(None).unwrap(),
        "the decisions and the activation kept their original audit entries, once"
    );
    let chunks = dest
        .knowledge()
        .unwrap()
        .knowledge_chunks(&Scope::unrestricted(), None)
        .unwrap();
    let bits: Vec<u32> = chunks[0]
        .vector
        .as_ref()
        .unwrap()
        .vector
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(
        bits,
        [0.1f32, 1.0 / 3.0, -f32::MIN_POSITIVE].map(f32::to_bits)
    );
    assert_eq!(copy(&source, &dest), 0, "a second copy writes nothing");
    assert_eq!(layer_sums(&dest).unwrap(), sums);
}

#[test]
fn an_item_stored_otherwise_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let source = filled(dir.path());
    let dest = SqliteStore::open(dir.path().join("dest.db"), OpenMode::Create).unwrap();
    let mut items = read_layers(&source, &Scope::unrestricted()).unwrap();
    let LayerItem::Decision(decision) = items.iter().find(|i| i.kind() == "decision").unwrap()
    else {
        unreachable!()
    };
    let mut changed = decision.clone();
    changed.action = "refuse".into();
    dest.decisions()
        .unwrap()
        .put_decision(
            &changed,
            &entry(RecordKind::Decision, changed.id.as_str(), 0),
        )
        .unwrap();
    let by = layers::Writer {
        actor: "test",
        at: Utc::now(),
        audits: &[],
    };
    let err = write_layers(&dest, &items, &by).unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains(decision.id.as_str())),
        "{err}"
    );
    let sums = layer_sums(&dest).unwrap();
    assert_eq!(sums["decision"].0, 1);
    assert_eq!(sums["knowledge_document"].0, 0, "nothing else was written");

    // A chunk whose vector does not match its embedder is refused by name.
    items.retain(|i| i.kind() == "knowledge_document");
    if let LayerItem::KnowledgeDocument(d) = &mut items[0] {
        d.chunks[0].vector = Some(vec![1.0]);
    }
    let err = write_layers(&dest, &items, &by).unwrap_err();
    assert!(err.to_string().contains("chunk-0"), "{err}");
}

#[test]
fn a_jsonl_file_carries_records_and_layers_and_a_scope_narrows_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let source = filled(dir.path());
    let items = read_layers(&source, &Scope::unrestricted()).unwrap();
    let mut file = Vec::new();
    let audits: Vec<Record> = source
        .audit(None)
        .unwrap()
        .into_iter()
        .map(Record::Audit)
        .collect();
    lore_engine::interchange::write_jsonl(&audits, &mut file).unwrap();
    write_layer_lines(&items, &mut file).unwrap();
    let (records, read) = read_export(file.as_slice()).unwrap();
    assert_eq!((&records, &read), (&audits, &items));
    let dest = SqliteStore::open(dir.path().join("dest.db"), OpenMode::Create).unwrap();
    let by = layers::Writer {
        actor: "test",
        at: Utc::now(),
        audits: &[],
    };
    assert_eq!(write_layers(&dest, &read, &by).unwrap().written, 10);
    let again = write_layers(&dest, &read, &by).unwrap();
    assert_eq!(
        (again.written, again.skipped),
        (0, 10),
        "what a file restored reads back equal to it"
    );
    assert_eq!(layer_sums(&dest).unwrap(), layer_sums(&source).unwrap());

    let err =
        read_export(&b"\n{\"type\": \"decision\", \"record\": {\"id\": 1}}\n"[..]).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");

    let support = read_layers(&source, &Scope::domains(["support"])).unwrap();
    let kinds: Vec<&str> = support.iter().map(LayerItem::kind).collect();
    assert_eq!(
        kinds,
        ["knowledge_document", "decision", "digest", "digest"],
        "only the support domain, and no tuning: it is the whole store's"
    );
}

#[test]
fn an_import_holds_tuning_to_activations_rules() {
    let dir = tempfile::tempdir().unwrap();
    let source = filled(dir.path());
    let items = read_layers(&source, &Scope::unrestricted()).unwrap();
    let fresh = |name: &str| {
        let store = SqliteStore::open(dir.path().join(name), OpenMode::Create).unwrap();
        lore_engine::Engine::new(std::sync::Arc::new(store), Default::default())
    };
    let engine = fresh("a.db");
    // The source's active checkpoint never beat the base: it may not become active here.
    let err = engine.import_export(Vec::new(), items.clone()).unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("did not beat")),
        "{err}"
    );
    assert!(
        engine.export_layers().unwrap().is_empty(),
        "nothing was written"
    );

    let with = |change: &dyn Fn(&mut Checkpoint)| -> Vec<LayerItem> {
        let mut changed = items.clone();
        for item in &mut changed {
            if let LayerItem::Checkpoint(c) = item {
                change(c);
            }
        }
        changed
    };
    let short = with(&|c| {
        c.evaluation.better = true;
        c.weights.pop();
    });
    let err = engine.import_export(Vec::new(), short).unwrap_err();
    assert!(err.to_string().contains("weights"), "{err}");

    let better = with(&|c| c.evaluation.better = true);
    let report = engine.import_export(Vec::new(), better).unwrap();
    assert_eq!(report.write.written, 10, "{report:?}");
    let active = engine.export_layers().unwrap();
    assert!(active.iter().any(|i| i.kind() == "active_checkpoint"));
}
