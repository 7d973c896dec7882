//! `coderig-scripted-model [--port N] [--script NAME=FILE.json]...`: serves
//! the scripted model on 127.0.0.1 until killed, after printing
//! `listening on http://127.0.0.1:PORT`. Each `--script` registers the
//! script in FILE under NAME (see the crate docs for the format).

use std::io::Write;

use coderig_scripted_model::{Script, ScriptedModelServer};

const USAGE: &str = "usage: coderig-scripted-model [--port N] [--script NAME=FILE.json]...";

fn fail(message: String) -> ! {
    eprintln!("coderig-scripted-model: {message}");
    std::process::exit(2);
}

fn load_script(spec: &str) -> (String, Script) {
    let Some((name, file)) = spec.split_once('=') else {
        fail(format!("--script needs NAME=FILE.json, got {spec:?}"));
    };
    if name.is_empty() || name.contains('+') {
        fail(format!(
            "--script name {name:?} must be non-empty and have no '+'"
        ));
    }
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| fail(format!("cannot read script {file}: {e}")));
    let script = Script::from_json(&text)
        .unwrap_or_else(|e| fail(format!("script {file} is not a valid script: {e}")));
    (name.to_string(), script)
}

fn main() {
    let mut port: u16 = 0;
    let mut scripts = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f == "--port" || f == "--script" => {
                (f.to_string(), Some(v.to_string()))
            }
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "--port" => match inline.or_else(|| args.next()).map(|v| v.parse::<u16>()) {
                Some(Ok(p)) => port = p,
                _ => fail("--port needs a number 0..=65535".into()),
            },
            "--script" => match inline.or_else(|| args.next()) {
                Some(spec) => scripts.push(load_script(&spec)),
                None => fail("--script needs NAME=FILE.json".into()),
            },
            other => fail(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let server = match ScriptedModelServer::start_on_port(port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coderig-scripted-model: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    for (name, script) in scripts {
        server.add_script(&name, script);
    }
    println!("listening on {}", server.base_url());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
