//! Readable identifiers that do not collide.
//!
//! Seed 000 names executions `EXEC-{YYYYMMDDHHMMSS}`, so two executions recorded in the same second
//! share an ID. Lore keeps the readable prefix and timestamp and appends eight Crockford base32
//! characters of randomness (40 bits): `EXEC-20260220124341-7K3Q9M2B`. Stores also refuse a
//! duplicate ID, and the Engine draws again if that ever happens. The old forms (`EXEC-…`,
//! `CORR-003`, `REFL-003`) stay valid, so imported records keep their IDs.

use std::cell::RefCell;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const MAX_ID_LEN: usize = 128;

/// Checks the characters and length that every Lore identifier shares.
pub(crate) fn validate(kind: &str, raw: &str) -> Result<()> {
    if raw.is_empty() {
        return Err(Error::invalid(kind, "an ID cannot be empty"));
    }
    if raw.len() > MAX_ID_LEN {
        return Err(Error::invalid(
            kind,
            format!("an ID is at most {MAX_ID_LEN} characters"),
        ));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')))
    {
        return Err(Error::invalid(
            kind,
            format!("{raw:?} has the character {c:?}; IDs use letters, digits, '-', '_', '.', ':'"),
        ));
    }
    Ok(())
}

thread_local! {
    /// The generator of [`with_seeded_ids`], when one is in force on this thread.
    static SEEDED: RefCell<Option<rand::rngs::StdRng>> = const { RefCell::new(None) };
}

/// Runs `f` with every ID generated on this thread drawn from a generator seeded with `seed`.
///
/// A benchmark or a replay whose decisions hash lesson IDs (holdout, exploration, ties) gives
/// the same figures run after run only if those IDs repeat too. IDs drawn on other threads, and
/// after `f` returns, are random as usual; the previous generator is restored even on a panic.
pub fn with_seeded_ids<T>(seed: u64, f: impl FnOnce() -> T) -> T {
    use rand::SeedableRng;
    struct Restore(Option<rand::rngs::StdRng>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            SEEDED.with(|cell| *cell.borrow_mut() = previous);
        }
    }
    let previous = SEEDED.with(|cell| {
        cell.borrow_mut()
            .replace(rand::rngs::StdRng::seed_from_u64(seed))
    });
    let _restore = Restore(previous);
    f()
}

fn random_bits() -> u64 {
    use rand::Rng;
    SEEDED
        .with(|cell| cell.borrow_mut().as_mut().map(|rng| rng.random::<u64>()))
        .unwrap_or_else(rand::random::<u64>)
}

/// A uniform draw in `[0, 1)` from the same source as IDs: the operating system's generator,
/// or the seeded one of [`with_seeded_ids`], so a benchmark that draws (a recall holding lessons
/// out without a run key) replays as its IDs do.
pub fn random_unit() -> f64 {
    (random_bits() >> 11) as f64 / (1u64 << 53) as f64
}

/// A fresh identifier: prefix, UTC timestamp to the second, 40 random bits.
fn generate(prefix: &str, at: DateTime<Utc>) -> String {
    let mut bits: u64 = random_bits() & ((1 << 40) - 1);
    let mut suffix = [0u8; 8];
    for slot in suffix.iter_mut().rev() {
        *slot = CROCKFORD[(bits & 31) as usize];
        bits >>= 5;
    }
    let suffix = std::str::from_utf8(&suffix).expect("alphabet is ASCII");
    format!("{prefix}-{}-{suffix}", at.format("%Y%m%d%H%M%S"))
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The prefix of newly generated IDs of this kind.
            pub const PREFIX: &'static str = $prefix;

            /// Parses an ID, accepting Lore's form and the older seed forms.
            ///
            /// # Errors
            /// [`Error::Invalid`] when the ID is empty, too long or has a character outside
            /// letters, digits, `-`, `_`, `.` and `:`.
            pub fn parse(raw: &str) -> Result<Self> {
                validate($kind, raw)?;
                Ok(Self(raw.to_owned()))
            }

            /// A new, practically unique ID stamped with `at`.
            pub fn generate(at: DateTime<Utc>) -> Self {
                Self(generate($prefix, at))
            }

            /// The ID as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(raw: String) -> Result<Self> {
                validate($kind, &raw)?;
                Ok(Self(raw))
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(raw: &str) -> Result<Self> {
                Self::parse(raw)
            }
        }
    };
}

