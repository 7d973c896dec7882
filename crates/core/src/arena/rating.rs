//! Bradley–Terry ratings across battles, with bootstrap confidence intervals.
//!
//! Each battle `(winner, losers)` counts as one win of the winner over each
//! loser. Strengths `p` are the maximum a-posteriori fit of
//! `P(i beats j) = p_i / (p_i + p_j)` by the MM algorithm of Hunter (2004),
//! with one *virtual tie* per contestant: half a win and half a loss against
//! a virtual opponent of strength 1. Without it, a contestant that never lost
//! has an infinite maximum-likelihood strength and one that never won a zero
//! strength; with it every score is finite, disconnected groups of
//! contestants are anchored on a common scale, and the prior's pull fades as
//! real comparisons accumulate.
//!
//! Scores are on the Elo scale: `1000 + 400·log10(p)` with the mean
//! log-strength of the rated contestants at 0, so a 400-point gap means
//! 10:1 odds. Confidence intervals are the 2.5th and 97.5th percentiles over
//! `bootstrap` refits on battles resampled with replacement, using a PCG
//! generator seeded by the caller (so results are identical on every
//! platform for one seed).

use rand_pcg::rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Virtual wins (= virtual losses) per contestant against the strength-1
/// virtual opponent: one virtual tie.
const PRIOR_HALF_GAMES: f64 = 0.5;
/// Convergence: stop when no log-strength moves more than this.
const TOLERANCE: f64 = 1e-10;
/// Safety net on MM iterations; with the prior the fit converges far sooner.
const MAX_ITERATIONS: usize = 10_000;

/// The rating of one contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    /// The contestant's name as given in the battles.
    pub name: String,
    /// Elo-scale score of the fit on all battles.
    pub score: f64,
    /// Lower end of the 95 % bootstrap interval, `<= score`.
    pub ci_low: f64,
    /// Upper end of the 95 % bootstrap interval, `>= score`.
    pub ci_high: f64,
}

/// Ratings of every contestant named in `battles` (as a winner or a loser),
/// sorted by score, best first (ties by name).
///
/// A loser equal to its battle's winner is ignored, as is a repeat of the
/// same loser within one battle; a battle with no losers only makes its
/// winner known. `bootstrap = 0` gives `ci_low = ci_high = score`. In a
/// bootstrap sample, only contestants present in the sample are scored, so a
/// rarely seen contestant is not pulled towards the mean by samples that
/// omit it. Cost: `O(bootstrap · (battles · losers + iterations · pairs))`.
/// Total: no input panics; no battles gives an empty list.
pub fn bradley_terry<S: AsRef<str>>(
    battles: &[(S, Vec<S>)],
    bootstrap: usize,
    seed: u64,
) -> Vec<Rating> {
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut intern = |name: &str| -> usize {
        if let Some(&i) = index.get(name) {
            return i;
        }
        names.push(name.to_string());
        index.insert(name.to_string(), names.len() - 1);
        names.len() - 1
    };
    // Each battle as (winner, distinct losers other than the winner).
    let games: Vec<(usize, Vec<usize>)> = battles
        .iter()
        .map(|(winner, losers)| {
            let w = intern(winner.as_ref());
            let mut ls: Vec<usize> = Vec::with_capacity(losers.len());
            for loser in losers {
                let l = intern(loser.as_ref());
                if l != w && !ls.contains(&l) {
                    ls.push(l);
                }
            }
            (w, ls)
        })
        .collect();
    let n = names.len();
    let all: Vec<usize> = (0..games.len()).collect();
    let scores = fit(n, &games, &all);

    // No preallocation from `bootstrap`: a huge count must not abort on allocation.
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); n];
    if !games.is_empty() {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut picked = vec![0usize; games.len()];
        for _ in 0..bootstrap {
            for slot in picked.iter_mut() {
                *slot = uniform_index(&mut rng, games.len());
            }
            for (i, score) in fit(n, &games, &picked).into_iter().enumerate() {
                if let Some(score) = score {
                    samples[i].push(score);
                }
            }
        }
    }

    let mut ratings: Vec<Rating> = names
        .into_iter()
        .zip(scores)
        .zip(samples)
        .map(|((name, score), mut sample)| {
            // Every named contestant appears in the full fit.
            let score = score.unwrap_or(1000.0);
            sample.sort_by(f64::total_cmp);
            let (low, high) = match (percentile(&sample, 0.025), percentile(&sample, 0.975)) {
                (Some(low), Some(high)) => (low, high),
                _ => (score, score),
            };
            Rating {
                name,
                score,
                ci_low: low.min(score),
                ci_high: high.max(score),
            }
        })
        .collect();
    ratings.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.name.cmp(&b.name))
    });
    ratings
}

/// Elo-scale scores of the contestants present in the battles `picked`
/// (indices into `games`, repeats allowed); `None` for absent ones.
fn fit(n: usize, games: &[(usize, Vec<usize>)], picked: &[usize]) -> Vec<Option<f64>> {
    let mut present = vec![false; n];
    let mut wins = vec![0.0f64; n];
    // Comparisons per unordered pair (i < j), ordered so that the floating
    // point sums below run in the same order on every run.
    let mut pair_counts: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for &g in picked {
        let (w, losers) = &games[g];
        present[*w] = true;
        for &l in losers {
            present[l] = true;
            wins[*w] += 1.0;
            *pair_counts.entry((*w.min(&l), *w.max(&l))).or_insert(0.0) += 1.0;
        }
    }
    let mut pairs: Vec<(usize, usize, f64)> = pair_counts
        .into_iter()
        .map(|((i, j), c)| (i, j, c))
        .collect();
    // HashMap order is random; summation order must not be.
    pairs.sort_by_key(|&(i, j, _)| (i, j));

    let mut strength = vec![1.0f64; n];
    let mut denominators = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        for (i, d) in denominators.iter_mut().enumerate() {
            *d = 2.0 * PRIOR_HALF_GAMES / (strength[i] + 1.0);
        }
        for &(i, j, count) in &pairs {
            let share = count / (strength[i] + strength[j]);
            denominators[i] += share;
            denominators[j] += share;
        }
        let mut largest_step = 0.0f64;
        for i in 0..n {
            let updated = (wins[i] + PRIOR_HALF_GAMES) / denominators[i];
            largest_step = largest_step.max((updated.ln() - strength[i].ln()).abs());
            strength[i] = updated;
        }
        if largest_step < TOLERANCE {
            break;
        }
    }

    let count = present.iter().filter(|p| **p).count();
    if count == 0 {
        return vec![None; n];
    }
    let mean_log = (0..n)
        .filter(|&i| present[i])
        .map(|i| strength[i].log10())
        .sum::<f64>()
        / count as f64;
    (0..n)
        .map(|i| present[i].then(|| 1000.0 + 400.0 * (strength[i].log10() - mean_log)))
        .collect()
}

/// A uniform index in `0..len` (`len > 0`) from one 64-bit draw by
/// multiply-shift; the bias is below `len / 2^64`, and the mapping is the
/// same on every platform (unlike `usize`-width sampling).
fn uniform_index(rng: &mut Pcg64Mcg, len: usize) -> usize {
    ((u128::from(rng.next_u64()) * len as u128) >> 64) as usize
}

/// Linearly interpolated percentile `q` in [0, 1] of sorted values.
fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = q * last as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let fraction = rank - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}
