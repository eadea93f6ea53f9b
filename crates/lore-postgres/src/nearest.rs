//! pgvector's own HNSW index, as a cold path beside each server's in-memory index.
//!
//! The vector column has no fixed dimension (one table holds every embedder's vectors), and
//! pgvector indexes only a typed column, so each embedder gets an expression index over its
//! rows alone: `vector::vector(DIM)`, partial on the embedder's name and dimension. A query
//! names the same expression and predicate as literals, which is what lets the planner use it.

use lore_core::id::LessonId;
use lore_core::ports::embed::EmbedderId;
use lore_core::{Error, Result};

use crate::connect::Fail;

/// The search beam of an index query: pgvector's default of 40 finds too little of the exact
/// top 10 on real text.
pub(crate) const EF_SEARCH: u32 = 100;

/// The index name for `embedder`: its dimension and a hash of its name, within PostgreSQL's
/// 63 characters whatever the name.
fn index_name(embedder: &EmbedderId) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in embedder.name.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("lesson_vectors_hnsw_{}_{hash:016x}", embedder.dim)
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The predicate and the indexed expression for `embedder`, as the index and queries name them.
fn predicate(embedder: &EmbedderId) -> (String, String) {
    (
        format!(
            "embedder = {} AND dim = {}",
            literal(&embedder.name),
            embedder.dim
        ),
        format!("(vector::vector({}))", embedder.dim),
    )
}

fn checked(embedder: &EmbedderId) -> Result<()> {
    if embedder.dim == 0 || embedder.dim > 2000 {
        return Err(Error::invalid(
            "embedder",
            format!(
                "{embedder}: pgvector indexes vectors of 1 to 2000 dimensions, not {}",
                embedder.dim
            ),
        ));
    }
    Ok(())
}

pub(crate) async fn prepare(
    client: &deadpool_postgres::Client,
    embedder: &EmbedderId,
) -> Result<(), Fail> {
    checked(embedder)?;
    let (filter, expression) = predicate(embedder);
    client
        .batch_execute(&format!(
            "CREATE INDEX IF NOT EXISTS {} ON lesson_vectors USING hnsw ({expression} \
             vector_cosine_ops) WHERE {filter}",
            index_name(embedder)
        ))
        .await?;
    Ok(())
}

pub(crate) async fn nearest(
    client: &mut deadpool_postgres::Client,
    embedder: &EmbedderId,
    query: Vec<f32>,
    k: usize,
    exact: bool,
) -> Result<Vec<LessonId>, Fail> {
    checked(embedder)?;
    if query.len() != embedder.dim {
        return Err(Fail::Lore(Error::invalid(
            "query",
            format!(
                "a vector of {} dimensions for {embedder}, which makes {}",
                query.len(),
                embedder.dim
            ),
        )));
    }
    let (filter, expression) = predicate(embedder);
    let tx = client.transaction().await?;
    if exact {
        tx.batch_execute("SET LOCAL enable_indexscan = off").await?;
    } else {
        tx.batch_execute(&format!("SET LOCAL hnsw.ef_search = {EF_SEARCH}"))
            .await?;
    }
    let limit = i64::try_from(k).unwrap_or(i64::MAX);
    let rows = tx
        .query(
            &format!(
                "SELECT lesson_id FROM lesson_vectors WHERE {filter} \
                 ORDER BY {expression} <=> $1::vector({}) LIMIT $2",
                embedder.dim
            ),
            &[&pgvector::Vector::from(query), &limit],
        )
        .await?;
    tx.commit().await?;
    rows.iter()
        .map(|r| LessonId::parse(r.get::<_, &str>(0)).map_err(Fail::Lore))
        .collect()
}
