//! An adapter on top of the base embedder: a square matrix `W`, trained on the CPU from the
//! pairs Lore's feedback already holds (a query and the lesson that helped it; a query and the
//! lesson that was suppressed), and applied to every vector, query and lesson alike.
//!
//! Why a linear map: it needs no dependency, trains in seconds on a few hundred pairs, starts
//! as the identity (so an untrained adapter *is* the base embedder) and is pulled back towards
//! it at every step, so it only moves where the feedback says something. The loss is a margin
//! loss on cosine similarity: a helpful lesson must score `margin` above a negative (a
//! suppressed lesson of the same query, or a lesson drawn from the same group). Training is
//! deterministic for a seed.
//!
//! An adapter is judged on held-out queries only (split by query text, so no query is both
//! trained and tested on): the helpful lesson's rank among the group's lessons, by the base
//! and by the adapter. [`Evaluation::better`] says whether it may become active.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lore_core::error::{Error, Result};
use lore_core::ports::embed::{Embedder, EmbedderId, normalize};
use lore_core::ports::tuning::{Evaluation, HeldOutBy, RankFigures, TunePlan};

/// Fewest held-out helpful pairs on which an adapter can be judged better.
pub const MIN_HELD_OUT: usize = 5;

/// A trained adapter: its checkpoint's name, the fitted base it applies to, and `W`.
#[derive(Clone, Debug, PartialEq)]
pub struct Adapter {
    /// The checkpoint's ID, part of the adapted embedder's identity.
    pub checkpoint: String,
    /// The fitted base embedder it was trained on.
    pub base: EmbedderId,
    /// `base.dim × base.dim`, row-major.
    pub weights: Vec<f32>,
}

impl Adapter {
    /// The identity map over `base`: applying it changes nothing.
    pub fn identity(checkpoint: impl Into<String>, base: EmbedderId) -> Self {
        let dim = base.dim;
        let mut weights = vec![0.0; dim * dim];
        (0..dim).for_each(|i| weights[i * dim + i] = 1.0);
        Self {
            checkpoint: checkpoint.into(),
            base,
            weights,
        }
    }

    /// Checks that `weights` is the square of the base's dimension.
    ///
    /// # Errors
    /// [`Error::Incompatible`] naming both sizes.
    pub fn new(checkpoint: impl Into<String>, base: EmbedderId, weights: Vec<f32>) -> Result<Self> {
        if weights.len() != base.dim * base.dim {
            return Err(Error::Incompatible(format!(
                "an adapter for {base} needs {} weights, this one has {}",
                base.dim * base.dim,
                weights.len()
            )));
        }
        Ok(Self {
            checkpoint: checkpoint.into(),
            base,
            weights,
        })
    }

    /// `W v`, unnormalized; zeros of `v` are skipped, since the builtin embedder's vectors are
    /// mostly zeros.
    fn map(&self, v: &[f32]) -> Vec<f32> {
        let dim = self.base.dim;
        let mut out = vec![0.0f32; dim];
        for (j, &x) in v.iter().enumerate() {
            if x == 0.0 {
                continue;
            }
            for (i, o) in out.iter_mut().enumerate() {
                *o += self.weights[i * dim + j] * x;
            }
        }
        out
    }

    /// `W v` scaled to unit length.
    pub fn apply(&self, v: &[f32]) -> Vec<f32> {
        let mut out = self.map(v);
        normalize(&mut out);
        out
    }

    /// The identity of the base with this adapter on top.
    pub fn id(&self) -> EmbedderId {
        EmbedderId {
            name: format!("{}+adapter:{}", self.base.name, self.checkpoint),
            dim: self.base.dim,
        }
    }
}

/// The base embedder (as fitted) with an adapter on top: what recall embeds with while a
/// checkpoint is active.
pub struct AdaptedEmbedder {
    base: Arc<dyn Embedder>,
    adapter: Arc<Adapter>,
}

