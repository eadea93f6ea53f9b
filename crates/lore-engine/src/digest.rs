//! Digests (seed 004's wiki): each skill's approved lessons and decisions summarized as one
//! markdown page, kept with what it was made from, and recalled by topic.
//!
//! The offline digest is extractive: the sources' own sentences, most useful first (measured
//! utility, then confidence, then recency for lessons; newest first for decisions), so that a
//! digest cut tail-first loses its least useful lines. With a model configured, the model writes
//! the page from the same sources and only those; a failed call, an answer of the wrong shape or
//! one holding personal or secret data keeps the extractive page and records why.
//!
//! A digest is made again only when its sources changed: the hash over the sources' kinds, IDs
//! and revisions is stored with it, and upkeep compares. Every version is kept, so a digest's
//! history is the team's curated knowledge over time.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use tracing::instrument;

use crate::engine::Engine;
use crate::pages::{Page, PageRequest};
use lore_core::error::{Error, Result};
use lore_core::id::DigestId;
use lore_core::model::{
    DecisionRecord, Digest, DigestMethod, DigestSource, DigestSourceKind, Lesson, LessonStatus,
};
use lore_core::ports::llm::{LlmRequest, complete_json};
use lore_core::scope::SkillPath;
use lore_core::sensitive;
use lore_core::text::shorten;
use lore_recall::truncate_tail;

/// The most lessons one digest lists.
pub const MAX_DIGEST_LESSONS: usize = 60;
/// The most decisions one digest lists.
pub const MAX_DIGEST_DECISIONS: usize = 30;
/// How many digests the context's digest layer considers without a skill.
const LAYER_DIGESTS: usize = 3;

const DIGEST_SYSTEM: &str = "You are Lore's digest writer. Summarize a team's curated memory \
for one skill as a short markdown page: the rules that matter most first, then the decisions \
people made. Use only the lessons and decisions given; cite each point's ID in parentheses; \
do not add advice of your own. Answer as JSON: {\"markdown\": \"...\"}.";

/// What one build of digests did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DigestReport {
    /// The digests made (new versions).
    pub built: Vec<Digest>,
    /// The skills whose sources had not changed since their digest.
    pub unchanged: Vec<SkillPath>,
}

/// A skill's sources for its digest.
#[derive(Default)]
struct Sources {
    lessons: Vec<Lesson>,
    decisions: Vec<DecisionRecord>,
}

impl Sources {
    fn list(&self) -> Vec<DigestSource> {
        let mut out: Vec<DigestSource> = self
            .lessons
            .iter()
            .map(|l| DigestSource {
                kind: DigestSourceKind::Lesson,
                id: l.id.to_string(),
                revision: l.updated_at,
            })
            .chain(self.decisions.iter().map(|d| DigestSource {
                kind: DigestSourceKind::Decision,
                id: d.id.to_string(),
                revision: d.updated_at,
            }))
            .collect();
        out.sort();
        out
    }
}