id_type!(
    /// Identifies one execution (`EXEC-…`).
    ExecutionId, "EXEC", "execution ID"
);
id_type!(
    /// Identifies one correction (`CORR-…`).
    CorrectionId, "CORR", "correction ID"
);
id_type!(
    /// Identifies one lesson (`REFL-…`, after seed 000's reflexions).
    LessonId, "REFL", "lesson ID"
);
id_type!(
    /// Identifies one error event (`ERR-…`).
    ErrorEventId, "ERR", "error event ID"
);
id_type!(
    /// Identifies one run that trains an embedder adapter (`TUNE-…`).
    TuneRunId, "TUNE", "tuning run ID"
);
id_type!(
    /// Identifies one trained adapter checkpoint (`CKPT-…`).
    CheckpointId, "CKPT", "checkpoint ID"
);
id_type!(
    /// Identifies one audit entry (`AUD-…`).
    AuditId, "AUD", "audit ID"
);
id_type!(
    /// Identifies one memory entry (`MEM-…`): a core block version, an archival passage or a
    /// conversation entry.
    MemoryId, "MEM", "memory ID"
);
id_type!(
    /// Identifies one episode (`EPI-…`, or the ID an imported episode brings, such as seed
    /// 001's `episode-2026-01-01-126`).
    EpisodeId, "EPI", "episode ID"
);
id_type!(
    /// Identifies one resolved human-in-the-loop decision (`DEC-…`).
    DecisionId, "DEC", "decision ID"
);
id_type!(
    /// Identifies one version of a skill's digest (`DIG-…`).
    DigestId, "DIG", "digest ID"
);
id_type!(
    /// Identifies one graded evaluation run (`EVAL-…`).
    EvalRunId, "EVAL", "evaluation run ID"
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_generated_in_one_second_do_not_collide() {
        let at = Utc::now();
        let ids: HashSet<_> = (0..10_000).map(|_| ExecutionId::generate(at)).collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn seeded_ids_repeat_per_seed_and_end_with_their_scope() {
        let at = Utc::now();
        let draw = || (0..50).map(|_| LessonId::generate(at)).collect::<Vec<_>>();
        let first = with_seeded_ids(7, draw);
        assert_eq!(first, with_seeded_ids(7, draw));
        assert_ne!(first, with_seeded_ids(8, draw));
        let nested = with_seeded_ids(7, || {
            let inner = with_seeded_ids(8, || LessonId::generate(at));
            (inner, LessonId::generate(at))
        });
        assert_eq!(nested.0, with_seeded_ids(8, || LessonId::generate(at)));
        assert_eq!(
            nested.1, first[0],
            "the outer generator resumes where it was"
        );
        assert!(
            !draw().contains(&first[0]),
            "outside a scope IDs are random again"
        );
    }

    #[test]
    fn generated_ids_keep_the_readable_prefix_and_timestamp() {
        let at = DateTime::parse_from_rfc3339("2026-02-20T12:43:41Z")
            .unwrap()
            .with_timezone(&Utc);
        let id = ExecutionId::generate(at);
        assert!(id.as_str().starts_with("EXEC-20260220124341-"), "{id}");
        assert_eq!(id.as_str().len(), "EXEC-20260220124341-".len() + 8);
        ExecutionId::parse(id.as_str()).unwrap();
    }

    #[test]
    fn seed_forms_are_accepted() {
        ExecutionId::parse("EXEC-20260220124341").unwrap();
        CorrectionId::parse("CORR-003").unwrap();
        LessonId::parse("REFL-003").unwrap();
    }

    #[test]
    fn malformed_ids_are_refused_with_the_reason() {
        for bad in ["", "EXEC 1", "../etc", "a/b", &"x".repeat(129)] {
            let err = ExecutionId::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("invalid execution ID"), "{bad:?}: {err}");
        }
    }
}
