//! Digests and evaluation runs in SQLite: each record a JSON body, with the columns its reads
//! filter and order by.

use lore_core::model::{Digest, EvalRun, EvalSet};
use lore_core::ports::knowledge::{DigestStore, EvalStore};
use lore_core::{Error, Result, Scope, SkillPath};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter};

use crate::Db;
use crate::filter::Where;
use crate::rows;
use crate::store::SqliteStore;

impl DigestStore for SqliteStore {
    fn put_digest(&self, digest: &Digest) -> Result<()> {
        lore_core::limits::digest(digest)?;
        let body = rows::to_json(digest)?;
        self.in_transaction(|tx| {
            tx.prepare_cached(
                "INSERT INTO digests (id, skill, domain, source_hash, generated_at, body) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    digest.id.as_str(),
                    digest.skill.as_str(),
                    digest.skill.domain(),
                    digest.source_hash,
                    rows::timestamp(digest.generated_at),
                    body
                ])
            })
            .map_err(|e| taken(e, "digest", digest.id.as_str()))?;
            Ok(())
        })
    }

    fn digests(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<Digest>> {
        let mut w = Where::scope(scope);
        if let Some(skill) = skill {
            w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
        }
        w.push(
            "t.seq = (SELECT MAX(n.seq) FROM digests n WHERE n.skill = t.skill)",
            [],
        );
        let sql = format!("SELECT t.body FROM digests t{} ORDER BY t.skill", w.sql());
        bodies(self, &sql, w.params())
    }

    fn digest_history(
        &self,
        skill: &SkillPath,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Digest>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let found: Vec<String> = self
            .conn()
            .prepare_cached(
                "SELECT body FROM digests WHERE skill = ? ORDER BY seq DESC LIMIT ? OFFSET ?",
            )
            .and_then(|mut s| {
                s.query_map(params![skill.as_str(), limit, offset], |r| r.get(0))?
                    .collect()
            })
            .db()?;
        found.iter().map(|b| rows::from_json(b)).collect()
    }

    fn forget_digest_source(&self, source: &str) -> Result<usize> {
        self.in_transaction(|tx| {
            tx.execute(
                "DELETE FROM digests WHERE EXISTS (SELECT 1 FROM json_each(digests.body, \
                 '$.sources') s WHERE json_extract(s.value, '$.id') = ?)",
                [source],
            )
            .db()
        })
    }
}

impl EvalStore for SqliteStore {
    fn put_eval_set(&self, set: &EvalSet) -> Result<()> {
        lore_core::limits::eval_set(set)?;
        let body = rows::to_json(set)?;
        self.in_transaction(|tx| {
            tx.prepare_cached(
                "INSERT INTO eval_sets (skill, name, domain, updated_at, body) \
                 VALUES (?, ?, ?, ?, ?) \
                 ON CONFLICT (skill, name) DO UPDATE SET updated_at = excluded.updated_at, \
                 body = excluded.body",
            )
            .and_then(|mut s| {
                s.execute(params![
                    set.skill.as_str(),
                    set.name,
                    set.skill.domain(),
                    rows::timestamp(set.updated_at),
                    body
                ])
            })
            .db()?;
            Ok(())
        })
    }

    fn eval_sets(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<EvalSet>> {
        let mut w = Where::scope(scope);
        if let Some(skill) = skill {
            w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
        }
        let sql = format!(
            "SELECT t.body FROM eval_sets t{} ORDER BY t.skill, t.name",
            w.sql()
        );
        bodies(self, &sql, w.params())
    }

    fn put_eval_run(&self, run: &EvalRun) -> Result<()> {
        lore_core::limits::eval_run(run)?;
        let body = rows::to_json(run)?;
        self.in_transaction(|tx| {
            tx.prepare_cached(
                "INSERT INTO eval_runs (id, skill, domain, name, run_at, body) \
                 VALUES (?, ?, ?, ?, ?, ?)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run.id.as_str(),
                    run.skill.as_str(),
                    run.skill.domain(),
                    run.set,
                    rows::timestamp(run.run_at),
                    body
                ])
            })
            .map_err(|e| taken(e, "evaluation run", run.id.as_str()))?;
            Ok(())
        })
    }

    fn eval_runs(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
        set: Option<&str>,
    ) -> Result<Vec<EvalRun>> {
        let mut w = Where::scope(scope);
        if let Some(skill) = skill {
            w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
        }
        if let Some(set) = set {
            w.push("t.name = ?", [Value::Text(set.to_owned())]);
        }
        let sql = format!("SELECT t.body FROM eval_runs t{} ORDER BY t.seq", w.sql());
        bodies(self, &sql, w.params())
    }

    fn forget_eval_item(&self, id: &str, marker: &str) -> Result<usize> {
        self.in_transaction(|tx| {
            let found: Vec<(i64, String)> = tx
                .prepare(
                    "SELECT r.seq, r.body FROM eval_runs r WHERE EXISTS (SELECT 1 FROM \
                     json_each(r.body, '$.grades') g, json_each(g.value, '$.items') i \
                     WHERE i.value = ?)",
                )
                .and_then(|mut s| s.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
                .db()?;
            let mut changed = 0;
            for (seq, body) in found {
                let mut run: EvalRun = rows::from_json(&body)?;
                for grade in run
                    .grades
                    .iter_mut()
                    .filter(|g| g.items.iter().any(|i| i == id))
                {
                    grade.answer = marker.to_owned();
                    changed += 1;
                }
                tx.execute(
                    "UPDATE eval_runs SET body = ? WHERE seq = ?",
                    params![rows::to_json(&run)?, seq],
                )
                .db()?;
            }
            Ok(changed)
        })
    }
}

fn bodies<T: serde::de::DeserializeOwned>(
    store: &SqliteStore,
    sql: &str,
    params: &[Value],
) -> Result<Vec<T>> {
    let found: Vec<String> = store
        .conn()
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(params.iter().cloned()), |r| r.get(0))?
                .collect()
        })
        .db()?;
    found.iter().map(|b| rows::from_json(b)).collect()
}

fn taken(e: rusqlite::Error, what: &str, id: &str) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Error::Conflict(format!("{what} {id} already exists"))
        }
        other => crate::db_error(other),
    }
}
