//! Table tests of the pure reply decision.

use super::*;

fn tool(name: &str, schema: Value) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        schema,
        freeform: false,
    }
}

#[test]
fn windows() {
    assert_eq!(Flags::parse("m").1.window(), 32_768);
    assert_eq!(Flags::parse("m+tiny_context").1.window(), 2_048);
    assert_eq!(Flags::parse("m+tiny_context+ctx_100").1.window(), 100);
}

#[test]
fn flags_parse_table() {
    let cases: &[(&str, &str, Flags)] = &[
        ("scripted-model", "scripted-model", Flags::default()),
        (
            "m+slow+hang",
            "m",
            Flags {
                slow: true,
                hang: true,
                ..Flags::default()
            },
        ),
        (
            "m+status_429",
            "m",
            Flags {
                status: Some(429),
                ..Flags::default()
            },
        ),
        ("m+status_200", "m", Flags::default()),
        ("m+status_abc+bogus", "m", Flags::default()),
        (
            "m+reasoning_content+timings+usage_cached",
            "m",
            Flags {
                reasoning_content: true,
                timings: true,
                usage_cached: true,
                ..Flags::default()
            },
        ),
        (
            "m+reasoning+midstream_error+no_done",
            "m",
            Flags {
                reasoning: true,
                midstream_error: true,
                no_done: true,
                ..Flags::default()
            },
        ),
        ("", "", Flags::default()),
        (
            "fix+xml_calls+hermes_calls+split_args+no_ids+index_reuse+bad_json+length_cut",
            "fix",
            Flags {
                xml_calls: true,
                hermes_calls: true,
                split_args: true,
                no_ids: true,
                index_reuse: true,
                bad_json: true,
                length_cut: true,
                ..Flags::default()
            },
        ),
        (
            "m+tiny_context",
            "m",
            Flags {
                context: Some(2048),
                ..Flags::default()
            },
        ),
        (
            "m+ctx_4096",
            "m",
            Flags {
                context: Some(4096),
                ..Flags::default()
            },
        ),
        ("m+ctx_0+ctx_x", "m", Flags::default()),
    ];
    for (model, name, flags) in cases {
        assert_eq!(
            Flags::parse(model),
            (name.to_string(), flags.clone()),
            "{model}"
        );
    }
}

#[test]
fn create_target_table() {
    let cases = [
        ("Create hello.txt containing hi", ("hello.txt", "hi")),
        (
            "Create a.md containing hello world using the shell",
            ("a.md", "hello world"),
        ),
        ("Create out/x.txt containing yes.", ("out/x.txt", "yes")),
        ("please do something", ("hello.txt", "hi")),
        (
            "Create a todo list.\nCreate b.txt containing bee",
            ("b.txt", "bee"),
        ),
        ("Create containing", ("hello.txt", "hi")),
        ("", ("hello.txt", "hi")),
    ];
    for (prompt, (path, text)) in cases {
        assert_eq!(
            create_target(prompt),
            (path.to_string(), text.to_string()),
            "{prompt}"
        );
    }
}

#[test]
fn working_dir_table() {
    let cases = [
        ("<cwd>/tmp/w</cwd>", Some("/tmp/w")),
        ("Primary working directory: /a/b\nIs git", Some("/a/b")),
        ("  Working directory: /x/y\n", Some("/x/y")),
        (
            "I'm currently working in the directory: /q/r.\n",
            Some("/q/r"),
        ),
        ("Working directory: /j\\nleak", Some("/j")),
        ("Working directory: relative", None),
        ("nothing here", None),
    ];
    for (text, want) in cases {
        assert_eq!(working_dir(text).as_deref(), want, "{text}");
    }
}