impl AdaptedEmbedder {
    /// `adapter` over `base`.
    ///
    /// # Errors
    /// [`Error::Incompatible`] when the adapter was trained on another embedder or fit.
    pub fn new(base: Arc<dyn Embedder>, adapter: Arc<Adapter>) -> Result<Self> {
        if base.id() != adapter.base {
            return Err(Error::Incompatible(format!(
                "checkpoint {} was trained on {}, but the lessons are embedded with {}; train \
                 again or roll back to the base embedder",
                adapter.checkpoint,
                adapter.base,
                base.id()
            )));
        }
        Ok(Self { base, adapter })
    }

    /// The adapter applied.
    pub fn adapter(&self) -> &Adapter {
        &self.adapter
    }
}

impl Embedder for AdaptedEmbedder {
    fn id(&self) -> EmbedderId {
        self.adapter.id()
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.adapter.apply(&self.base.embed(text)?))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(self
            .base
            .embed_batch(texts)?
            .iter()
            .map(|v| self.adapter.apply(v))
            .collect())
    }

    fn semantic(&self) -> bool {
        self.base.semantic()
    }
}

/// One query with its feedback: the lessons that helped it and those that were suppressed.
#[derive(Clone, Debug)]
pub struct Query {
    /// The text, which decides the held-out split by query.
    pub text: String,
    /// Its task type, which decides the held-out split by task type (the text when the
    /// feedback names none).
    pub kind: String,
    /// Its base vector.
    pub vector: Vec<f32>,
    /// The group (a skill) whose lessons are its candidates.
    pub group: u32,
    /// Lessons (indices into [`TrainingSet::lessons`]) that helped it.
    pub helpful: Vec<usize>,
    /// Lessons that were suppressed after being shown for it.
    pub suppressed: Vec<usize>,
}

/// What an adapter learns from: base vectors of lessons and of queries with feedback.
#[derive(Clone, Debug, Default)]
pub struct TrainingSet {
    /// The fitted base embedder all vectors come from.
    pub base: Option<EmbedderId>,
    /// Each lesson's base vector and group.
    pub lessons: Vec<(Vec<f32>, u32)>,
    /// The queries.
    pub queries: Vec<Query>,
}

impl TrainingSet {
    /// The queries held out under `plan`: a hash of the text or of the task type (salted by
    /// the seed) decides, so the split does not depend on the order the pairs were read in, and
    /// by task type every query of a type falls on the same side.
    pub fn split(&self, plan: &TunePlan) -> (Vec<&Query>, Vec<&Query>) {
        let cut = (plan.held_out * u64::MAX as f64) as u64;
        let key = |q: &Query| match plan.held_out_by {
            HeldOutBy::Query => crate::text_hash(&q.text),
            HeldOutBy::TaskType => crate::text_hash(&q.kind),
        };
        self.queries
            .iter()
            .filter(|q| !q.helpful.is_empty() || !q.suppressed.is_empty())
            .partition(|q| mix(key(q) ^ plan.seed) >= cut)
    }

    /// Distinct task types among the queries.
    pub fn task_types(&self) -> usize {
        let kinds: HashSet<&str> = self.queries.iter().map(|q| q.kind.as_str()).collect();
        kinds.len()
    }

    /// Helpful pairs in all.
    pub fn helpful_pairs(&self) -> usize {
        self.queries.iter().map(|q| q.helpful.len()).sum()
    }
}

/// Checks `plan` against its bounds.
///
/// # Errors
/// [`Error::Invalid`] naming the first field out of bounds.
pub fn check_plan(plan: &TunePlan) -> Result<()> {
    let bad = |what: &str, why: String| Err(Error::invalid(format!("plan.{what}"), why));
    if !(1..=200).contains(&plan.epochs) {
        return bad("epochs", format!("{} is outside 1 to 200", plan.epochs));
    }
    if !(plan.learning_rate > 0.0 && plan.learning_rate <= 1.0) {
        return bad(
            "learning_rate",
            format!("{} is outside (0, 1]", plan.learning_rate),
        );
    }
    if !(plan.margin > 0.0 && plan.margin <= 2.0) {
        return bad("margin", format!("{} is outside (0, 2]", plan.margin));
    }
    if !(0.0..=1.0).contains(&plan.regularization) {
        return bad(
            "regularization",
            format!("{} is outside [0, 1]", plan.regularization),
        );
    }
    if !(1..=64).contains(&plan.negatives) {
        return bad(
            "negatives",
            format!("{} is outside 1 to 64", plan.negatives),
        );
    }
    if !(plan.held_out >= 0.05 && plan.held_out <= 0.8) {
        return bad(
            "held_out",
            format!("{} is outside 0.05 to 0.8", plan.held_out),
        );
    }
    Ok(())
}

