//! Digests, evaluation sets and runs, kept as in SQLite: each record a JSON body with the
//! columns its reads filter and order by.
//!
//! Purging a lesson must reach every digest and graded answer that may quote it. SQLite finds
//! them by walking the JSON; here each row lists the IDs it quotes in an indexed array
//! (`source_ids`, `item_ids`), so a purge is one indexed lookup however many runs there are.

use lore_core::model::{Digest, EvalRun, EvalSet};
use lore_core::ports::knowledge::{DigestStore, EvalStore};
use lore_core::{Result, Scope, SkillPath};
use tracing::instrument;

use crate::knowledge::{narrowed, taken};
use crate::rows::{bodies, from_json, nanos, to_i64, to_json};
use crate::store::PostgresStore;

impl DigestStore for PostgresStore {
    #[instrument(skip_all, fields(digest = %digest.id))]
    fn put_digest(&self, digest: &Digest) -> Result<()> {
        lore_core::limits::digest(digest)?;
        let body = to_json(digest)?;
        let digest = digest.clone();
        let sources: Vec<String> = digest.sources.iter().map(|s| s.id.clone()).collect();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let stmt = client
                .prepare_cached(
                    "INSERT INTO digests (id, skill, domain, source_hash, ts, source_ids, body) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .await?;
            client
                .execute(
                    &stmt,
                    &[
                        &digest.id.as_str(),
                        &digest.skill.as_str(),
                        &digest.skill.domain(),
                        &digest.source_hash,
                        &nanos(digest.generated_at),
                        &sources,
                        &body,
                    ],
                )
                .await
                .map_err(|e| taken(e, "digest", digest.id.as_str()))?;
            Ok(())
        })
    }

    #[instrument(skip_all)]
    fn digests(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<Digest>> {
        let w = narrowed(scope, skill);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            // The newest version of each skill: the first row per skill in descending order.
            let sql = format!(
                "SELECT DISTINCT ON (t.skill) t.body FROM digests t{} \
                 ORDER BY t.skill, t.seq DESC",
                w.sql()
            );
            bodies(&client, &sql, &w.params()).await
        })
    }

    fn digest_history(
        &self,
        skill: &SkillPath,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Digest>> {
        let (skill, limit, offset) = (skill.as_str().to_owned(), to_i64(limit), to_i64(offset));
        self.run(move |pool| async move {
            let client = pool.get().await?;
            bodies(
                &client,
                "SELECT body FROM digests WHERE skill = $1 ORDER BY seq DESC LIMIT $2 OFFSET $3",
                &[&skill, &limit, &offset],
            )
            .await
        })
    }

    #[instrument(skip_all)]
    fn forget_digest_source(&self, source: &str) -> Result<usize> {
        let source = source.to_owned();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let n = client
                .execute(
                    "DELETE FROM digests WHERE source_ids @> ARRAY[$1::text]",
                    &[&source],
                )
                .await?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}

impl EvalStore for PostgresStore {
    #[instrument(skip_all)]
    fn put_eval_set(&self, set: &EvalSet) -> Result<()> {
        lore_core::limits::eval_set(set)?;
        let body = to_json(set)?;
        let set = set.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let stmt = client
                .prepare_cached(
                    "INSERT INTO eval_sets (skill, name, domain, updated_at, body) \
                     VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (skill, name) DO UPDATE SET updated_at = excluded.updated_at, \
                     body = excluded.body",
                )
                .await?;
            client
                .execute(
                    &stmt,
                    &[
                        &set.skill.as_str(),
                        &set.name,
                        &set.skill.domain(),
                        &nanos(set.updated_at),
                        &body,
                    ],
                )
                .await?;
            Ok(())
        })
    }

    #[instrument(skip_all)]
    fn eval_sets(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<EvalSet>> {
        let w = narrowed(scope, skill);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!(
                "SELECT t.body FROM eval_sets t{} ORDER BY t.skill, t.name",
                w.sql()
            );
            bodies(&client, &sql, &w.params()).await
        })
    }

    #[instrument(skip_all, fields(run = %run.id))]
    fn put_eval_run(&self, run: &EvalRun) -> Result<()> {
        lore_core::limits::eval_run(run)?;
        let body = to_json(run)?;
        let run = run.clone();
        let mut items: Vec<String> = run.grades.iter().flat_map(|g| g.items.clone()).collect();
        items.sort();
        items.dedup();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let stmt = client
                .prepare_cached(
                    "INSERT INTO eval_runs (id, skill, domain, name, ts, item_ids, body) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .await?;
            client
                .execute(
                    &stmt,
                    &[
                        &run.id.as_str(),
                        &run.skill.as_str(),
                        &run.skill.domain(),
                        &run.set,
                        &nanos(run.run_at),
                        &items,
                        &body,
                    ],
                )
                .await
                .map_err(|e| taken(e, "evaluation run", run.id.as_str()))?;
            Ok(())
        })
    }

    #[instrument(skip_all)]
    fn eval_runs(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
        set: Option<&str>,
    ) -> Result<Vec<EvalRun>> {
        let mut w = narrowed(scope, skill);
        if let Some(set) = set {
            w.push("t.name = $?", set.to_owned());
        }
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!("SELECT t.body FROM eval_runs t{} ORDER BY t.seq", w.sql());
            bodies(&client, &sql, &w.params()).await
        })
    }

    #[instrument(skip_all)]
    fn forget_eval_item(&self, id: &str, marker: &str) -> Result<usize> {
        let (id, marker) = (id.to_owned(), marker.to_owned());
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            let found = tx
                .query(
                    "SELECT seq, body FROM eval_runs WHERE item_ids @> ARRAY[$1::text] \
                     FOR UPDATE",
                    &[&id],
                )
                .await?;
            let mut changed = 0;
            for row in &found {
                let seq: i64 = row.get(0);
                let mut run: EvalRun = from_json(row.get::<_, &str>(1))?;
                for grade in run.grades.iter_mut().filter(|g| g.items.contains(&id)) {
                    grade.answer.clone_from(&marker);
                    changed += 1;
                }
                tx.execute(
                    "UPDATE eval_runs SET body = $1 WHERE seq = $2",
                    &[&to_json(&run)?, &seq],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(changed)
        })
    }
}
