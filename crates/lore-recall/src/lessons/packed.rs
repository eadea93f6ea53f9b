//! A lesson packed into one run of bytes, for the recall index to hold every lesson in about
//! the size of its texts.
//!
//! The index holds every retrievable lesson, and a [`Lesson`] costs about twice its texts: a
//! record of some 700 bytes (a `String` or `Vec` header for each field) and a heap allocation
//! per text. Recall reads most of a lesson only for the few candidates of a query, so the
//! index keeps each lesson packed ([`pack`]) and unpacks it ([`unpack`]) when a query needs
//! it. The ID and the skill are kept apart by the index (its hits and filters read them for
//! every candidate), so they are not packed.
//!
//! Strings are a length (LEB128) and their bytes; numbers little-endian; the rarely set nested
//! fields (links, per-stratum bounds, imported extras) as JSON when set. Every field is
//! written by destructuring its struct whole, so a field added to a lesson fails to compile
//! here instead of being dropped.

use chrono::{DateTime, Utc};
use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::model::{Lesson, LessonSource, LessonStatus, Tiers, UtilityStats};
use lore_core::scope::SkillPath;

const SOURCES: [LessonSource; 6] = [
    LessonSource::Correction,
    LessonSource::Manual,
    LessonSource::Import,
    LessonSource::ErrorEvents,
    LessonSource::Success,
    LessonSource::Llm,
];

/// `lesson` packed, without its ID and skill.
pub fn pack(lesson: &Lesson) -> Box<[u8]> {
    let Lesson {
        id: _,
        skill: _,
        agent,
        correction_id,
        execution_id,
        mistake,
        root_cause,
        rule,
        applies_when,
        triggers,
        tags,
        tiers,
        confidence,
        source,
        status,
        utility,
        links,
        validated_by_test,
        generated_test_ids,
        merged_from,
        created_at,
        updated_at,
        extra,
    } = lesson;
    let Tiers {
        summary,
        condition,
        action,
        rationale,
        steps,
    } = tiers;
    let UtilityStats {
        activations,
        helped,
        hurt,
        baseline_runs,
        utility,
        last_applied_at,
        bounds,
        overall_bounds,
        stratum_bounds,
    } = utility;
    let mut w = Writer(Vec::with_capacity(
        64 + mistake.len() + root_cause.len() + rule.len() + applies_when.len() + summary.len(),
    ));
    w.opt_str(agent.as_deref());
    w.opt_str(correction_id.as_ref().map(CorrectionId::as_str));
    w.opt_str(execution_id.as_ref().map(ExecutionId::as_str));
    for s in [mistake, root_cause, rule, applies_when] {
        w.str(s);
    }
    w.strs(triggers.iter().map(String::as_str), triggers.len());
    w.strs(tags.iter().map(String::as_str), tags.len());
    for s in [summary, condition, action, rationale] {
        w.str(s);
    }
    w.strs(steps.iter().map(String::as_str), steps.len());
    w.f64(*confidence);
    w.byte(
        SOURCES
            .iter()
            .position(|s| s == source)
            .expect("every source") as u8,
    );
    w.byte(
        LessonStatus::ALL
            .iter()
            .position(|s| s == status)
            .expect("every status") as u8,
    );
    for n in [activations, helped, hurt, baseline_runs] {
        w.len(*n);
    }
    w.opt_f64(*utility);
    w.opt_time(last_applied_at.as_ref());
    for pair in [bounds, overall_bounds] {
        match pair {
            Some([a, b]) => {
                w.byte(1);
                w.f64(*a);
                w.f64(*b);
            }
            None => w.byte(0),
        }
    }
    w.json(stratum_bounds.is_empty(), stratum_bounds);
    w.json(links.is_empty(), links);
    w.byte(u8::from(*validated_by_test));
    w.strs(
        generated_test_ids.iter().map(String::as_str),
        generated_test_ids.len(),
    );
    w.strs(
        merged_from.iter().map(CorrectionId::as_str),
        merged_from.len(),
    );
    w.time(created_at);
    w.time(updated_at);
    w.json(extra.is_empty(), extra);
    w.0.into_boxed_slice()
}

