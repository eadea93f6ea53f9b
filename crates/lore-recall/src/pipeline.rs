//! The stages wired in order. Each stage's logic lives in its own module; this one only keeps
//! the books: which candidate went where, and why.

use crate::FastMap;
use std::collections::HashSet;

use super::select::{Mmr, better, conflict_winner, eligibility_drop, filter_drop};
use super::{
    Components, Decision, DropReason, Entries, Entry, Explanation, Fused, Guards, MemoryFilter,
    NonInferableOnly, QueryShape, RankedList, RecallConfig, Recalled, Scoring, Source, ToPack,
    Tokenizer, fuse, pack, recency,
};

/// Scores closer than this are a tie. What tells them apart then (recency, a word more or less)
/// says nothing about which memory works, so measurement and curation decide
/// ([`Entry::standing`]): a newer lesson does not take the place of a better-evidenced one.
pub const NEAR_TIE: f64 = 0.02;

/// A fused candidate with its score's parts and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    /// The fused candidate.
    pub fused: Fused,
    /// The parts of its score.
    pub components: Components,
    /// Its final score.
    pub score: f64,
}

/// Fusion and scoring: every candidate, best score first (ties keep fusion order).
///
/// A candidate without an entry scores with reliability and recency 0; [`run`] drops it.
pub fn rank(
    lists: &[RankedList],
    entries: &Entries<'_>,
    shape: QueryShape,
    config: &RecallConfig,
) -> Vec<Scored> {
    let scoring = if shape.on_error {
        Scoring::OnError(config.on_error)
    } else {
        Scoring::Plain {
            recency_weight: config.recency_weight,
        }
    };
    let mut scored: Vec<Scored> = fuse(lists, config.fusion)
        .into_iter()
        .map(|fused| {
            let entry = entries.get(&fused.id);
            let boost = match entry {
                Some(e) if e.personal => config.personal_boost,
                _ => 0.0,
            };
            let components = Components {
                text: (fused.text + boost).min(1.0).max(fused.text),
                fingerprint: raw(&fused, Source::Fingerprint),
                tags: raw(&fused, Source::Tags),
                reliability: entry.map_or(0.0, |e| e.reliability.clamp(0.0, 1.0)),
                recency: entry.map_or(0.0, |e| recency(e.age_hours, config.decay_per_hour)),
            };
            let score = scoring.score(&components);
            Scored {
                fused,
                components,
                score,
            }
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));
    scored
}

/// A source's raw score clamped to `[0, 1]` (fingerprint and tag lists score in that range).
fn raw(fused: &Fused, source: Source) -> f64 {
    fused
        .sources
        .iter()
        .find(|s| s.source == source)
        .map_or(0.0, |s| s.raw.clamp(0.0, 1.0))
}

/// The whole pipeline: rank, filter, diversify, guard, pack, explain.
pub fn run(
    lists: &[RankedList],
    entries: &Entries<'_>,
    shape: QueryShape,
    config: &RecallConfig,
    filters: &[&dyn MemoryFilter],
    tokenizer: &dyn Tokenizer,
) -> Recalled {
    let scored = rank(lists, entries, shape, config);
    // Decisions by position in `scored`; the last one made for a candidate stands.
    let position: FastMap<&str, usize> = scored
        .iter()
        .enumerate()
        .map(|(i, s)| (s.fused.id.as_str(), i))
        .collect();
    let mut decisions: Vec<Option<Decision>> = vec![None; scored.len()];
    let mut decide = |id: &str, decision: Decision| {
        if let Some(&i) = position.get(id) {
            decisions[i] = Some(decision);
        }
    };
    let mut drop = |id: &str, why: DropReason| decide(id, Decision::Dropped { why });
    let mut filters = filters.to_vec();
    if config.non_inferable_only {
        filters.push(&NonInferableOnly);
    }
    let mut survivors = filter_stage(&scored, entries, config, &filters, &mut drop);
    break_ties(&mut survivors);
    let pool_size = config.limit.saturating_mul(config.pool_multiplier);
    for (entry, _) in survivors.iter().skip(pool_size) {
        drop(&entry.id, DropReason::OutsidePool);
    }
    let pool = &survivors[..survivors.len().min(pool_size)];
    let mut order = Mmr::new(pool, config.mmr_lambda, config.similarity);
    let admitted = guard_stage(pool, &mut order, config, &mut drop);
    let to_pack: Vec<ToPack<'_>> = admitted
        .iter()
        .map(|e| ToPack {
            id: &e.id,
            tiers: &e.tiers,
        })
        .collect();
    let packed = pack(&to_pack, config.budget, config.full_tiers, tokenizer);
    for (id, why) in &packed.dropped {
        drop(id, why.clone());
    }
    for (position, item) in packed.items.iter().enumerate() {
        decide(
            &item.id,
            Decision::Kept {
                position,
                tier: item.tier,
                tokens: item.tokens,
            },
        );
    }
    let explain = explain(scored, decisions);
    Recalled { packed, explain }
}

