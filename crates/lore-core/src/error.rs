//! One error type for the core, shaped by what a caller does about it.
//!
//! Adapters map each variant once: the CLI to an exit code and message, the server (later) to an
//! HTTP status. `Store` errors keep their source opaque so that SQL details never leak upward.

use std::fmt;

/// The result type of every fallible core operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, by what the caller can do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is malformed or breaks a rule; nothing was written.
    #[error("invalid {what}: {why}")]
    Invalid {
        /// The field or argument at fault.
        what: String,
        /// A sentence a person can act on.
        why: String,
    },
    /// A record the caller named does not exist (or lies outside the caller's scope).
    #[error("{kind} not found: {id}")]
    NotFound {
        /// The kind of record (execution, lesson, …).
        kind: &'static str,
        /// The identifier that was asked for.
        id: String,
    },
    /// A write would overwrite different data under an existing identifier, or the record's
    /// current state refuses it (a lesson already archived, a move the lifecycle forbids).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The caller's scope does not allow this write.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The backend cannot do this (seed 002's typed "not supported").
    #[error("not supported by this backend: {0}")]
    Unsupported(String),
    /// The store file is not usable by this build (not a Lore database, or from a newer version).
    #[error("incompatible store: {0}")]
    Incompatible(String),
    /// Reading or writing a file beside the store (skills, guardrails) failed.
    #[error("{path}: {source}")]
    Io {
        /// The path being read or written.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A model call failed; see [`crate::ports::llm::LlmError`] for what to do about it.
    #[error(transparent)]
    Llm(#[from] crate::ports::llm::LlmError),
    /// The store has no room for the write: its disk, its file's size limit or its database's
    /// quota is exhausted. Nothing of the write was stored; it can be sent again once space is
    /// freed. The message names the cause and never a path.
    #[error("storage full: {0}")]
    StorageFull(String),
    /// The store failed for a reason the caller cannot fix by changing the request.
    // The message already holds the backend's text; were it also the error's source, a printed
    // chain of causes would say it twice ("store error: X: X").
    #[error("store error: {0}")]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// An [`Error::Invalid`] for `what`, with a reason.
    pub fn invalid(what: impl Into<String>, why: impl fmt::Display) -> Self {
        Self::Invalid {
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// An [`Error::NotFound`] for a record of `kind` with `id`.
    pub fn not_found(kind: &'static str, id: impl fmt::Display) -> Self {
        Self::NotFound {
            kind,
            id: id.to_string(),
        }
    }

    /// Wraps a backend error whose details stay opaque to callers.
    pub fn store(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Store(Box::new(source))
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