/// SHA-256 over the sources' kinds, IDs and revisions, in their sorted order.
pub(crate) fn source_hash(sources: &[DigestSource]) -> String {
    let mut hasher = Sha256::new();
    for s in sources {
        let kind = match s.kind {
            DigestSourceKind::Lesson => "lesson",
            DigestSourceKind::Decision => "decision",
        };
        hasher.update(format!("{kind}\0{}\0{}\n", s.id, s.revision.to_rfc3339()));
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Engine {
    /// Makes the digest of each skill in scope (of `skill` only, when given) whose approved
    /// lessons or decisions changed since its last digest; `force` makes them all again.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside this handle's scope; [`Error::Unsupported`] from
    /// a store without digests; store failures.
    #[instrument(skip_all)]
    pub fn build_digests(&self, skill: Option<&SkillPath>, force: bool) -> Result<DigestReport> {
        if let Some(skill) = skill {
            self.scope.check_write(skill)?;
        }
        let store = self.store.digests()?;
        let existing: BTreeMap<SkillPath, Digest> = store
            .digests(&self.scope, skill)?
            .into_iter()
            .map(|d| (d.skill.clone(), d))
            .collect();
        let mut by_skill = self.digest_sources(skill)?;
        for skill in existing.keys() {
            by_skill.entry(skill.clone()).or_default();
        }
        let mut report = DigestReport::default();
        for (skill, sources) in by_skill {
            let list = sources.list();
            let hash = source_hash(&list);
            if !force && existing.get(&skill).is_some_and(|d| d.source_hash == hash) {
                report.unchanged.push(skill);
                continue;
            }
            let digest = self.make_digest(skill, &sources, list, hash);
            store.put_digest(&digest)?;
            report.built.push(digest);
        }
        Ok(report)
    }

    /// The newest digest of each skill in scope (of `skill` only, when given).
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside this handle's scope; [`Error::Unsupported`] from
    /// a store without digests; store failures.
    pub fn digests(&self, skill: Option<&SkillPath>) -> Result<Vec<Digest>> {
        if let Some(skill) = skill {
            self.scope.check_write(skill)?;
        }
        let digests = self.store.digests()?.digests(&self.scope, skill)?;
        self.readable(digests)
    }

    /// The digests this handle may read: one made from a lesson the handle cannot see (another
    /// member's own, made before digests were built for every member alike) is left out, since
    /// a digest carries the visibility of what it was made from.
    fn readable(&self, mut digests: Vec<Digest>) -> Result<Vec<Digest>> {
        if lore_core::org::sees_everything(&self.view()) {
            return Ok(digests);
        }
        let mut keep = Vec::with_capacity(digests.len());
        for d in digests.drain(..) {
            if self.sees_sources(&d.sources)? {
                keep.push(d);
            }
        }
        Ok(keep)
    }

    /// Whether this handle sees every lesson among `sources` (a purged one counts as unseen).
    pub(crate) fn sees_sources(&self, sources: &[DigestSource]) -> Result<bool> {
        for source in sources
            .iter()
            .filter(|s| s.kind == DigestSourceKind::Lesson)
        {
            let Ok(id) = lore_core::id::LessonId::parse(&source.id) else {
                return Ok(false);
            };
            if !self.store.lesson(&id)?.is_some_and(|l| self.sees(&l)) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One page of a skill's digest versions, newest first.
    ///
    /// # Errors
    /// As [`Engine::digests`]; [`Error::Invalid`] for a limit outside 1 to 500.
    pub fn digest_history(&self, skill: &SkillPath, page: PageRequest) -> Result<Page<Digest>> {
        self.scope.check_write(skill)?;
        let page = page.check()?;
        let history = (self.store.digests()?).digest_history(skill, page.limit + 1, page.offset)?;
        // A version drawing on a lesson this handle cannot see leaves the page short.
        Ok(page.cut(self.readable(history)?))
    }

    /// The digests for a task, quoted under their provenance and cut tail-first to `budget`:
    /// the skill's own digest when a skill is named, else the (at most three) digests sharing
    /// most words with the task. Returns the text, the digests' IDs and whether it was cut.
    pub(crate) fn digest_layer(
        &self,
        text: &str,
        skill: Option<&SkillPath>,
        budget: usize,
    ) -> Result<(String, Vec<String>, bool)> {
        let mut digests = self.readable(self.store.digests()?.digests(&self.scope, skill)?)?;
        digests.retain(|d| !d.sources.is_empty());
        if skill.is_none() {
            let words = words(text);
            let mut scored: Vec<(usize, Digest)> = digests
                .into_iter()
                .map(|d| (words.intersection(&words_of(&d)).count(), d))
                .filter(|(n, _)| *n > 0)
                .collect();
            scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.skill.cmp(&b.1.skill)));
            digests = scored
                .into_iter()
                .take(LAYER_DIGESTS)
                .map(|(_, d)| d)
                .collect();
        }
        let rendered = digests.iter().map(render).collect::<Vec<_>>().join("\n\n");
        let (cut_text, cut) = truncate_tail(&rendered, budget, self.tokenizer());
        let ids = digests
            .iter()
            .map(|d| d.id.to_string())
            .filter(|id| cut_text.contains(&format!("**{id}**")))
            .collect();
        Ok((cut_text, ids, cut))
    }

    /// The approved lessons and decisions of each skill in scope, without any holding personal
    /// or secret data, and only lessons every member sees: a digest is one page for all of
    /// them, whoever builds it.
    fn digest_sources(&self, skill: Option<&SkillPath>) -> Result<BTreeMap<SkillPath, Sources>> {
        let mut by_skill: BTreeMap<SkillPath, Sources> = BTreeMap::new();
        let everyone = self.scoped(lore_core::org::every_member(&self.scope));
        for lesson in everyone.lessons(skill, Some([LessonStatus::Approved].into()))? {
            if sensitive::scan_lesson(&lesson).is_empty() {
                by_skill
                    .entry(lesson.skill.clone())
                    .or_default()
                    .lessons
                    .push(lesson);
            }
        }
        let decisions = match self.store.decisions() {
            Ok(store) => store.decisions(&self.scope, skill)?,
            Err(Error::Unsupported(_)) => Vec::new(),
            Err(err) => return Err(err),
        };
        for d in decisions {
            let text = [&d.situation, &d.action, &d.rationale]
                .into_iter()
                .chain(d.outcome.as_ref());
            if d.status == LessonStatus::Approved
                && text.into_iter().all(|t| sensitive::kinds(t).is_empty())
            {
                by_skill
                    .entry(d.skill.clone())
                    .or_default()
                    .decisions
                    .push(d);
            }
        }
        for sources in by_skill.values_mut() {
            sources.lessons.sort_by(|a, b| {
                let utility = |l: &Lesson| l.utility.utility.unwrap_or(0.0);
                utility(b)
                    .total_cmp(&utility(a))
                    .then(b.confidence.total_cmp(&a.confidence))
                    .then(b.updated_at.cmp(&a.updated_at))
                    .then(a.id.cmp(&b.id))
            });
            sources.lessons.truncate(MAX_DIGEST_LESSONS);
            sources
                .decisions
                .sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
            sources.decisions.truncate(MAX_DIGEST_DECISIONS);
        }
        Ok(by_skill)
    }

    fn make_digest(
        &self,
        skill: SkillPath,
        sources: &Sources,
        list: Vec<DigestSource>,
        hash: String,
    ) -> Digest {
        let now = self.now();
        let extractive = extractive(&skill, sources, now);
        let (markdown, method, model_error) = match &self.proposer {
            Some(llm) if !list.is_empty() => match summarize(llm.as_ref(), &skill, &extractive) {
                Ok(text) => (
                    text,
                    DigestMethod::Model {
                        model: format!("{}/{}", llm.provider(), llm.model()),
                    },
                    None,
                ),
                Err(why) => (extractive, DigestMethod::Extractive, Some(why)),
            },
            _ => (extractive, DigestMethod::Extractive, None),
        };
        Digest {
            id: DigestId::generate(now),
            skill,
            markdown,
            sources: list,
            source_hash: hash,
            method,
            model_error,
            generated_by: self.actor(None),
            generated_at: now,
        }
    }
}

/// The extractive page: the lessons' rules and the decisions, most useful first.
fn extractive(skill: &SkillPath, sources: &Sources, now: chrono::DateTime<chrono::Utc>) -> String {
    let mut out = vec![
        format!("# {skill}"),
        String::new(),
        format!(
            "Digest of {} approved lessons and {} approved decisions, {}.",
            sources.lessons.len(),
            sources.decisions.len(),
            now.format("%Y-%m-%d")
        ),
    ];
    if sources.lessons.is_empty() && sources.decisions.is_empty() {
        out.push(String::new());
        out.push("Nothing is approved for this skill any more.".to_owned());
    }
    if !sources.lessons.is_empty() {
        out.push(String::new());
        out.push("## Rules".to_owned());
        for l in &sources.lessons {
            let mut line = format!("- {}", shorten(&l.rule, 300));
            if !l.applies_when.trim().is_empty() {
                line.push_str(&format!(" (when: {})", shorten(&l.applies_when, 160)));
            }
            line.push_str(&format!(" [{}]", l.id));
            out.push(line);
        }
    }
    if !sources.decisions.is_empty() {
        out.push(String::new());
        out.push("## Decisions".to_owned());
        for d in &sources.decisions {
            out.push(format!(
                "- {}: {}. Why: {} [{}]",
                shorten(&d.situation, 160),
                shorten(&d.action, 160),
                shorten(&d.rationale, 200),
                d.id
            ));
        }
    }
    out.join("\n")
}

/// The model's page from the extractive one (which holds every source, with its ID).
fn summarize(
    llm: &dyn lore_core::ports::llm::Llm,
    skill: &SkillPath,
    extractive: &str,
) -> std::result::Result<String, String> {
    let request = LlmRequest::new(
        DIGEST_SYSTEM,
        format!("Skill: {skill}\n\nCurated memory (markdown):\n{extractive}"),
    )
    .with_schema(json!({
        "type": "object",
        "required": ["markdown"],
        "properties": { "markdown": { "type": "string", "minLength": 1 } }
    }));
    let answer = complete_json(llm, &request).map_err(|e| e.to_string())?;
    let text = answer
        .json
        .as_ref()
        .and_then(|v| v["markdown"].as_str())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or("the answer held no markdown")?;
    if !sensitive::kinds(text).is_empty() {
        return Err("the answer held personal or secret data".to_owned());
    }
    lore_core::limits::text("markdown", text).map_err(|e| e.to_string())?;
    Ok(text.to_owned())
}

/// A digest as the context quotes it: a provenance line, then its page quoted, with any
/// sensitive text a stored page might hold redacted.
pub fn render(d: &Digest) -> String {
    let lessons = d
        .sources
        .iter()
        .filter(|s| s.kind == DigestSourceKind::Lesson)
        .count();
    let method = match &d.method {
        DigestMethod::Extractive => "extractive".to_owned(),
        DigestMethod::Model { model } => format!("summarized by {model}"),
    };
    let head = format!(
        "- **{}** ({}; digest of {} lessons and {} decisions, made {}, {})",
        d.id,
        d.skill,
        lessons,
        d.sources.len() - lessons,
        d.generated_at.format("%Y-%m-%d"),
        method
    );
    let body = lore_core::quote::lines(&sensitive::redact(&d.markdown))
        .map(|l| format!("> {l}").trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    format!("{head}\n{body}")
}

/// Words every page holds, which would make any task look related to every digest.
const COMMON: [&str; 24] = [
    "the", "and", "for", "with", "when", "what", "that", "this", "from", "into", "are", "was",
    "not", "before", "after", "how", "who", "why", "you", "your", "our", "all", "any", "can",
];

/// The lowercase words of three letters or more, common ones aside.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !COMMON.contains(&w.as_str()))
        .collect()
}

fn words_of(d: &Digest) -> BTreeSet<String> {
    let mut all = words(&d.markdown);
    all.extend(words(&d.skill.as_str().replace('/', " ")));
    all
}
