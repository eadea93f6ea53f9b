//! `lore migrate --from STORE --to STORE`: every record copied between stores, then checked.
//!
//! Records go over in batches through [`Store::write`] with [`OnDuplicate::SkipIdentical`], each
//! batch one transaction, kind by kind in the source's order (oldest first), so the
//! destination's change feed keeps the source's order. An interrupted run is continued by
//! running it again: what was copied is skipped, and a record that differs is refused by name.
//! Lesson vectors and the recall index's state (the embedder and its frozen fit) follow, so
//! recall on the destination needs no re-embedding. The layers beside the records (knowledge
//! documents with their chunk vectors, decisions, digests, evaluation sets and runs, the
//! embedder's tuning) are copied before the audit trail, so each decision and the active
//! checkpoint are stored with their original audit entry, which the audit copy then skips. The
//! check reads both stores back: the same counts, and per kind a SHA-256 over every record's ID
//! and JSON, in ID order, and over every layer item's JSON.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lore_core::Scope;
use lore_core::model::MemoryCategory;
use lore_core::ports::store::{EpisodeFilter, ListFilter, OnDuplicate, Record, Store, StoreCounts};
use lore_engine::layers::{self, LayerItem};
use lore_recall::lessons::INDEX_STATE_KEYS;
use lore_sqlite::OpenMode;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::cli::MigrateArgs;
use crate::config::{Paths, StoreLocation};
use crate::output;

/// Records read and written per transaction.
const BATCH: usize = 500;

/// What a migration did and found.
#[derive(Debug, Serialize)]
struct Report {
    from: String,
    to: String,
    copied: usize,
    skipped: usize,
    vectors: usize,
    counts: StoreCounts,
    /// Layer items per kind, the same in both stores.
    layers: BTreeMap<&'static str, usize>,
    /// Per kind, the checksum both stores share.
    checksums: BTreeMap<&'static str, String>,
}

pub fn run(paths: &Paths, args: MigrateArgs, json: bool) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let from = StoreLocation::parse(Some(&args.from), &cwd, &paths.home)?;
    let to = StoreLocation::parse(Some(&args.to), &cwd, &paths.home)?;
    if from.describe() == to.describe() {
        bail!("--from and --to name the same store ({})", from.describe());
    }
    let source = from.open(OpenMode::Existing)?;
    let dest = to.open(OpenMode::Create)?;
    let all = Scope::unrestricted();
    let counts = source.counts(&all)?;
    let total = counts.executions
        + counts.corrections
        + counts.lessons
        + counts.error_events
        + counts.audit_entries
        + counts.memories
        + counts.episodes;
    refuse_strangers(source.as_ref(), dest.as_ref(), &to)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template("copying {bar:40} {pos}/{len} records ({eta} left)")
                .expect("a valid template"),
        );
        bar
    });
    let mut copy = Copy {
        dest: dest.as_ref(),
        bar: bar.as_ref(),
        copied: 0,
        skipped: 0,
    };
    for kind in KINDS {
        if kind == Kind::Audit {
            copy.layers(source.as_ref())
                .with_context(|| format!("copying the layers to {}", to.describe()))?;
        }
        let mut offset = 0;
        loop {
            let batch = read(source.as_ref(), kind, offset, Some(BATCH))?;
            if batch.is_empty() {
                break;
            }
            offset += batch.len();
            copy.write(&batch)
                .with_context(|| format!("copying {}s to {}", kind.name(), to.describe()))?;
            if kind == Kind::Audit {
                // The audit listing is not paged: one read held everything.
                break;
            }
        }
    }
    let vectors = source.vectors(&all, None)?;
    for chunk in vectors.chunks(BATCH) {
        dest.put_vectors(chunk)?;
    }
    for key in INDEX_STATE_KEYS {
        if let Some(value) = source.index_state(key)? {
            dest.set_index_state(key, &value)?;
        }
    }
    let (copied, skipped) = (copy.copied, copy.skipped);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }

    let copied_counts = dest.counts(&all)?;
    if copied_counts != counts {
        bail!(
            "the stores differ after the copy: {} holds {counts:?}, {} holds {copied_counts:?} \
             (a destination must start empty or hold an earlier copy of this source)",
            from.describe(),
            to.describe()
        );
    }
    let mut checksums = BTreeMap::new();
    for kind in KINDS {
        let (a, b) = (
            checksum(source.as_ref(), kind)?,
            checksum(dest.as_ref(), kind)?,
        );
        if a != b {
            bail!(
                "the {}s differ after the copy (checksum {a} against {b})",
                kind.name()
            );
        }
        checksums.insert(kind.name(), a);
    }
    let (a, b) = (vector_sum(source.as_ref())?, vector_sum(dest.as_ref())?);
    if a != b {
        bail!("the lesson vectors differ after the copy (checksum {a} against {b})");
    }
    checksums.insert("vector", a);
    let (a, b) = (
        layers::layer_sums(source.as_ref())?,
        layers::layer_sums(dest.as_ref())?,
    );
    if let Some((kind, _)) = a.iter().find(|(kind, sum)| b.get(*kind) != Some(*sum)) {
        bail!("the {}s differ after the copy", kind.replace('_', " "));
    }
    let mut layer_counts = BTreeMap::new();
    for (kind, (count, sum)) in a {
        layer_counts.insert(kind, count);
        checksums.insert(kind, sum);
    }
    let report = Report {
        from: from.describe(),
        to: to.describe(),
        copied,
        skipped,
        vectors: vectors.len(),
        counts,
        layers: layer_counts,
        checksums,
    };
    if json {
        return output::json(&report);
    }
    output::line(format!(
        "copied {} records and layer items ({} already there) and {} vectors from {} to {}; \
         verified: same counts and checksums",
        report.copied, report.skipped, report.vectors, report.from, report.to
    ))?;
    for (kind, sum) in &report.checksums {
        output::line(format!("  {kind:<12} {sum}"))?;
    }
    Ok(())
}

