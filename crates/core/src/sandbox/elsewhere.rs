//! Systems other than Linux: no kernel confinement is implemented, so
//! `enforce` refuses and `auto` runs unconfined, saying so.

use super::policy::{SandboxMode, SandboxPolicy, SandboxReport};
use crate::error::Error;
use std::path::Path;

/// A policy ready to apply: here, only ever unconfined.
#[derive(Debug, PartialEq, Eq)]
pub struct Confinement {
    report: SandboxReport,
}

impl Confinement {
    /// `enforce`: `unavailable`; `auto`: an unconfined report listing why;
    /// `off`: the off report.
    pub fn prepare(policy: &SandboxPolicy, mode: SandboxMode) -> Result<Confinement, Error> {
        let why = format!(
            "coderig's sandbox is implemented for Linux only, not {}",
            std::env::consts::OS
        );
        match mode {
            SandboxMode::Off => Ok(Confinement {
                report: SandboxReport::off(),
            }),
            SandboxMode::Enforce => Err(Error::unavailable(format!(
                "the sandbox cannot be enforced: {why}; set [sandbox] mode = \"auto\" or \"off\" to run unconfined"
            ))
            .with_detail("missing", why)),
            SandboxMode::Auto => {
                let mut report = SandboxReport::off();
                report.mode = SandboxMode::Auto;
                report.network = policy.network.name();
                report.unenforced = vec![why];
                Ok(Confinement { report })
            }
        }
    }

    /// What is enforced (nothing).
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// No private temp dir here.
    pub fn tmp_dir(&self) -> Option<&Path> {
        None
    }

    /// Nothing to apply here.
    pub fn apply(&self, _cmd: &mut std::process::Command) {}
}
