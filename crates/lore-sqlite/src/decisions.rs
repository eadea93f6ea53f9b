//! Resolved decisions in SQLite: the record as a JSON body with its skill, status and
//! `updated_at` as columns, written with its audit entry in one transaction.

use chrono::{DateTime, Utc};
use lore_core::id::DecisionId;
use lore_core::model::{AuditEntry, DecisionRecord};
use lore_core::ports::knowledge::DecisionStore;
use lore_core::{Error, Result, Scope, SkillPath};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::Db;
use crate::filter::Where;
use crate::rows::{self, Row};
use crate::store::SqliteStore;

impl DecisionStore for SqliteStore {
    fn put_decision(&self, decision: &DecisionRecord, audit: &AuditEntry) -> Result<()> {
        lore_core::limits::decision(decision)?;
        lore_core::limits::audit(audit)?;
        let body = rows::to_json(decision)?;
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| {
            tx.prepare_cached(
                "INSERT INTO decisions (id, skill, domain, status, updated_at, body) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    decision.id.as_str(),
                    decision.skill.as_str(),
                    decision.skill.domain(),
                    decision.status.as_str(),
                    rows::timestamp(decision.updated_at),
                    body
                ])
            })
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    Error::Conflict(format!("decision {} already exists", decision.id))
                }
                other => crate::db_error(other),
            })?;
            rows::insert(tx, &audit)?;
            bump(tx)
        })
    }

    fn update_decisions(
        &self,
        updates: &[(DecisionRecord, DateTime<Utc>, AuditEntry)],
    ) -> Result<()> {
        updates.iter().try_for_each(|(d, _, audit)| {
            lore_core::limits::decision(d)?;
            lore_core::limits::audit(audit)
        })?;
        let prepared = updates
            .iter()
            .map(|(d, expected, audit)| Ok((d, *expected, rows::to_json(d)?, Row::audit(audit)?)))
            .collect::<Result<Vec<_>>>()?;
        self.in_transaction(|tx| {
            for (decision, expected, body, audit) in &prepared {
                let stored = read(tx, &decision.id)?
                    .ok_or_else(|| Error::not_found("decision", &decision.id))?;
                if stored.updated_at != *expected {
                    return Err(Error::Conflict(format!(
                        "decision {} changed since it was read",
                        decision.id
                    )));
                }
                tx.prepare_cached(
                    "UPDATE decisions SET status = ?, updated_at = ?, body = ? WHERE id = ?",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        decision.status.as_str(),
                        rows::timestamp(decision.updated_at),
                        body,
                        decision.id.as_str()
                    ])
                })
                .db()?;
                rows::insert(tx, audit)?;
            }
            bump(tx)
        })
    }

    fn decision(&self, id: &DecisionId) -> Result<Option<DecisionRecord>> {
        read(&self.conn(), id)
    }

    fn decisions(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<DecisionRecord>> {
        let mut w = Where::scope(scope);
        if let Some(skill) = skill {
            w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
        }
        let sql = format!("SELECT t.body FROM decisions t{} ORDER BY t.seq", w.sql());
        let bodies: Vec<String> = self
            .conn()
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_map(params_from_iter(w.params().iter().cloned()), |r| r.get(0))?
                    .collect()
            })
            .db()?;
        bodies.iter().map(|b| rows::from_json(b)).collect()
    }

    fn decision_revision(&self) -> Result<u64> {
        let revision: i64 = self
            .conn()
            .prepare_cached("SELECT revision FROM decision_revision WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db()?;
        Ok(u64::try_from(revision).unwrap_or(0))
    }
}

fn read(conn: &Connection, id: &DecisionId) -> Result<Option<DecisionRecord>> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM decisions WHERE id = ?")
        .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
        .db()?;
    body.map(|b| rows::from_json(&b)).transpose()
}

fn bump(tx: &Connection) -> Result<()> {
    tx.execute(
        "UPDATE decision_revision SET revision = revision + 1 WHERE id = 1",
        [],
    )
    .db()?;
    Ok(())
}