/// SplitMix64's finalizer: spreads a hash or a counter over all 64 bits.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A small deterministic generator for drawing negatives.
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (mix(self.0) % n as u64) as usize
    }
}

/// Cosine of `a` and `b`, with their norms.
fn cos(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    (dot / (na * nb), na, nb)
}

/// Adds `scale × d cos(Wx, Wy) / dW` to `grad`, given `a = Wx`, `b = Wy`.
fn add_cos_grad(grad: &mut [f32], dim: usize, scale: f32, (x, a): (&[f32], &[f32]), b: &[f32]) {
    let (c, na, nb) = cos(a, b);
    // d cos / d a = b / (|a||b|) − c a / |a|²; then d/dW of a = W x is that times xᵀ.
    let da: Vec<f32> = a
        .iter()
        .zip(b)
        .map(|(ai, bi)| scale * (bi / (na * nb) - c * ai / (na * na)))
        .collect();
    for (j, &xj) in x.iter().enumerate() {
        if xj == 0.0 {
            continue;
        }
        for (i, d) in da.iter().enumerate() {
            grad[i * dim + j] += d * xj;
        }
    }
}

/// One triplet's step: when the negative scores within `margin` of the positive, moves `W` to
/// widen the gap. Returns the triplet's margin loss before the step.
fn step(adapter: &mut Adapter, plan: &TunePlan, q: &[f32], p: &[f32], n: &[f32]) -> f64 {
    let dim = adapter.base.dim;
    let (wq, wp, wn) = (adapter.map(q), adapter.map(p), adapter.map(n));
    let gap = cos(&wq, &wp).0 - cos(&wq, &wn).0;
    if f64::from(gap) >= plan.margin {
        return 0.0;
    }
    let mut grad = vec![0.0f32; dim * dim];
    // The loss is margin − cos(q, p) + cos(q, n); each cosine depends on W through both sides.
    add_cos_grad(&mut grad, dim, -1.0, (q, &wq), &wp);
    add_cos_grad(&mut grad, dim, -1.0, (p, &wp), &wq);
    add_cos_grad(&mut grad, dim, 1.0, (q, &wq), &wn);
    add_cos_grad(&mut grad, dim, 1.0, (n, &wn), &wq);
    for (w, g) in adapter.weights.iter_mut().zip(&grad) {
        *w -= plan.learning_rate as f32 * g;
    }
    plan.margin - f64::from(gap)
}

/// Pulls `W` a share `rate` of the way back towards the identity.
fn regularize(adapter: &mut Adapter, rate: f32) {
    let dim = adapter.base.dim;
    for (k, w) in adapter.weights.iter_mut().enumerate() {
        let target = if k / dim == k % dim { 1.0 } else { 0.0 };
        *w -= rate * (*w - target);
    }
}

/// Where a training run stands after an epoch: what it reports, and what a resume starts from.
#[derive(Clone, Debug, PartialEq)]
pub struct Epoch {
    /// Epochs done.
    pub done: usize,
    /// The mean margin loss over the training triplets in that epoch (0 when none taught).
    pub loss: f64,
}