/// Eligibility, minimum relevance and configured filters; a failing filter drops everything.
fn filter_stage<'e, 'a>(
    scored: &[Scored],
    entries: &'e Entries<'a>,
    config: &RecallConfig,
    filters: &[&dyn MemoryFilter],
    drop: &mut impl FnMut(&str, DropReason),
) -> Vec<(&'e Entry<'a>, f64)> {
    let mut survivors = Vec::new();
    for s in scored {
        let id = s.fused.id.as_str();
        let entry = entries.get(id);
        if let Some(why) = eligibility_drop(entry) {
            drop(id, why);
            continue;
        }
        let entry = entry.expect("eligibility_drop refuses a missing entry");
        if s.score < config.min_relevance {
            drop(id, DropReason::BelowMinRelevance);
            continue;
        }
        if let Some(met) = entry.condition_match
            && met < config.min_condition_match
        {
            let percent = |x: f64| (x * 100.0).round().clamp(0.0, 100.0) as u8;
            drop(
                id,
                DropReason::ConditionNotMet {
                    met: percent(met),
                    min: percent(config.min_condition_match),
                },
            );
            continue;
        }
        if let Some(relevance) = below_floor(s, config.relevance_floor) {
            let percent = |x: f64| (x * 100.0).round().clamp(0.0, 100.0) as u8;
            drop(
                id,
                DropReason::NotRelevant {
                    relevance: percent(relevance),
                    floor: percent(config.relevance_floor),
                },
            );
            continue;
        }
        match filter_drop(entry, filters) {
            Ok(None) => survivors.push((entry, s.score)),
            Ok(Some(why)) => drop(id, why),
            Err(why) => {
                for (e, _) in survivors.drain(..) {
                    drop(&e.id, why.clone());
                }
                for rest in scored.iter().skip_while(|r| r.fused.id != id) {
                    drop(&rest.fused.id, why.clone());
                }
                return Vec::new();
            }
        }
    }
    survivors
}