/// The record kinds, in the order they are copied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Executions,
    Corrections,
    Lessons,
    ErrorEvents,
    Memories(MemoryCategory),
    Episodes,
    Audit,
}

const KINDS: [Kind; 9] = [
    Kind::Executions,
    Kind::Corrections,
    Kind::Lessons,
    Kind::ErrorEvents,
    Kind::Memories(MemoryCategory::Core),
    Kind::Memories(MemoryCategory::Archival),
    Kind::Memories(MemoryCategory::Recall),
    Kind::Episodes,
    Kind::Audit,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Executions => "execution",
            Kind::Corrections => "correction",
            Kind::Lessons => "lesson",
            Kind::ErrorEvents => "error event",
            Kind::Memories(MemoryCategory::Core) => "core memory",
            Kind::Memories(MemoryCategory::Archival) => "archival memory",
            Kind::Memories(MemoryCategory::Recall) => "recall memory",
            Kind::Episodes => "episode",
            Kind::Audit => "audit entry",
        }
    }
}

/// A page of the records of `kind`, oldest first.
fn read(store: &dyn Store, kind: Kind, offset: usize, limit: Option<usize>) -> Result<Vec<Record>> {
    let filter = ListFilter {
        limit,
        offset,
        ..ListFilter::default()
    };
    Ok(match kind {
        Kind::Executions => store
            .executions(&filter)?
            .into_iter()
            .map(Record::Execution)
            .collect(),
        Kind::Corrections => store
            .corrections(&filter)?
            .into_iter()
            .map(Record::Correction)
            .collect(),
        Kind::Lessons => store
            .lessons(&filter)?
            .into_iter()
            .map(Record::Lesson)
            .collect(),
        Kind::ErrorEvents => store
            .error_events(&filter)?
            .into_iter()
            .map(Record::ErrorEvent)
            .collect(),
        Kind::Memories(category) => store
            .memories(&filter, category)?
            .into_iter()
            .map(Record::Memory)
            .collect(),
        Kind::Episodes => store
            .episodes(&EpisodeFilter {
                limit,
                offset,
                ..EpisodeFilter::default()
            })?
            .into_iter()
            .map(Record::Episode)
            .collect(),
        Kind::Audit if offset > 0 => Vec::new(),
        Kind::Audit => store.audit(None)?.into_iter().map(Record::Audit).collect(),
    })
}

/// Writes batches into the destination and counts what they did.
struct Copy<'a> {
    dest: &'a dyn Store,
    bar: Option<&'a ProgressBar>,
    copied: usize,
    skipped: usize,
}

