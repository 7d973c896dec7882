//! The `kind = "native"` table of `coderig.toml` (pure). STUB: being written.

/// How a native agent reaches its server and runs its loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NativeConfig {}