#[test]
fn decide_table() {
    let write = tool(
        "Write",
        json!({"properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}),
    );
    let bash = tool(
        "Bash",
        json!({"properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command"]}),
    );
    let exec = tool(
        "exec_command",
        json!({"properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}},"required":["cmd"]}),
    );
    let argv = tool(
        "shell",
        json!({"properties":{"command":{"type":"array"},"timeout_ms":{"type":"integer"}},"required":["command","timeout_ms"]}),
    );
    let patch = ToolInfo {
        name: "apply_patch".into(),
        schema: Value::Null,
        freeform: true,
    };
    let oc_write = tool(
        "write",
        json!({"properties":{"filePath":{"type":"string"},"content":{"type":"string"}}}),
    );
    let view = |tools: Vec<ToolInfo>, prompt: &str, result: bool| RequestView {
        tools,
        has_tool_result: result,
        last_user_text: prompt.into(),
        all_text: format!("Working directory: /w\n{prompt}"),
        schema: None,
    };
    let call = |name: &str, args: Value| Reply::ToolCall {
        name: name.into(),
        args: ToolArgs::Json(args),
    };
    let cases: Vec<(RequestView, Reply)> = vec![
        (
            view(
                vec![bash.clone(), write.clone()],
                "Create hello.txt containing hi",
                false,
            ),
            call(
                "Write",
                json!({"file_path":"/w/hello.txt","content":"hi\n"}),
            ),
        ),
        (
            view(
                vec![bash.clone(), write.clone()],
                "Create hello.txt containing hi using the shell",
                false,
            ),
            call(
                "Bash",
                json!({"command":"echo hi > hello.txt","description":"Create hello.txt"}),
            ),
        ),
        (
            view(vec![bash.clone()], "Create a.txt containing b", false),
            call(
                "Bash",
                json!({"command":"echo b > a.txt","description":"Create a.txt"}),
            ),
        ),
        (
            view(
                vec![write.clone()],
                "Create a.txt containing b using the shell",
                false,
            ),
            call("Write", json!({"file_path":"/w/a.txt","content":"b\n"})),
        ),
        (
            view(
                vec![exec.clone(), patch.clone()],
                "Create hello.txt containing hi",
                false,
            ),
            Reply::ToolCall {
                name: "apply_patch".into(),
                args: ToolArgs::Freeform(
                    "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n".into(),
                ),
            },
        ),
        (
            view(
                vec![exec, patch],
                "Create hello.txt containing hi using the shell",
                false,
            ),
            call("exec_command", json!({"cmd":"echo hi > hello.txt"})),
        ),
        (
            view(vec![argv], "using the shell", false),
            call(
                "shell",
                json!({"command":["bash","-lc","echo hi > hello.txt"],"timeout_ms":60000}),
            ),
        ),
        (
            view(vec![oc_write], "Create hello.txt containing hi", false),
            call("write", json!({"filePath":"/w/hello.txt","content":"hi\n"})),
        ),
        (
            view(
                vec![bash.clone(), write],
                "Create hello.txt containing hi",
                true,
            ),
            Reply::Text("done".into()),
        ),
        (
            view(vec![tool("read", Value::Null)], "anything", false),
            Reply::Text("done".into()),
        ),
        (
            view(vec![], "Say something. Reply with: pong\nthanks", false),
            Reply::Text("pong".into()),
        ),
        (view(vec![], "", false), Reply::Text("done".into())),
        (
            RequestView {
                schema: Some(
                    json!({"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}),
                ),
                ..view(vec![], "title this", false)
            },
            Reply::Text(r#"{"title":"Scripted"}"#.into()),
        ),
    ];
    for (i, (view, want)) in cases.into_iter().enumerate() {
        assert_eq!(decide(&view), want, "case {i}");
    }
}

#[test]
fn instance_of_is_bounded_and_typed() {
    assert_eq!(
        instance_of(&json!({"type":["null","integer"]}), 0),
        json!(0)
    );
    assert_eq!(instance_of(&json!({"enum":["a","b"]}), 0), json!("a"));
    assert_eq!(instance_of(&json!({"type":"boolean"}), 0), json!(false));
    assert_eq!(instance_of(&json!({"type":"object"}), 9), Value::Null);
    assert_eq!(
        instance_of(&json!({"type":"object","required":["x"]}), 0),
        json!({"x":"scripted"})
    );
}
