//! The kill -9 tests: a child engine SIGKILLed during a running command, a waiting approval, a do-while, a cancel and a retry backoff, each run finished by a new engine, on SQLite and PostgreSQL.

use super::*;

on_both!(
    kill9_running_command,
    kill9_during_a_running_command_reruns_only_that_attempt_sqlite,
    kill9_during_a_running_command_reruns_only_that_attempt_postgres
);

async fn kill9_running_command(w: World) {
    // `slow`'s first attempt hangs: a sleep in the background of its shell,
    // so the sleep is not the group's leader and nothing but the engine
    // knows to kill it once its engine is gone.
    let yaml = format!(
        r#"
steps:
  - id: prep
    kind: command
    shell: |
      {prep}
  - id: slow
    kind: command
    deps: [prep]
    shell: |
      {slow}
      if [ {{{{ steps.slow.attempt }}}} -eq 1 ]; then
        sleep 300 & echo "$$ $!" > '{{{{ input.dir }}}}/pids.tmp'
        mv '{{{{ input.dir }}}}/pids.tmp' '{{{{ input.dir }}}}/pids'
        wait
      fi
      echo "slow finished"
  - id: after
    kind: command
    deps: [slow]
    shell: |
      {after}
"#,
        prep = logged("prep"),
        slow = logged("slow"),
        after = logged("after"),
    );
    let a = w.child("engine-a", KILL);
    let id = w.start(&yaml, json!({})).await;
    let pids: Vec<i32> = w
        .wait_for_file(&id, "pids")
        .await
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let running = w.client.run(&id).await.unwrap();
    assert_eq!(running.step("slow").unwrap().status, StepStatus::Running);
    a.kill9();

    let b = w.restarted("engine-b").await;
    let view = w.ended(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let slow = view.step("slow").unwrap();
    assert_eq!(slow.status, StepStatus::Done);
    assert_eq!(slow.attempt, 2);
    assert_eq!(outcomes(&view, "slow"), ["interrupted", "done"]);
    assert_eq!(slow.output, Some(json!("slow finished\n")));
    for other in ["prep", "after"] {
        let s = view.step(other).unwrap();
        assert_eq!((s.status, s.attempt), (StepStatus::Done, 1), "{s:?}");
        assert_eq!(outcomes(&view, other), ["done"]);
    }
    let log = w.log();
    assert_unique(&log);
    assert_eq!(
        sorted(&log),
        ["after 0 1", "prep 0 1", "slow 0 1", "slow 0 2"],
        "{log:#?}"
    );
    // The dead engine's step left no process behind: its shell and the
    // sleep it started are gone.
    await_gone(pids, "the killed engine's step's").await;
    b.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}

on_both!(
    kill9_waiting_approval,
    kill9_while_an_approval_waits_keeps_it_waiting_for_the_new_engine_sqlite,
    kill9_while_an_approval_waits_keeps_it_waiting_for_the_new_engine_postgres
);

async fn kill9_waiting_approval(w: World) {
    let yaml = format!(
        r#"
steps:
  - id: prep
    kind: command
    shell: |
      {prep}
      echo "v1.2"
  - id: gate
    kind: approval
    deps: [prep]
    message: "Ship {{{{ results.prep | trim }}}}?"
  - id: ship
    kind: command
    deps: [gate]
    shell: |
      {ship}
"#,
        prep = logged("prep"),
        ship = logged("ship"),
    );
    let a = w.child("engine-a", KILL);
    let id = w.start(&yaml, json!({})).await;
    let view = w
        .until(&id, "waited for the approval", |v| {
            v.status == RunStatus::Waiting && v.step("gate").unwrap().status == StepStatus::Waiting
        })
        .await;
    assert_eq!(
        view.step("gate").unwrap().message.as_deref(),
        Some("Ship v1.2?")
    );
    a.kill9();

    let b = w.restarted("engine-b").await;
    // The new engine took the run over (the dead one's lease expired)...
    let deadline = Instant::now() + WAIT;
    while !b.driving().contains(&id) {
        assert!(
            Instant::now() < deadline,
            "the new engine never took the run"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // ...and it still waits, on the same approval, nothing run again.
    let view = b.run(&id).await.unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "{view:#?}");
    let gate = view.step("gate").unwrap();
    assert_eq!((gate.status, gate.attempt), (StepStatus::Waiting, 1));
    assert_eq!(view.step("ship").unwrap().status, StepStatus::Pending);
    assert_eq!(w.log(), ["prep 0 1"]);

    let decided = b
        .approve(
            &id,
            "gate",
            Decision {
                by: Some("tester".into()),
                comment: Some("after the crash".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(decided.status, StepStatus::Done);
    let view = w.ended(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let approval = view.step("gate").unwrap().approval.clone().unwrap();
    assert!(approval.approved);
    assert_eq!(approval.by.as_deref(), Some("tester"));
    assert_eq!(outcomes(&view, "prep"), ["done"]);
    let log = w.log();
    assert_eq!(log, ["prep 0 1", "ship 0 1"], "{log:#?}");
    // A second decision is a conflict: the step no longer waits.
    let again = b
        .approve(&id, "gate", Decision::default())
        .await
        .unwrap_err();
    assert_eq!(again.kind(), coderig::ErrorKind::Conflict, "{again}");
    b.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}

on_both!(
    kill9_do_while,
    kill9_inside_a_do_while_resumes_at_the_persisted_iteration_sqlite,
    kill9_inside_a_do_while_resumes_at_the_persisted_iteration_postgres
);

async fn kill9_do_while(w: World) {
    // Iterations 1..=3 (`iteration` in the condition is the count of
    // completed ones); the engine dies while iteration 2's first body step
    // runs.
    let yaml = format!(
        r#"
steps:
  - id: prep
    kind: command
    shell: |
      {prep}
  - id: loop
    kind: do_while
    deps: [prep]
    body: [body-a, body-b]
    condition: 'iteration < 3'
    max_iterations: 10
  - id: body-a
    kind: command
    deps: [loop]
    shell: |
      {body_a}
      if [ {{{{ iteration }}}} -eq 2 ] && [ {{{{ steps["body-a"].attempt }}}} -eq 1 ]; then
        sleep 300 & echo "$!" > '{{{{ input.dir }}}}/pids.tmp'
        mv '{{{{ input.dir }}}}/pids.tmp' '{{{{ input.dir }}}}/pids'
        wait
      fi
      echo "a{{{{ iteration }}}}"
  - id: body-b
    kind: command
    deps: [body-a]
    shell: |
      {body_b}
      echo "b{{{{ iteration }}}}"
  - id: after
    kind: command
    deps: [loop]
    shell: |
      {after}
      echo "{{{{ results.loop }}}}"
"#,
        prep = logged("prep"),
        body_a = logged("body-a"),
        body_b = logged("body-b"),
        after = logged("after"),
    );
    let a = w.child("engine-a", KILL);
    let id = w.start(&yaml, json!({})).await;
    let pid: i32 = w.wait_for_file(&id, "pids").await.trim().parse().unwrap();
    let mid = w.client.run(&id).await.unwrap();
    assert_eq!(mid.step("body-a").unwrap().iteration, 2, "{mid:#?}");
    a.kill9();

    let b = w.restarted("engine-b").await;
    let view = w.ended(&id).await;
    assert_eq!(view.status, RunStatus::Completed, "{view:#?}");
    let log = w.log();
    assert_unique(&log);
    let mut per_step: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for l in &log {
        let (step, rest) = l.split_once(' ').unwrap();
        per_step.entry(step).or_default().push(rest);
    }
    // Iteration 2's body-a ran again as attempt 2; nothing else twice, and
    // the loop went on from iteration 2, not from 1.
    assert_eq!(per_step["prep"], ["0 1"], "{log:#?}");
    assert_eq!(per_step["body-a"], ["1 1", "2 1", "2 2", "3 1"], "{log:#?}");
    assert_eq!(per_step["body-b"], ["1 1", "2 1", "3 1"], "{log:#?}");
    assert_eq!(per_step["after"], ["0 1"], "{log:#?}");
    let lp = view.step("loop").unwrap();
    assert_eq!(lp.output, Some(json!(3)), "{lp:?}");
    assert_eq!(view.step("after").unwrap().output, Some(json!("3\n")));
    assert_eq!(view.step("body-b").unwrap().output, Some(json!("b3\n")));
    let body_a = view.step("body-a").unwrap();
    let interrupted: Vec<_> = body_a
        .attempts
        .iter()
        .filter(|a| a.outcome == coderig::flow::AttemptOutcome::Interrupted)
        .map(|a| (a.iteration, a.attempt))
        .collect();
    assert_eq!(interrupted, [(2, 1)], "{body_a:#?}");
    await_gone([pid], "the killed engine's sleep").await;
    b.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}

on_both!(
    kill9_then_cancel,
    kill9_then_cancel_while_no_engine_runs_cancels_the_steps_and_kills_the_orphans_sqlite,
    kill9_then_cancel_while_no_engine_runs_cancels_the_steps_and_kills_the_orphans_postgres
);

async fn kill9_then_cancel(w: World) {
    let yaml = format!(
        r#"
steps:
  - id: slow
    kind: command
    shell: |
      {slow}
      sleep 300 & echo "$$ $!" > '{{{{ input.dir }}}}/pids.tmp'
      mv '{{{{ input.dir }}}}/pids.tmp' '{{{{ input.dir }}}}/pids'
      wait
  - id: after
    kind: command
    deps: [slow]
    shell: |
      {after}
"#,
        slow = logged("slow"),
        after = logged("after"),
    );
    let a = w.child("engine-a", KILL);
    let id = w.start(&yaml, json!({})).await;
    let pids: Vec<i32> = w
        .wait_for_file(&id, "pids")
        .await
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    a.kill9();
    // Cancelled while no engine drives it: the run and every step are
    // cancelled at once, in one transaction...
    let view = w.client.cancel(&id).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    assert!(
        view.steps.iter().all(|s| s.status == StepStatus::Cancelled),
        "{view:#?}"
    );
    // ...and the next engine to take its driver winds it up: the dead
    // engine's attempt recorded as interrupted, nothing started again, its
    // sleep killed.
    let b = w.restarted("engine-b").await;
    let view = w
        .until(&id, "recorded the interrupted attempt", |v| {
            !outcomes(v, "slow").is_empty()
        })
        .await;
    assert!(
        view.steps.iter().all(|s| s.status == StepStatus::Cancelled),
        "{view:#?}"
    );
    assert_eq!(view.status, RunStatus::Cancelled, "{view:#?}");
    let slow = view.step("slow").unwrap();
    assert_eq!(outcomes(&view, "slow"), ["interrupted"], "{slow:#?}");
    assert_eq!(
        slow.attempt, 1,
        "no attempt after the interrupted one: {slow:#?}"
    );
    assert_eq!(w.log(), ["slow 0 1"]);
    await_gone(pids, "the killed engine's step's").await;
    b.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}

on_both!(
    kill9_during_a_retry_backoff,
    kill9_during_a_retry_backoff_keeps_the_persisted_wait_and_budget_sqlite,
    kill9_during_a_retry_backoff_keeps_the_persisted_wait_and_budget_postgres
);

async fn kill9_during_a_retry_backoff(w: World) {
    // Every attempt fails; the one retry the budget allows waits 12 s
    // (±10 %), longer than the new engine needs to take the run over (the
    // 5 s lease and a poll), so it is the persisted `available_at` that
    // holds it back. The new engine must not grant a third attempt.
    let yaml = format!(
        r#"
steps:
  - id: flaky
    kind: command
    retry: {{max_attempts: 2, initial: 12s, on: [failure]}}
    shell: |
      {flaky}
      exit 1
"#,
        flaky = logged("flaky"),
    );
    let a = w.child("engine-a", KILL);
    let id = w.start(&yaml, json!({})).await;
    let view = w
        .until(&id, "scheduled the retry", |v| {
            v.step("flaky").unwrap().available_at.is_some()
        })
        .await;
    let flaky = view.step("flaky").unwrap();
    assert_eq!((flaky.status, flaky.attempt), (StepStatus::Pending, 1));
    let available_at = flaky.available_at.unwrap();
    a.kill9();

    let b = w.restarted("engine-b").await;
    let view = w.ended(&id).await;
    assert_eq!(view.status, RunStatus::Failed, "{view:#?}");
    let flaky = view.step("flaky").unwrap();
    assert_eq!(flaky.status, StepStatus::Failed);
    assert_eq!(outcomes(&view, "flaky"), ["failed", "failed"], "{flaky:#?}");
    assert_eq!(flaky.attempt, 2);
    assert_eq!(view.error.as_ref().unwrap()["step"], json!("flaky"));
    // The new engine started the retry no earlier than the dead one had
    // scheduled it.
    let retry = &flaky.attempts[1];
    assert!(
        retry.started_at >= available_at,
        "the retry started at {} before its persisted available_at {available_at}",
        retry.started_at
    );
    assert!(available_at - flaky.attempts[0].finished_at >= 10_800);
    assert_eq!(w.log(), ["flaky 0 1", "flaky 0 2"]);
    b.shutdown(Duration::from_secs(5)).await;
    w.finish().await;
}