/// Trains an adapter on `set`'s training queries, calling `epoch_done` after each epoch with
/// the adapter as it stands; training stops early, with `Ok(None)`, when `epoch_done` returns
/// `false` (a cancellation). With `resume = Some((k, weights))` it continues after epoch `k`
/// from the weights saved then, and ends with the same adapter an uninterrupted run would: the
/// shuffles of the first `k` epochs are drawn again (without training) so the generator stands
/// where it stood.
///
/// # Errors
/// [`Error::Invalid`] for a plan out of bounds, a set without a base or a resume past the
/// plan's epochs; [`Error::Incompatible`] for saved weights of another size;
/// [`Error::Conflict`] when there is nothing to train on.
pub fn train(
    set: &TrainingSet,
    plan: &TunePlan,
    checkpoint: &str,
    resume: Option<(usize, Vec<f32>)>,
    epoch_done: &mut dyn FnMut(&Epoch, &Adapter) -> bool,
) -> Result<Option<Adapter>> {
    check_plan(plan)?;
    let base = set
        .base
        .clone()
        .ok_or_else(|| Error::invalid("pairs", "no lesson vectors to train on"))?;
    let (train_queries, _) = set.split(plan);
    let triplets = triplets(set, &train_queries, plan);
    if triplets.is_empty() {
        return Err(Error::Conflict(
            "no training pairs: the feedback holds no query with a helpful lesson and another \
             lesson to tell it from"
                .into(),
        ));
    }
    let (first, mut adapter) = match resume {
        None => (1, Adapter::identity(checkpoint, base)),
        Some((done, _)) if done > plan.epochs => {
            return Err(Error::invalid(
                "resume",
                format!("{done} epochs done, but the plan has {}", plan.epochs),
            ));
        }
        Some((done, weights)) => (done + 1, Adapter::new(checkpoint, base, weights)?),
    };
    let mut draw = Draw(plan.seed);
    let mut order: Vec<usize> = (0..triplets.len()).collect();
    for epoch in 1..=plan.epochs {
        // A Fisher–Yates shuffle per epoch, from the seed.
        for i in (1..order.len()).rev() {
            order.swap(i, draw.below(i + 1));
        }
        if epoch < first {
            continue;
        }
        let mut loss = 0.0;
        for &t in &order {
            let (q, p, n) = triplets[t];
            let query = &train_queries[q].vector;
            loss += step(
                &mut adapter,
                plan,
                query,
                &set.lessons[p].0,
                &set.lessons[n].0,
            );
            regularize(&mut adapter, plan.regularization as f32);
        }
        let progress = Epoch {
            done: epoch,
            loss: loss / triplets.len() as f64,
        };
        if !epoch_done(&progress, &adapter) {
            return Ok(None);
        }
    }
    Ok(Some(adapter))
}

/// (query, helpful lesson, negative lesson) for every helpful pair: the query's suppressed
/// lessons first, then lessons of its group drawn at random (never one that helped it).
fn triplets(set: &TrainingSet, queries: &[&Query], plan: &TunePlan) -> Vec<(usize, usize, usize)> {
    let mut by_group: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, (_, group)) in set.lessons.iter().enumerate() {
        by_group.entry(*group).or_default().push(i);
    }
    let mut draw = Draw(plan.seed ^ 0x5eed);
    let mut out = Vec::new();
    for (qi, q) in queries.iter().enumerate() {
        let helpful: HashSet<usize> = q.helpful.iter().copied().collect();
        let pool: Vec<usize> = by_group
            .get(&q.group)
            .map(|g| g.iter().copied().filter(|l| !helpful.contains(l)).collect())
            .unwrap_or_default();
        for &p in &q.helpful {
            for &n in &q.suppressed {
                out.push((qi, p, n));
            }
            for _ in 0..plan.negatives.min(pool.len()) {
                out.push((qi, p, pool[draw.below(pool.len())]));
            }
        }
    }
    out
}

/// Ranks on `queries` with `vectors` (each lesson's vector) and `embed_query`.
fn rank(
    set: &TrainingSet,
    queries: &[&Query],
    vectors: &[Vec<f32>],
    embed_query: &dyn Fn(&[f32]) -> Vec<f32>,
) -> RankFigures {
    let (mut hits, mut rr, mut helpful) = (0usize, 0.0f64, 0usize);
    let (mut above, mut suppressed) = (0usize, 0usize);
    for q in queries {
        let qv = embed_query(&q.vector);
        let score = |l: usize| cos(&qv, &vectors[l]).0;
        let group: Vec<usize> = (0..set.lessons.len())
            .filter(|&l| set.lessons[l].1 == q.group)
            .collect();
        for &p in &q.helpful {
            // Filtered ranking: the query's other helpful lessons are not counted against it.
            let sp = score(p);
            let better = group
                .iter()
                .filter(|&&l| l != p && !q.helpful.contains(&l) && score(l) >= sp)
                .count();
            helpful += 1;
            hits += usize::from(better == 0);
            rr += 1.0 / (better + 1) as f64;
            for &n in &q.suppressed {
                suppressed += 1;
                above += usize::from(score(n) >= sp);
            }
        }
    }
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    RankFigures {
        hit_at_1: share(hits, helpful),
        mrr: if helpful == 0 {
            0.0
        } else {
            rr / helpful as f64
        },
        suppressed_above: share(above, suppressed),
    }
}

