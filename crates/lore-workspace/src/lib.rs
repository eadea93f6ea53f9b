//! Skills on disk: the files a team reviews and commits beside its code.
//!
//! A skill is a folder (`skills/{domain}/{skill}/`) holding `SKILL.md`, the `GUARDRAILS.md` that
//! corrections append to, and the regression cases written from corrections (`tests/`). This
//! crate is the only place Lore's Engine touches the project's files, so the core stays free of
//! the file system and the files' formats are documented in one place.

pub mod case_files;
pub mod cases;
pub mod front_matter;
pub mod learned;
pub mod skills;

pub use skills::SkillLibrary;
