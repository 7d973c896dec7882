//! Ratings across arena battles: a Bradley–Terry fit on the Elo scale with
//! seeded bootstrap confidence intervals, plus the judge's winner line.
//!
//! Run: `cargo run -p coderig --example arena_ratings`

use coderig::arena::{bradley_terry, extract_winner, should_name_winner};

fn main() {
    let judge_output =
        "Both fixed the bug; only claude/sonnet kept the tests green.\n**WINNER:** claude/sonnet";
    assert!(should_name_winner(2));
    let winner = extract_winner(judge_output).expect("the judge named a winner");
    println!("winner of this battle: {}/{}", winner.0, winner.1);

    let battles = vec![
        ("claude/sonnet", vec!["codex/gpt-5", "local/qwen"]),
        ("claude/sonnet", vec!["codex/gpt-5"]),
        ("codex/gpt-5", vec!["local/qwen"]),
        ("codex/gpt-5", vec!["claude/sonnet", "local/qwen"]),
        ("local/qwen", vec!["codex/gpt-5"]),
    ];
    let ratings = bradley_terry(&battles, 500, 7);
    for r in &ratings {
        println!(
            "{:<14} {:>7.1}  [{:>7.1}, {:>7.1}]",
            r.name, r.score, r.ci_low, r.ci_high
        );
        assert!(r.ci_low <= r.score && r.score <= r.ci_high);
    }
    assert_eq!(ratings[0].name, "claude/sonnet");
}
