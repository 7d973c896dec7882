//! `coderig-scripted-model [--port N]`: serves the scripted model on
//! 127.0.0.1 until killed, after printing `listening on http://127.0.0.1:PORT`.

use std::io::Write;

fn main() {
    let mut port: u16 = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--port" => args.next(),
            a if a.starts_with("--port=") => Some(a["--port=".len()..].to_string()),
            "-h" | "--help" => {
                println!("usage: coderig-scripted-model [--port N]");
                return;
            }
            other => {
                eprintln!("coderig-scripted-model: unknown argument {other:?}");
                std::process::exit(2);
            }
        };
        match value.as_deref().map(str::parse::<u16>) {
            Some(Ok(p)) => port = p,
            _ => {
                eprintln!("coderig-scripted-model: --port needs a number 0..=65535");
                std::process::exit(2);
            }
        }
    }
    let server = match coderig_scripted_model::ScriptedModelServer::start_on_port(port) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("coderig-scripted-model: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on {}", server.base_url());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