/// Orders each run of near-tied candidates ([`NEAR_TIE`] from the run's first) by standing,
/// best first, and gives them the run's best score as MMR's relevance, so MMR keeps that order
/// (its ties keep the earlier item). A run whose standings are all equal is left alone: there
/// is no evidence to go by, and the scores' own order stands.
fn break_ties(survivors: &mut [(&Entry<'_>, f64)]) {
    let mut start = 0;
    while start < survivors.len() {
        let top = survivors[start].1;
        let len = survivors[start..]
            .iter()
            .take_while(|(_, score)| top - score < NEAR_TIE)
            .count();
        let group = &mut survivors[start..start + len];
        start += len;
        let first = group[0].0.standing;
        if group.iter().all(|(e, _)| e.standing == first) {
            continue;
        }
        group.sort_by(|a, b| {
            b.0.standing
                .total_cmp(&a.0.standing)
                .then(b.1.total_cmp(&a.1))
        });
        for (_, score) in group.iter_mut() {
            *score = top;
        }
    }
}

/// The candidate's relevance when it is below `floor`: its calibrated text relevance, or
/// what the query's error found in it. A lesson an error's fingerprint or tags point to is
/// relevant whatever its words; a candidate scored only by min-max has no relevance that means
/// anything across queries, so no floor applies to it.
fn below_floor(s: &Scored, floor: f64) -> Option<f64> {
    if !s.fused.calibrated {
        return None;
    }
    let c = &s.components;
    let relevance = c.text.max(c.fingerprint).max(c.tags);
    (relevance < floor).then_some(relevance)
}

/// Conflicts, caps and the limit, in MMR order.
///
/// Of two conflicting candidates the better one ([`super::select::better`]) is kept, in the
/// place of whichever of the two came first, and the other is dropped naming it; a candidate
/// is never dropped for a rival that is not shown (a rival already dropped is no rival, and a
/// rival the caps refuse leaves the candidate to compete on its own).
fn guard_stage<'e, 'a>(
    pool: &[(&'e Entry<'a>, f64)],
    order: &mut Mmr<'_, 'e, 'a>,
    config: &RecallConfig,
    drop: &mut impl FnMut(&str, DropReason),
) -> Vec<&'e Entry<'a>> {
    let present: FastMap<&str, &Entry<'a>> =
        pool.iter().map(|(e, _)| (e.id.as_str(), *e)).collect();
    let mut guards = Guards::new(config.max_per_tag, config.max_per_session);
    let mut admitted: Vec<&'e Entry<'a>> = Vec::new();
    let mut settled: HashSet<&str> = HashSet::new();
    while let Some(i) = order.next() {
        let entry = pool[i].0;
        if !settled.insert(entry.id.as_str()) {
            continue; // kept earlier in the place of a rival it beat
        }
        let kept_rival = admitted
            .iter()
            .find(|k| entry.conflicts_with.contains(&k.id))
            .map(|k| (k.id.clone(), better(k, entry).map_or("rank", |(_, by)| by)));
        let why = if let Some((kept, by)) = kept_rival {
            Some(conflict(kept, by))
        } else if admitted.len() >= config.limit {
            Some(DropReason::OverLimit)
        } else if let Some((rival, by)) =
            conflict_winner(entry, &present, |id| !settled.contains(id))
        {
            settled.insert(rival.id.as_str());
            match guards.admit(rival) {
                None => {
                    admitted.push(rival);
                    Some(conflict(rival.id.clone(), by))
                }
                Some(refused) => {
                    drop(&rival.id, refused);
                    guards.admit(entry)
                }
            }
        } else {
            guards.admit(entry)
        };
        match why {
            Some(why) => drop(&entry.id, why),
            None => admitted.push(entry),
        }
        // Past the limit every item left is dropped for a conflict or the limit, whatever
        // their order, so ordering them would be wasted work.
        if admitted.len() >= config.limit {
            order.stop_ranking();
        }
    }
    admitted
}

fn conflict(kept: String, by: &str) -> DropReason {
    DropReason::Conflict {
        kept,
        by: by.to_owned(),
    }
}

fn explain(scored: Vec<Scored>, decisions: Vec<Option<Decision>>) -> Vec<Explanation> {
    scored
        .into_iter()
        .zip(decisions)
        .map(|(s, decision)| Explanation {
            decision: decision.unwrap_or(Decision::Dropped {
                why: DropReason::Unknown,
            }),
            id: s.fused.id,
            sources: s.fused.sources,
            components: s.components,
            score: s.score,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::entry;
    use crate::{ApproxTokenizer, Eligibility, Fusion, Hit};

    fn list(source: Source, ids: &[&str]) -> RankedList {
        RankedList {
            source,
            hits: ids
                .iter()
                .enumerate()
                .map(|(i, id)| Hit {
                    id: (*id).to_owned(),
                    score: 10.0 - i as f64,
                })
                .collect(),
            scale: crate::Scale::MinMax,
        }
    }

    fn entries(items: Vec<Entry<'static>>) -> Entries<'static> {
        items.into_iter().map(|e| (e.id.clone(), e)).collect()
    }

    /// The whole pipeline for a plain query, without extra filters.
    fn plain(lists: &[RankedList], e: &Entries<'_>, config: &RecallConfig) -> Recalled {
        run(
            lists,
            e,
            QueryShape::default(),
            config,
            &[],
            &ApproxTokenizer,
        )
    }

    fn decision<'a>(r: &'a Recalled, id: &str) -> &'a Decision {
        &r.explain.iter().find(|e| e.id == id).unwrap().decision
    }

    fn kept(r: &Recalled) -> Vec<&str> {
        r.packed.items.iter().map(|i| i.id.as_str()).collect()
    }

    #[test]
    fn ineligible_sensitive_and_unknown_candidates_never_reach_the_context() {
        let mut gone = entry("gone", "deploy rollback archived");
        gone.eligibility = Eligibility::Ineligible("archived".into());
        let mut secret = entry("secret", "deploy rollback password");
        secret.eligibility = Eligibility::Sensitive;
        let e = entries(vec![entry("ok", "deploy rollback steps"), gone, secret]);
        let lists = [list(Source::Sparse, &["gone", "secret", "ghost", "ok"])];
        let config = RecallConfig::default();
        let r = plain(&lists, &e, &config);
        assert_eq!(kept(&r), ["ok"]);
        assert!(matches!(
            decision(&r, "secret"),
            Decision::Dropped {
                why: DropReason::Sensitive
            }
        ));
        assert!(matches!(
            decision(&r, "ghost"),
            Decision::Dropped {
                why: DropReason::Unknown
            }
        ));
        assert_eq!(r.explain.len(), 4, "every candidate is explained");
    }

    #[test]
    fn on_error_ranks_the_fingerprint_match_first() {
        let e = entries(vec![
            entry("text", "timeout talking to db"),
            entry("fp", "x"),
        ]);
        let lists = [
            list(Source::Sparse, &["text"]),
            RankedList {
                source: Source::Fingerprint,
                hits: vec![Hit {
                    id: "fp".into(),
                    score: 1.0,
                }],
                scale: crate::Scale::MinMax,
            },
        ];
        let config = RecallConfig::default();
        let shape = QueryShape { on_error: true };
        let ranked = rank(&lists, &e, shape, &config);
        assert_eq!(ranked[0].fused.id, "fp");
        assert_eq!(ranked[0].components.fingerprint, 1.0);
        assert_eq!(
            rank(&lists, &e, QueryShape::default(), &config)[0].fused.id,
            "text"
        );
    }

    /// Raw scores 10, 4 and 1 on a calibrated scale from 2 to 10: relevance 1, 0.25 and 0.
    fn calibrated(source: Source, ids: &[&str]) -> RankedList {
        let scores = [10.0, 4.0, 1.0];
        RankedList {
            source,
            hits: ids
                .iter()
                .zip(scores)
                .map(|(id, score)| Hit {
                    id: (*id).to_owned(),
                    score,
                })
                .collect(),
            scale: crate::Scale::Calibrated {
                zero: 2.0,
                one: 10.0,
            },
        }
    }

    #[test]
    fn the_relevance_floor_drops_what_the_task_is_not_about() {
        let e = entries(vec![
            entry("about", "a"),
            entry("near", "b"),
            entry("off", "c"),
            entry("fp", "d"),
        ]);
        let fingerprint = RankedList {
            source: Source::Fingerprint,
            hits: vec![Hit {
                id: "fp".into(),
                score: 1.0,
            }],
            scale: crate::Scale::MinMax,
        };
        let lists = [
            calibrated(Source::Sparse, &["about", "near", "off"]),
            calibrated(Source::Dense, &["fp"]),
            fingerprint,
        ];
        let config = RecallConfig::builder()
            .fusion(Fusion::Linear {
                sparse: 1.0,
                dense: 0.0,
            })
            .relevance_floor(0.3)
            .build()
            .unwrap();
        let r = run(
            &lists,
            &e,
            QueryShape { on_error: true },
            &config,
            &[],
            &ApproxTokenizer,
        );
        let mut shown = kept(&r);
        shown.sort_unstable();
        assert_eq!(
            shown,
            ["about", "fp"],
            "the error's lesson passes on its fingerprint"
        );
        assert_eq!(
            decision(&r, "near"),
            &Decision::Dropped {
                why: DropReason::NotRelevant {
                    relevance: 25,
                    floor: 30
                }
            }
        );
        // The same lists ranked by min-max keep everything: the floor needs a calibrated scale.
        let min_max: Vec<RankedList> = lists
            .iter()
            .cloned()
            .map(|l| RankedList {
                scale: crate::Scale::MinMax,
                ..l
            })
            .collect();
        let r = plain(&min_max, &e, &config);
        assert_eq!(kept(&r).len(), 4);
    }

    #[test]
    fn limit_minimum_relevance_and_pool_are_explained() {
        let ids: Vec<String> = (0..8).map(|i| format!("m{i}")).collect();
        let e = entries(
            ids.iter()
                .map(|id| entry(id, &format!("topic {id}")))
                .collect(),
        );
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let lists = [list(Source::Sparse, &refs)];
        let config = RecallConfig::builder()
            .limit(2)
            .pool_multiplier(2)
            .min_relevance(0.1)
            .build()
            .unwrap();
        let r = plain(&lists, &e, &config);
        assert_eq!(kept(&r).len(), 2);
        let why = |id: &str| match decision(&r, id) {
            Decision::Dropped { why } => why.clone(),
            kept => panic!("{id} {kept:?}"),
        };
        assert_eq!(
            why("m7"),
            DropReason::BelowMinRelevance,
            "min-max puts the last at 0"
        );
        assert_eq!(why("m5"), DropReason::OutsidePool);
        assert!(matches!(why("m2"), DropReason::OverLimit));
    }

    /// Two lessons at full relevance: recency would put the newer first. Evidence decides a
    /// near-tie instead; with no evidence on either side the scores' order stands.
    #[test]
    fn a_near_tie_goes_to_the_better_evidenced_candidate_not_the_newer() {
        let full = RankedList {
            source: Source::Sparse,
            hits: ["new", "old"]
                .iter()
                .map(|id| Hit {
                    id: (*id).to_owned(),
                    score: 12.0,
                })
                .collect(),
            scale: crate::Scale::Calibrated {
                zero: 2.0,
                one: 10.0,
            },
        };
        let config = RecallConfig::builder().limit(1).build().unwrap();
        let aged = |id: &str, age_hours: f64, standing: f64| {
            let mut e = entry(id, id);
            e.age_hours = age_hours;
            e.standing = standing;
            e
        };
        let lists = [full];
        let e = entries(vec![aged("new", 0.0, 1.5), aged("old", 400.0, 2.6)]);
        let r = plain(&lists, &e, &config);
        assert_eq!(kept(&r), ["old"]);
        let score = |id: &str| r.explain.iter().find(|x| x.id == id).unwrap().score;
        assert!(
            score("new") > score("old"),
            "the scores themselves are unchanged"
        );
        let e = entries(vec![aged("new", 0.0, 1.5), aged("old", 400.0, 1.5)]);
        assert_eq!(kept(&plain(&lists, &e, &config)), ["new"]);
        // Past the tie, relevance decides whatever the evidence.
        let e = entries(vec![aged("new", 0.0, 1.5), aged("old", 4000.0, 2.6)]);
        assert_eq!(kept(&plain(&lists, &e, &config)), ["new"]);
    }

    #[test]
    fn of_two_conflicting_candidates_the_better_is_kept_in_the_first_ones_place() {
        let linked = |id: &str, text: &str, rival: &str, confidence: f64| {
            let mut e = entry(id, text);
            e.conflicts_with = vec![rival.to_owned()].into();
            e.confidence = confidence;
            e
        };
        let config = RecallConfig::builder().limit(3).build().unwrap();
        let lists = [list(Source::Sparse, &["top", "mid", "low"])];
        // The top candidate is the better one: the lower rival goes, naming it.
        let e = entries(vec![
            linked("top", "retry the upload once", "low", 0.9),
            entry("mid", "log the status code"),
            linked("low", "never retry the upload", "top", 0.6),
        ]);
        let r = plain(&lists, &e, &config);
        assert_eq!(kept(&r), ["top", "mid"]);
        assert_eq!(
            decision(&r, "low"),
            &Decision::Dropped {
                why: DropReason::Conflict {
                    kept: "top".into(),
                    by: "confidence".into()
                }
            }
        );
        // The lower rival is better: it takes the top's place, and the top says why it went.
        let e = entries(vec![
            linked("top", "retry the upload once", "low", 0.6),
            entry("mid", "log the status code"),
            linked("low", "never retry the upload", "top", 0.9),
        ]);
        let r = plain(&lists, &e, &config);
        assert_eq!(kept(&r), ["low", "mid"]);
        assert_eq!(
            decision(&r, "top"),
            &Decision::Dropped {
                why: DropReason::Conflict {
                    kept: "low".into(),
                    by: "confidence".into()
                }
            }
        );
    }

    #[test]
    fn a_candidate_is_never_dropped_for_a_rival_that_is_not_shown() {
        let mut top = entry("top", "retry the upload once");
        top.conflicts_with = vec!["gone".to_owned()].into();
        top.confidence = 0.5;
        let mut gone = entry("gone", "never retry the upload");
        gone.conflicts_with = vec!["top".to_owned()].into();
        gone.confidence = 0.9;
        gone.eligibility = Eligibility::Ineligible("archived".into());
        let e = entries(vec![top, gone]);
        let lists = [list(Source::Sparse, &["top", "gone"])];
        let r = plain(&lists, &e, &RecallConfig::default());
        assert_eq!(kept(&r), ["top"]);
    }

    #[test]
    fn a_failing_filter_drops_everything() {
        struct Broken;
        impl MemoryFilter for Broken {
            fn name(&self) -> &str {
                "broken"
            }
            fn keep(&self, e: &Entry) -> crate::Result<bool> {
                if e.id == "b" {
                    return Err(crate::Error::Unsupported("offline".into()));
                }
                Ok(true)
            }
        }
        let e = entries(vec![
            entry("a", "one"),
            entry("b", "two"),
            entry("c", "three"),
        ]);
        let lists = [list(Source::Sparse, &["a", "b", "c"])];
        let config = RecallConfig::default();
        let r = run(
            &lists,
            &e,
            QueryShape::default(),
            &config,
            &[&Broken],
            &ApproxTokenizer,
        );
        assert!(r.packed.items.is_empty());
        for id in ["a", "b", "c"] {
            assert!(
                matches!(
                    decision(&r, id),
                    Decision::Dropped {
                        why: DropReason::FilterFailed(_)
                    }
                ),
                "{id}"
            );
        }
    }
}
