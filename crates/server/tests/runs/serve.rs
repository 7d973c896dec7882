//! `coderig serve --flows DIR`, the real binary: registered flows by name, refused flows dirs, SIGTERM stopping running steps.

use super::*;

// --- `coderig serve --flows DIR`, the real binary ---------------------------

/// `coderig serve` in `dir` ([`common::server::serve_command`]) on the data dir
/// `dir/data`, `dir` its project root.
fn serve_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = common::server::serve_command(dir, args);
    command
        .args(["--data-dir", dir.join("data").to_str().unwrap()])
        .args(["--project-root", dir.to_str().unwrap()]);
    command
}

async fn serve(dir: &Path, args: &[&str]) -> Server {
    common::server::start_server(serve_command(dir, args)).await
}

/// Runs `coderig serve ARGS` expecting it to refuse to start: its exit
/// code and stderr.
fn refused(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = serve_command(dir, args).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("listening"),
        "it started"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serve_flows_dir_registers_every_spec_by_name() {
    common::install_crypto();
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let flows = dir.join("flows");
    std::fs::create_dir_all(&flows).unwrap();
    // No `name`: the file's stem names it.
    std::fs::write(
        flows.join("greet.yaml"),
        "steps:\n  - id: say\n    kind: command\n    argv: [echo, 'hi {{ input.who }}']\n",
    )
    .unwrap();
    std::fs::write(
        flows.join("second.json"),
        r#"{"name": "deploy", "steps": [{"id": "gate", "kind": "approval", "message": "go?"}]}"#,
    )
    .unwrap();
    std::fs::write(flows.join("notes.txt"), "not a flow").unwrap();
    let server = serve(&dir, &["--flows", flows.to_str().unwrap()]).await;
    let client = reqwest::Client::new();
    let (status, listed) = json_of(
        client
            .get(format!("{}/api/flows", server.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let names: Vec<&str> = listed["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["deploy", "greet"], "{listed}");
    // The canonical form: what an inline spec may send back.
    assert_eq!(
        listed["flows"][1]["steps"][0]["trigger_rule"],
        "all_success"
    );
    assert_eq!(listed["flows"][0]["steps"][0]["message"], "go?");

    let post = |body: Value| {
        let client = client.clone();
        let url = format!("{}/api/runs", server.url);
        async move { json_of(client.post(url).json(&body).send().await.unwrap()).await }
    };
    let (status, created) = post(json!({"flow": "greet", "input": {"who": "ana"}})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["run_id"].as_str().unwrap().to_owned();
    let mut sse = SseClient::open(
        &format!("{}/api/events?run_id={id}&after=0", server.url),
        &[],
    )
    .await;
    follow(&mut sse, &id, run_ended).await;
    let (_, run) = json_of(
        client
            .get(format!("{}/api/runs/{id}", server.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["name"], "greet");
    assert_eq!(step(&run, "say")["output"], "hi ana\n");
    // A listed spec posted back inline runs too.
    let (status, created) = post(json!({"spec": listed["flows"][1]})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, body) = post(json!({"flow": "nope"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["path"], "flow");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"greet\""),
        "the known names are listed: {body}"
    );
}

#[test]
fn serve_refuses_a_flows_dir_with_a_bad_spec_naming_the_file_and_its_problems() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        (
            "cycle.yaml",
            "steps:\n  - {id: a, kind: command, argv: [x], deps: [b]}\n  - {id: b, kind: command, argv: [x], deps: [a]}\n",
            vec!["cycle.yaml", "`steps`", "cycle"],
        ),
        (
            "typo.yml",
            "steps:\n  - {id: a, kind: command, argv: [x], colour: red}\n",
            vec!["typo.yml", "`steps[0].colour`"],
        ),
        (
            "bad.json",
            "{\"steps\": [{\"id\": \"a\", \"kind\": \"command\", \"shell\": \"echo {{ x\", \"when\": \"((\"}]}",
            vec!["bad.json", "`steps[0].shell`", "`steps[0].when`"],
        ),
        (
            "not json.json",
            "{steps",
            vec!["not json.json", "not valid JSON"],
        ),
        (
            "bad name!.yaml",
            "steps:\n  - {id: a, kind: command, argv: [x]}\n",
            vec!["bad name!.yaml", "give it a `name`"],
        ),
    ];
    for (file, text, needles) in cases {
        let flows = dir.join(format!("flows-{}", file.replace(['.', ' ', '!'], "-")));
        std::fs::create_dir_all(&flows).unwrap();
        std::fs::write(
            flows.join("good.yaml"),
            "steps: [{id: a, kind: approval}]\n",
        )
        .unwrap();
        std::fs::write(flows.join(file), text).unwrap();
        let (code, stderr) = refused(&dir, &["--flows", flows.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{file}: {stderr}");
        assert!(stderr.contains("invalid_input"), "{file}: {stderr}");
        for needle in needles {
            assert!(stderr.contains(needle), "{file}: no {needle:?} in {stderr}");
        }
    }
    // Two files of one name.
    let flows = dir.join("flows-twice");
    std::fs::create_dir_all(&flows).unwrap();
    std::fs::write(
        flows.join("a.yaml"),
        "name: same\nsteps: [{id: a, kind: approval}]\n",
    )
    .unwrap();
    std::fs::write(
        flows.join("b.json"),
        r#"{"name": "same", "steps": [{"id": "a", "kind": "approval"}]}"#,
    )
    .unwrap();
    let (code, stderr) = refused(&dir, &["--flows", flows.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("a.yaml") && stderr.contains("b.json") && stderr.contains("\"same\""),
        "{stderr}"
    );
    // A directory that does not exist.
    let (code, stderr) = refused(&dir, &["--flows", dir.join("nowhere").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("nowhere"), "{stderr}");
    // Nothing was opened: no store in the data dir.
    assert!(!dir.join("data/coderig.db").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_stops_the_running_steps_of_serve() {
    common::install_crypto();
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let mut server = serve(&dir, &[]).await;
    let client = reqwest::Client::new();
    let pid_file = dir.join("pid");
    // Sandbox `off`: the test reads the host pid of the command's group
    // (see `cancel_kills_a_hung_commands_process_group_and_cancels_the_rest`).
    let spec = json!({"steps": [{"id": "hang", "kind": "command", "sandbox": {"mode": "off"},
        "shell": format!("echo $$ > {0}.tmp; mv {0}.tmp {0}; exec sleep 600", pid_file.display())}]});
    let (status, created) = json_of(
        client
            .post(format!("{}/api/runs", server.url))
            .json(&json!({"spec": spec}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let pgid: i32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file) {
            break text.trim().parse().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(group_alive(pgid));
    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = tokio::task::spawn_blocking(move || {
        let status = server.child.wait().unwrap();
        (status, server)
    })
    .await
    .unwrap()
    .0;
    assert!(status.success(), "serve exited with {status:?}");
    // The engine stopped the step before the server exited.
    assert!(!group_alive(pgid), "the command's group outlived serve");
}
