//! `coderig sandbox [--write DIR]... [--network allow|deny|loopback:PORTS]
//! [--access read_only|edit] -- CMD ARGS...`: runs one command under a
//! sandbox policy, its stdin, stdout and stderr the terminal's, and reports
//! what was enforced — the way to see what a policy allows before trusting
//! it.
//!
//! The policy is the one coderig gives its own processes: everything
//! readable but the credential stores under `$HOME`; writable only the
//! private `TMPDIR`, plus the current directory at `--access edit`, plus
//! each `--write`; the network as `--network` says (default `deny`); the
//! command and everything it starts in a PID namespace that dies with it.
//! The mode is `--mode`, else `[sandbox] mode` of the config, else
//! `enforce`. The report goes to stderr after the command ends (`--json`:
//! one JSON object `{"exit_code", "signal", "sandbox": {...}}`), or is
//! printed alone with `--explain` and nothing is run.
//!
//! Exit codes: the command's own (128 + N when it died of signal N); 2 for
//! bad usage or a bad policy (`invalid_input`: a path that does not exist,
//! an unknown network mode); 1 when `enforce` cannot confine
//! (`unavailable`, naming what is missing); 3 when the command cannot be
//! started.

use super::rig::RigArgs;
use coderig::agent::Access;
use coderig::sandbox::{
    home_dir, Confinement, NetworkPolicy, ResourceLimits, SandboxMode, SandboxPolicy,
};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `coderig sandbox`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A directory (or file) the command may write in; repeatable.
    #[arg(long = "write", value_name = "DIR")]
    write: Vec<PathBuf>,
    /// A credential store the command may read after all (e.g. ~/.ssh); repeatable.
    #[arg(long = "read", value_name = "PATH")]
    read: Vec<PathBuf>,
    /// allow, deny, or loopback:PORT[,PORT...] (TCP to those ports only).
    #[arg(long, default_value = "deny", value_parser = parse_network)]
    network: NetworkPolicy,
    /// read_only: nothing writable but TMPDIR (and --write); edit: the
    /// current directory too.
    #[arg(long, default_value = "read_only", value_parser = parse_access)]
    access: Access,
    /// enforce (refuse what cannot be confined), auto (confine what can be,
    /// and say what was not), off. Default: the config's `[sandbox] mode`.
    #[arg(long, value_parser = parse_mode)]
    mode: Option<SandboxMode>,
    /// Open files per process.
    #[arg(long, value_name = "N")]
    open_files: Option<u64>,
    /// Processes in the tree.
    #[arg(long, value_name = "N")]
    processes: Option<u64>,
    /// Largest file a process may write, in bytes.
    #[arg(long, value_name = "BYTES")]
    file_size: Option<u64>,
    /// Address space per process, in bytes.
    #[arg(long, value_name = "BYTES")]
    address_space: Option<u64>,
    /// Size of the private TMPDIR, in bytes (a tmpfs of its own).
    #[arg(long, value_name = "BYTES")]
    tmp_size: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print what would be enforced, and run nothing.
    #[arg(long)]
    explain: bool,
    /// The command and its arguments.
    #[arg(last = true, value_name = "CMD", required_unless_present = "explain")]
    command: Vec<String>,
}

fn parse_network(text: &str) -> Result<NetworkPolicy, String> {
    text.parse::<NetworkPolicy>()
        .map_err(|e| e.message().to_owned())
}

fn parse_access(text: &str) -> Result<Access, String> {
    match text.parse::<Access>() {
        Ok(Access::Full) => {
            Err("full is unconfined: use --mode off to run without a sandbox".into())
        }
        Ok(access) => Ok(access),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_mode(text: &str) -> Result<SandboxMode, String> {
    text.parse::<SandboxMode>()
        .map_err(|e| e.message().to_owned())
}

/// Runs `coderig sandbox`; exit codes as in the module docs.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let confinement = match prepare(&args, rig) {
        Ok(prepared) => prepared,
        Err(e) => return report_error(&e),
    };
    if args.explain {
        print_report(&confinement, None, None, args.json);
        return ExitCode::SUCCESS;
    }
    let (program, rest) = args
        .command
        .split_first()
        .expect("clap requires the command without --explain");
    let mut command = std::process::Command::new(program);
    command.args(rest);
    confinement.apply(&mut command);
    let status = match command.status() {
        Ok(status) => status,
        Err(e) => {
            let error = coderig::Error::io(format!("cannot start {program}: {e}"))
                .with_detail("program", program.as_str());
            return report_error(&error);
        }
    };
    use std::os::unix::process::ExitStatusExt;
    let (code, signal) = (status.code(), status.signal());
    print_report(&confinement, code, signal, args.json);
    let byte = code.unwrap_or_else(|| 128 + signal.unwrap_or(0));
    ExitCode::from(u8::try_from(byte & 0xff).unwrap_or(1))
}

fn prepare(args: &Args, rig: &RigArgs) -> Result<Confinement, coderig::Error> {
    let mode = match args.mode {
        Some(mode) => mode,
        None => rig.registry()?.sandbox_mode(),
    };
    let cwd = std::env::current_dir()
        .map_err(|e| coderig::Error::io(format!("cannot read the current directory: {e}")))?;
    let absolute =
        |paths: &[PathBuf]| -> Vec<PathBuf> { paths.iter().map(|p| cwd.join(p)).collect() };
    let (write, read) = (absolute(&args.write), absolute(&args.read));
    SandboxPolicy::validate_paths(&write, "--write", None)?;
    SandboxPolicy::validate_paths(&read, "--read", None)?;
    let mut policy = SandboxPolicy::new(home_dir().as_deref()).with_network(args.network.clone());
    if args.access == Access::Edit {
        policy = policy.with_writable(&cwd);
    }
    policy.writable.extend(write);
    policy.readable.extend(read);
    policy.limits = ResourceLimits {
        open_files: args.open_files,
        processes: args.processes,
        file_size: args.file_size,
        address_space: args.address_space,
        tmp_size: args.tmp_size,
    };
    Confinement::prepare(&policy, mode)
}

fn print_report(confinement: &Confinement, code: Option<i32>, signal: Option<i32>, json: bool) {
    let report = confinement.report();
    if json {
        let line = json!({"exit_code": code, "signal": signal, "sandbox": report});
        println!("{line}");
        return;
    }
    eprintln!("coderig sandbox: {}", report.summary());
    if !report.writable.is_empty() {
        let writable: Vec<String> = report
            .writable
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!("  writable: {}", writable.join(", "));
    }
    if !report.hidden.is_empty() {
        let hidden: Vec<String> = report
            .hidden
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!("  unreadable: {}", hidden.join(", "));
    }
    match (code, signal) {
        (Some(code), _) => eprintln!("  exit code {code}"),
        (None, Some(signal)) => eprintln!("  killed by signal {signal}"),
        _ => {}
    }
}

/// The error on stderr, or as JSON on stdout with `--json` ([`super::fail`]).
fn report_error(error: &coderig::Error) -> ExitCode {
    super::fail("sandbox", error)
}