/// The lesson `bytes` packed, with its `id` and `skill`; `None` when they are not a packed
/// lesson (only bytes [`pack`] wrote are ever read, so that is a fault).
pub fn unpack(bytes: &[u8], id: &LessonId, skill: &SkillPath) -> Option<Lesson> {
    let mut r = Reader(bytes);
    let agent = r.opt_str()?.map(str::to_owned);
    let correction_id = r.opt_str()?.map(CorrectionId::parse).transpose().ok()?;
    let execution_id = r.opt_str()?.map(ExecutionId::parse).transpose().ok()?;
    let mistake = r.string()?;
    let root_cause = r.string()?;
    let rule = r.string()?;
    let applies_when = r.string()?;
    let triggers = r.strings()?;
    let tags = r.strings()?;
    let tiers = Tiers {
        summary: r.string()?,
        condition: r.string()?,
        action: r.string()?,
        rationale: r.string()?,
        steps: r.strings()?,
    };
    let confidence = r.f64()?;
    let source = *SOURCES.get(usize::from(r.byte()?))?;
    let status = *LessonStatus::ALL.get(usize::from(r.byte()?))?;
    let utility = UtilityStats {
        activations: r.len()?,
        helped: r.len()?,
        hurt: r.len()?,
        baseline_runs: r.len()?,
        utility: r.opt_f64()?,
        last_applied_at: r.opt_time()?,
        bounds: r.opt_pair()?,
        overall_bounds: r.opt_pair()?,
        stratum_bounds: r.json()?,
    };
    let links = r.json()?;
    let validated_by_test = r.byte()? != 0;
    let generated_test_ids = r.strings()?;
    let merged_from = r
        .strings()?
        .iter()
        .map(|s| CorrectionId::parse(s).ok())
        .collect::<Option<Vec<_>>>()?;
    let created_at = r.time()?;
    let updated_at = r.time()?;
    let extra = r.json()?;
    r.0.is_empty().then(|| Lesson {
        id: id.clone(),
        skill: skill.clone(),
        agent,
        correction_id,
        execution_id,
        mistake,
        root_cause,
        rule,
        applies_when,
        triggers,
        tags,
        tiers,
        confidence,
        source,
        status,
        utility,
        links,
        validated_by_test,
        generated_test_ids,
        merged_from,
        created_at,
        updated_at,
        extra,
    })
}

struct Writer(Vec<u8>);

