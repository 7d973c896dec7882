//! Bradley–Terry ratings with bootstrap intervals.

use coderig::arena::{bradley_terry, Rating};

type Battles = Vec<(&'static str, Vec<&'static str>)>;

fn names(ratings: &[Rating]) -> Vec<&str> {
    ratings.iter().map(|r| r.name.as_str()).collect()
}

fn score(ratings: &[Rating], name: &str) -> f64 {
    ratings.iter().find(|r| r.name == name).unwrap().score
}

fn mean_log_strength_is_zero(ratings: &[Rating]) {
    let mean = ratings.iter().map(|r| r.score - 1000.0).sum::<f64>() / ratings.len() as f64;
    assert!(mean.abs() < 1e-6, "mean offset {mean}");
}

fn assert_ci_ordered(ratings: &[Rating]) {
    for r in ratings {
        assert!(
            r.score.is_finite() && r.ci_low.is_finite() && r.ci_high.is_finite(),
            "{r:?}"
        );
        assert!(r.ci_low <= r.score && r.score <= r.ci_high, "{r:?}");
    }
}

#[test]
fn known_ordering() {
    // a beats everyone most of the time, b beats c, c beats d.
    let mut battles: Battles = Vec::new();
    for _ in 0..6 {
        battles.push(("a", vec!["b", "c", "d"]));
        battles.push(("b", vec!["c", "d"]));
        battles.push(("c", vec!["d"]));
    }
    battles.push(("b", vec!["a"]));
    battles.push(("d", vec!["c"]));
    let ratings = bradley_terry(&battles, 200, 7);
    assert_eq!(names(&ratings), ["a", "b", "c", "d"]);
    for pair in ratings.windows(2) {
        assert!(pair[0].score > pair[1].score + 50.0, "{pair:?}");
    }
    mean_log_strength_is_zero(&ratings);
    assert_ci_ordered(&ratings);
}

#[test]
fn symmetric_battles_give_equal_scores() {
    let battles: Battles = vec![
        ("a", vec!["b", "c"]),
        ("b", vec!["c", "a"]),
        ("c", vec!["a", "b"]),
    ];
    let ratings = bradley_terry(&battles, 0, 0);
    assert_eq!(ratings.len(), 3);
    for r in &ratings {
        assert!((r.score - 1000.0).abs() < 1e-6, "{r:?}");
        assert_eq!(
            (r.ci_low, r.ci_high),
            (r.score, r.score),
            "bootstrap 0 → ci = score"
        );
    }
    // Equal scores are ordered by name.
    assert_eq!(names(&ratings), ["a", "b", "c"]);
}

#[test]
fn two_players_approach_the_maximum_likelihood_ratio() {
    // Without a prior, 3 wins to 1 gives p_a / p_b = 3, a gap of 400·log10(3).
    // The virtual tie shrinks the gap towards 0; its pull fades with more games.
    let exact_gap = 400.0 * 3f64.log10();
    let gap_for = |rounds: usize| {
        let mut battles: Battles = Vec::new();
        for _ in 0..rounds {
            battles.extend([
                ("a", vec!["b"]),
                ("a", vec!["b"]),
                ("a", vec!["b"]),
                ("b", vec!["a"]),
            ]);
        }
        let ratings = bradley_terry(&battles, 0, 0);
        mean_log_strength_is_zero(&ratings);
        score(&ratings, "a") - score(&ratings, "b")
    };
    let few = gap_for(1);
    let many = gap_for(100);
    assert!(
        0.0 < few && few < many && many < exact_gap,
        "{few} {many} {exact_gap}"
    );
    assert!(exact_gap - many < 2.0, "{many} vs {exact_gap}");
}

#[test]
fn never_won_and_never_lost_stay_finite() {
    let battles: Battles = vec![
        ("champ", vec!["mid", "loser"]),
        ("champ", vec!["mid", "loser"]),
        ("champ", vec!["mid", "loser"]),
        ("mid", vec!["loser"]),
    ];
    let ratings = bradley_terry(&battles, 100, 3);
    assert_eq!(names(&ratings), ["champ", "mid", "loser"]);
    assert_ci_ordered(&ratings);
    let spread = score(&ratings, "champ") - score(&ratings, "loser");
    assert!(spread > 100.0 && spread < 2000.0, "spread {spread}");

    // A single battle: the winner has never lost, the losers never won.
    let ratings = bradley_terry(&[("w", vec!["l1", "l2"])], 50, 1);
    assert_eq!(ratings[0].name, "w");
    assert_ci_ordered(&ratings);
    assert!((score(&ratings, "l1") - score(&ratings, "l2")).abs() < 1e-6);
}

#[test]
fn same_seed_same_result_other_seed_other_intervals() {
    let battles: Battles = vec![
        ("a", vec!["b", "c"]),
        ("b", vec!["a", "c"]),
        ("a", vec!["c"]),
        ("c", vec!["b"]),
        ("a", vec!["b"]),
        ("b", vec!["c"]),
    ];
    let first = bradley_terry(&battles, 300, 42);
    let again = bradley_terry(&battles, 300, 42);
    assert_eq!(first, again);
    let other = bradley_terry(&battles, 300, 43);
    assert_eq!(
        first.iter().map(|r| r.score).collect::<Vec<_>>(),
        other.iter().map(|r| r.score).collect::<Vec<_>>(),
        "the point estimate does not depend on the seed"
    );
    assert_ne!(first, other, "the intervals do");
    assert_ci_ordered(&first);
    assert!(
        first.iter().any(|r| r.ci_high - r.ci_low > 1.0),
        "{first:?}"
    );
}

#[test]
fn degenerate_inputs_are_total() {
    let empty: Vec<(&str, Vec<&str>)> = Vec::new();
    assert!(bradley_terry(&empty, 100, 0).is_empty());

    // A winner listed among its own losers, and repeated losers, are ignored.
    let noisy: Battles = vec![("a", vec!["a", "b", "b"])];
    let clean: Battles = vec![("a", vec!["b"])];
    assert_eq!(bradley_terry(&noisy, 20, 5), bradley_terry(&clean, 20, 5));

    // A battle without losers only makes its winner known.
    let lonely: Battles = vec![("solo", vec![])];
    let ratings = bradley_terry(&lonely, 10, 0);
    assert_eq!(ratings.len(), 1);
    assert!((ratings[0].score - 1000.0).abs() < 1e-9);
    assert_ci_ordered(&ratings);

    // Disconnected groups are still on one finite scale.
    let split: Battles = vec![("a", vec!["b"]), ("c", vec!["d"]), ("c", vec!["d"])];
    let ratings = bradley_terry(&split, 50, 9);
    assert_eq!(ratings.len(), 4);
    assert_ci_ordered(&ratings);
    mean_log_strength_is_zero(&ratings);
    assert_eq!(ratings[0].name, "c");
}

#[test]
fn owned_strings_work_too() {
    let battles = vec![("x".to_string(), vec!["y".to_string()])];
    let ratings = bradley_terry(&battles, 0, 0);
    assert_eq!(names(&ratings), ["x", "y"]);
}
