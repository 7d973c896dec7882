//! Subcommands of the `coderig` binary, one module each.

pub mod serve;