/// The held-out figures of the base and of `adapter`, and whether the adapter may become
/// active: its MRR beats the base's on at least [`MIN_HELD_OUT`] helpful pairs.
pub fn evaluate(set: &TrainingSet, plan: &TunePlan, adapter: &Adapter) -> Evaluation {
    let (train_queries, held_out) = set.split(plan);
    let base_vectors: Vec<Vec<f32>> = set.lessons.iter().map(|(v, _)| v.clone()).collect();
    let adapted: Vec<Vec<f32>> = base_vectors.iter().map(|v| adapter.apply(v)).collect();
    let base = rank(set, &held_out, &base_vectors, &|v| v.to_vec());
    let with = rank(set, &held_out, &adapted, &|v| adapter.apply(v));
    let held_out_pairs: usize = held_out.iter().map(|q| q.helpful.len()).sum();
    Evaluation {
        train_pairs: train_queries.iter().map(|q| q.helpful.len()).sum(),
        held_out_pairs,
        held_out_suppressed: held_out.iter().map(|q| q.suppressed.len()).sum(),
        base,
        adapter: with,
        better: held_out_pairs >= MIN_HELD_OUT && with.mrr > base.mrr + 1e-9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(dim: usize) -> EmbedderId {
        EmbedderId {
            name: "test".into(),
            dim,
        }
    }

    fn unit(dim: usize, parts: &[(usize, f32)]) -> Vec<f32> {
        let mut v = vec![0.0; dim];
        parts.iter().for_each(|&(i, x)| v[i] = x);
        normalize(&mut v);
        v
    }

    /// Queries whose words (dimension `k`) point at the wrong lesson in the base space: query
    /// `k` is closest to lesson `k + 1`'s vector, but lesson `k` is the one that helps.
    fn crossed(dim: usize, queries: usize) -> TrainingSet {
        let lessons: Vec<(Vec<f32>, u32)> = (0..4)
            .map(|k| (unit(dim, &[(k, 1.0), (4 + k, 0.3)]), 0))
            .collect();
        let queries = (0..queries)
            .map(|i| {
                let k = i % 4;
                Query {
                    text: format!("query {i}"),
                    kind: format!("type {}", i % 8),
                    vector: unit(dim, &[((k + 1) % 4, 0.8), (4 + k, 0.6), (8 + i % 8, 0.2)]),
                    group: 0,
                    helpful: vec![k],
                    suppressed: vec![(k + 1) % 4],
                }
            })
            .collect();
        TrainingSet {
            base: Some(base(dim)),
            lessons,
            queries,
        }
    }

    #[test]
    fn the_identity_adapter_changes_no_vector() {
        let adapter = Adapter::identity("CKPT-1", base(8));
        let v = unit(8, &[(1, 0.6), (5, 0.8)]);
        assert_eq!(adapter.apply(&v), v);
        assert_eq!(adapter.id().name, "test+adapter:CKPT-1");
    }

    #[test]
    fn training_on_feedback_beats_the_base_on_held_out_queries() {
        let set = crossed(16, 80);
        let plan = TunePlan::default();
        let adapter = train(&set, &plan, "CKPT-1", None, &mut |_, _| true)
            .unwrap()
            .unwrap();
        let eval = evaluate(&set, &plan, &adapter);
        assert!(eval.held_out_pairs >= MIN_HELD_OUT, "{eval:?}");
        assert!(
            eval.base.hit_at_1 < 0.5,
            "the base ranks the wrong lesson first"
        );
        assert!(eval.adapter.mrr > eval.base.mrr, "{eval:?}");
        assert!(eval.better);
        assert!(eval.adapter.suppressed_above < eval.base.suppressed_above);
    }

    #[test]
    fn the_same_seed_trains_the_same_adapter() {
        let set = crossed(16, 40);
        let plan = TunePlan::default();
        let a = train(&set, &plan, "A", None, &mut |_, _| true)
            .unwrap()
            .unwrap();
        let b = train(&set, &plan, "A", None, &mut |_, _| true)
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_resumed_training_ends_with_the_weights_of_an_uninterrupted_one() {
        let set = crossed(16, 40);
        let plan = TunePlan::default();
        let whole = train(&set, &plan, "A", None, &mut |_, _| true)
            .unwrap()
            .unwrap();
        let mut saved = None;
        let mut losses = Vec::new();
        let stopped = train(&set, &plan, "A", None, &mut |e, a| {
            losses.push(e.loss);
            saved = Some((e.done, a.weights.clone()));
            e.done < 7
        })
        .unwrap();
        assert!(stopped.is_none());
        assert!(
            losses[6] < losses[0],
            "training lowers the loss: {losses:?}"
        );
        let resumed = train(&set, &plan, "A", saved, &mut |e, _| {
            assert!(e.done > 7, "epoch {} trained again", e.done);
            true
        })
        .unwrap()
        .unwrap();
        assert_eq!(resumed, whole);
        let err = train(&set, &plan, "A", Some((3, vec![0.0; 5])), &mut |_, _| true).unwrap_err();
        assert!(matches!(err, Error::Incompatible(_)), "{err}");
    }

    #[test]
    fn a_task_type_split_keeps_every_query_of_a_type_on_one_side() {
        let set = crossed(16, 80);
        let plan = TunePlan {
            held_out_by: HeldOutBy::TaskType,
            held_out: 0.4,
            ..TunePlan::default()
        };
        let (train_queries, held_out) = set.split(&plan);
        let trained: HashSet<&str> = train_queries.iter().map(|q| q.kind.as_str()).collect();
        assert!(!held_out.is_empty() && !trained.is_empty());
        assert!(held_out.iter().all(|q| !trained.contains(q.kind.as_str())));
        assert_eq!(set.task_types(), 8);
    }

    #[test]
    fn an_adapter_that_does_not_beat_the_base_is_not_better() {
        // The base already ranks every helpful lesson first: nothing to gain.
        let mut set = crossed(16, 40);
        for q in &mut set.queries {
            q.vector = set.lessons[q.helpful[0]].0.clone();
        }
        let plan = TunePlan::default();
        let adapter = train(&set, &plan, "A", None, &mut |_, _| true)
            .unwrap()
            .unwrap();
        let eval = evaluate(&set, &plan, &adapter);
        assert_eq!(eval.base.hit_at_1, 1.0);
        assert!(!eval.better, "{eval:?}");
        let identity = evaluate(&set, &plan, &Adapter::identity("I", base(16)));
        assert!(!identity.better, "equal is not better");
    }

    #[test]
    fn a_cancelled_training_stops_between_epochs() {
        let set = crossed(16, 40);
        let mut seen = 0;
        let out = train(&set, &TunePlan::default(), "A", None, &mut |e, _| {
            seen = e.done;
            e.done < 3
        })
        .unwrap();
        assert!(out.is_none());
        assert_eq!(seen, 3);
    }

    #[test]
    fn bad_plans_and_empty_sets_are_refused_by_name() {
        let set = crossed(16, 40);
        let plan = TunePlan {
            epochs: 0,
            ..TunePlan::default()
        };
        let err = train(&set, &plan, "A", None, &mut |_, _| true).unwrap_err();
        assert!(err.to_string().contains("plan.epochs"), "{err}");
        let empty = TrainingSet {
            base: Some(base(16)),
            ..TrainingSet::default()
        };
        let err = train(&empty, &TunePlan::default(), "A", None, &mut |_, _| true).unwrap_err();
        assert!(matches!(err, Error::Conflict(_)), "{err}");
    }

    #[test]
    fn an_adapter_for_another_embedder_is_refused() {
        let adapter = Arc::new(Adapter::identity("A", base(256)));
        let err = AdaptedEmbedder::new(Arc::new(crate::BuiltinEmbedder::default()), adapter)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("trained on test"), "{err}");
        assert!(Adapter::new("A", base(4), vec![0.0; 15]).is_err());
    }
}