impl Copy<'_> {
    /// Copies every layer item, with the source's audit entries for those that need one.
    fn layers(&mut self, source: &dyn Store) -> Result<()> {
        let items = layers::read_layers(source, &Scope::unrestricted())?;
        let audits = source.audit(None)?;
        let by = layers::Writer {
            actor: "lore migrate",
            at: chrono::Utc::now(),
            audits: &audits,
        };
        let report = layers::write_layers(self.dest, &items, &by)?;
        self.copied += report.written;
        self.skipped += report.skipped;
        Ok(())
    }

    fn write(&mut self, batch: &[Record]) -> Result<()> {
        let report = self.dest.write(batch, OnDuplicate::SkipIdentical)?;
        self.copied += report.written;
        self.skipped += report.skipped;
        if let Some(bar) = self.bar {
            bar.inc(batch.len() as u64);
        }
        Ok(())
    }
}

/// Refuses, before anything is written, a destination holding a record the source lacks (or
/// holds otherwise): it is not an earlier copy of this source, and copying into it would mix
/// two memories.
fn refuse_strangers(source: &dyn Store, dest: &dyn Store, to: &StoreLocation) -> Result<()> {
    if dest.counts(&Scope::unrestricted())? != StoreCounts::default() {
        for kind in KINDS {
            let theirs: std::collections::BTreeSet<String> =
                lines(source, kind)?.into_iter().collect();
            if let Some(stranger) = lines(dest, kind)?.iter().find(|l| !theirs.contains(*l)) {
                let id = stranger.split('\t').next().unwrap_or_default();
                bail!(
                    "{} holds records the source lacks (the {} {id}, at least): migrate into \
                     an empty store, or into an earlier copy of this source to continue it; \
                     nothing was written",
                    to.describe(),
                    kind.name()
                );
            }
        }
    }
    let ours = layer_lines(dest)?;
    if ours.is_empty() {
        // An empty destination, the usual case: the source's layers need not be read twice.
        return Ok(());
    }
    let theirs = layer_lines(source)?;
    if let Some(stranger) = ours.iter().find(|l| !theirs.contains(*l)) {
        bail!(
            "{} holds records the source lacks (an item of kind {}, at least): migrate into an \
             empty store, or into an earlier copy of this source to continue it; nothing was \
             written",
            to.describe(),
            stranger
                .split('\t')
                .next()
                .unwrap_or_default()
                .replace('_', " ")
        );
    }
    Ok(())
}

/// Every layer item as `KIND\tJSON`.
fn layer_lines(store: &dyn Store) -> Result<std::collections::BTreeSet<String>> {
    layers::read_layers(store, &Scope::unrestricted())?
        .iter()
        .map(|item: &LayerItem| Ok(format!("{}\t{}", item.kind(), serde_json::to_string(item)?)))
        .collect()
}

/// SHA-256 over every record of `kind` as `ID\tJSON\n`, in ID order (hex, first 16 bytes).
fn checksum(store: &dyn Store, kind: Kind) -> Result<String> {
    Ok(digest(lines(store, kind)?))
}

/// Every record of `kind` as `ID\tJSON\n`, in ID order.
fn lines(store: &dyn Store, kind: Kind) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for record in read(store, kind, 0, None)? {
        let json = match &record {
            Record::Execution(r) => serde_json::to_string(r),
            Record::Correction(r) => serde_json::to_string(r),
            Record::Lesson(r) => serde_json::to_string(r),
            Record::ErrorEvent(r) => serde_json::to_string(r),
            Record::Audit(r) => serde_json::to_string(r),
            Record::Memory(r) => serde_json::to_string(r),
            Record::Episode(r) => serde_json::to_string(r),
        }?;
        lines.push(format!("{}\t{json}\n", record.id()));
    }
    lines.sort_unstable();
    Ok(lines)
}

/// The checksum of every lesson vector: lesson, embedder, text hash and the floats' bits.
fn vector_sum(store: &dyn Store) -> Result<String> {
    let mut lines: Vec<String> = store
        .vectors(&Scope::unrestricted(), None)?
        .iter()
        .map(|v| {
            let bits: Vec<String> = v.vector.iter().map(|x| x.to_bits().to_string()).collect();
            format!(
                "{}\t{}\t{}\t{}\t{}\n",
                v.lesson,
                v.embedder.name,
                v.embedder.dim,
                v.source_hash,
                bits.join(",")
            )
        })
        .collect();
    lines.sort_unstable();
    Ok(digest(lines))
}

fn digest(lines: Vec<String>) -> String {
    let mut hash = Sha256::new();
    for line in lines {
        hash.update(line.as_bytes());
    }
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
