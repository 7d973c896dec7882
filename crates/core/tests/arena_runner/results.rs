//! What finished battles leave: the leaderboard of their ratings, and a patch that does not apply recorded as evidence.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leaderboard_rates_completed_battles_with_a_winner() {
    let w = world().await;
    for _ in 0..2 {
        let v = w
            .arena
            .start_battle(spec(
                &w.project,
                &["fixer/good", "fixer/wrong"],
                "judge/j",
                true,
            ))
            .await
            .unwrap();
        finished(&w.arena, &v.id).await;
    }
    let boards = w
        .arena
        .leaderboard(
            Some(coderig::arena::BattleType::Coding),
            Some(w.project.to_str().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(boards.len(), 1);
    let board = &boards[0];
    assert_eq!(board.n_battles, 2);
    assert_eq!(board.entries[0].name, "fixer/good");
    assert_eq!(board.entries[0].n_battles, 2);
    assert!(board.entries[0].score > board.entries[1].score);
    let page = w
        .arena
        .list_battles(&BattleFilter {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.battles.len(), 1);
    let next = w
        .arena
        .list_battles(&BattleFilter {
            limit: Some(1),
            cursor: page.next_cursor.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(next.battles.len(), 1);
    assert_ne!(next.battles[0].id, page.battles[0].id);
    w.arena.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_patch_that_does_not_apply_on_the_base_is_evidence_not_a_crash() {
    let w = world().await;
    // The base tracks a symlink that leads out of the repository. A
    // contestant that replaces it by a directory produces a patch whose
    // files would land outside a fresh checkout of the base: the oracle's
    // apply refuses it, and that is the contestant's evidence.
    let outside = w.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink("../../outside", w.project.join("vendor")).unwrap();
    git(&w.project, &["add", "-A"]);
    git(&w.project, &["commit", "-q", "-m", "vendor link"]);
    let view = w
        .arena
        .start_battle(spec(
            &w.project,
            &["fixer/unsafe", "fixer/good"],
            "judge/j",
            true,
        ))
        .await
        .unwrap();
    let view = finished(&w.arena, &view.id).await;
    assert_eq!(view.status, BattleStatus::Completed, "{view:#?}");
    let unsafe_one = by_model(&view, "unsafe");
    assert_eq!(unsafe_one.status, ContestantStatus::Done, "{unsafe_one:?}");
    let evidence = unsafe_one.evidence.as_ref().expect("evidence");
    assert!(!evidence.patch_applied, "{evidence:?}");
    assert!(
        evidence.repro.is_none() && evidence.suite.is_none(),
        "no command ran: {evidence:?}"
    );
    assert_eq!(unsafe_one.tier, EvidenceTier::None);
    assert_eq!(
        view.winner_contestant_id.as_deref(),
        Some(by_model(&view, "good").id.as_str())
    );
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "nothing was written outside"
    );
    w.arena.shutdown(Duration::from_secs(5)).await;
}