impl Writer {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    /// LEB128: seven bits a byte, low first; a text's length is one byte below 128.
    fn len(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A missing string is length 0 with a flag: 0 absent, 1 present.
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.byte(1);
                self.str(s);
            }
            None => self.byte(0),
        }
    }

    fn strs<'a>(&mut self, items: impl Iterator<Item = &'a str>, n: usize) {
        self.len(n as u64);
        for s in items {
            self.str(s);
        }
    }

    fn f64(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_bits().to_le_bytes());
    }

    fn opt_f64(&mut self, x: Option<f64>) {
        match x {
            Some(x) => {
                self.byte(1);
                self.f64(x);
            }
            None => self.byte(0),
        }
    }

    fn time(&mut self, t: &DateTime<Utc>) {
        self.0.extend_from_slice(&t.timestamp().to_le_bytes());
        self.0
            .extend_from_slice(&t.timestamp_subsec_nanos().to_le_bytes());
    }

    fn opt_time(&mut self, t: Option<&DateTime<Utc>>) {
        match t {
            Some(t) => {
                self.byte(1);
                self.time(t);
            }
            None => self.byte(0),
        }
    }

    /// `value` as JSON, or nothing (length 0) when `empty`.
    fn json(&mut self, empty: bool, value: &impl serde::Serialize) {
        let json = if empty {
            Vec::new()
        } else {
            serde_json::to_vec(value).expect("a lesson's fields serialize")
        };
        self.len(json.len() as u64);
        self.0.extend_from_slice(&json);
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn len(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.len()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.str().map(Some),
            _ => None,
        }
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        let n = usize::try_from(self.len()?).ok()?;
        (0..n).map(|_| self.string()).collect()
    }

    fn f64(&mut self) -> Option<f64> {
        Some(f64::from_bits(u64::from_le_bytes(
            self.take(8)?.try_into().ok()?,
        )))
    }

    fn opt_f64(&mut self) -> Option<Option<f64>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.f64().map(Some),
            _ => None,
        }
    }

    fn opt_pair(&mut self) -> Option<Option<[f64; 2]>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some([self.f64()?, self.f64()?])),
            _ => None,
        }
    }

    fn time(&mut self) -> Option<DateTime<Utc>> {
        let secs = i64::from_le_bytes(self.take(8)?.try_into().ok()?);
        let nanos = u32::from_le_bytes(self.take(4)?.try_into().ok()?);
        DateTime::from_timestamp(secs, nanos)
    }

    fn opt_time(&mut self) -> Option<Option<DateTime<Utc>>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.time().map(Some),
            _ => None,
        }
    }

    /// What [`Writer::json`] wrote: the default when it wrote nothing.
    fn json<T: serde::de::DeserializeOwned + Default>(&mut self) -> Option<T> {
        let n = usize::try_from(self.len()?).ok()?;
        if n == 0 {
            return Some(T::default());
        }
        serde_json::from_slice(self.take(n)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lore_core::model::{LessonLink, LinkKind, StratumBounds};

    fn full() -> Lesson {
        let at = DateTime::from_timestamp(1_771_612_116, 123_456_789).unwrap();
        let mut extra = serde_json::Map::new();
        extra.insert("origin".into(), serde_json::Value::from("agentura"));
        extra.insert(
            "org".into(),
            serde_json::json!({"reach": "role", "n": [1, 2]}),
        );
        Lesson {
            id: LessonId::generate(at),
            skill: SkillPath::parse("hr/resume-screen").unwrap(),
            agent: Some("screener-1".into()),
            correction_id: Some(CorrectionId::parse("CORR-003").unwrap()),
            execution_id: Some(ExecutionId::parse("EXEC-20260220124341").unwrap()),
            mistake: "Scored too high.".into(),
            root_cause: "Mis-weighted criteria".into(),
            rule: "ALWAYS weigh system design separately. ".repeat(9),
            applies_when: "Senior backend roles — ≠ juniors.".into(),
            triggers: vec!["score too high".into(), String::new()],
            tags: vec!["scoring".into()],
            tiers: Tiers {
                summary: "Weigh system design separately".into(),
                condition: "senior roles".into(),
                action: "weigh separately".into(),
                rationale: "coding ≠ design".into(),
                steps: vec!["check design".into(), "cap score".into()],
            },
            confidence: 0.1 + 0.2,
            source: LessonSource::ErrorEvents,
            status: LessonStatus::Sensitive,
            utility: UtilityStats {
                activations: 300,
                helped: 1 << 40,
                hurt: 2,
                baseline_runs: 7,
                utility: Some(-0.25),
                last_applied_at: Some(at),
                bounds: Some([-0.5, f64::MIN_POSITIVE]),
                overall_bounds: None,
                stratum_bounds: vec![StratumBounds {
                    task_type: "triage".into(),
                    runs: 4,
                    baseline_runs: 3,
                    bounds: [0.1, 0.9],
                    overall_bounds: [0.2, 0.8],
                }],
            },
            links: vec![LessonLink {
                kind: LinkKind::Conflicts,
                target: LessonId::generate(at),
            }],
            validated_by_test: true,
            generated_test_ids: vec!["t-1".into()],
            merged_from: vec![CorrectionId::parse("CORR-004").unwrap()],
            created_at: at,
            updated_at: DateTime::from_timestamp(-5, 0).unwrap(),
            extra,
        }
    }

    /// Every field comes back as it was, set or left at its default, and bytes that are cut
    /// short or run long are refused rather than read as another lesson.
    #[test]
    fn a_lesson_unpacks_as_it_was_packed() {
        let lesson = full();
        let packed = pack(&lesson);
        assert_eq!(
            unpack(&packed, &lesson.id, &lesson.skill),
            Some(lesson.clone())
        );
        let bare: Lesson = serde_json::from_value(serde_json::json!({
            "id": lesson.id, "skill": "a/b", "mistake": "", "root_cause": "", "rule": "r",
            "applies_when": "", "tiers": {"summary": "", "condition": "", "action": "",
            "rationale": ""}, "confidence": 1.0, "source": "manual", "status": "approved",
            "created_at": "2026-03-01T12:00:00Z", "updated_at": "2026-03-01T12:00:00Z",
        }))
        .unwrap();
        assert_eq!(
            unpack(&pack(&bare), &bare.id, &bare.skill),
            Some(bare.clone())
        );
        for cut in 0..packed.len() {
            assert_eq!(
                unpack(&packed[..cut], &lesson.id, &lesson.skill),
                None,
                "{cut}"
            );
        }
        let mut long = packed.to_vec();
        long.push(0);
        assert_eq!(unpack(&long, &lesson.id, &lesson.skill), None);
        // Beyond its texts, a lesson packs into a few dozen bytes, against its record's
        // hundreds.
        let overhead = pack(&bare).len() - bare.rule.len();
        assert!(overhead < 80, "{overhead} bytes besides the texts");
        assert!(
            size_of::<Lesson>() > 4 * overhead,
            "{}",
            size_of::<Lesson>()
        );
    }
}
