//! The policy and the report (pure: no IO but [`SandboxPolicy::validate`]'s
//! look at the paths it names).

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How strictly a policy is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Everything in the policy is enforced by the kernel, or nothing starts
    /// (`unavailable`, naming what is missing). The default.
    #[default]
    Enforce,
    /// What the kernel can enforce is enforced; what it cannot is listed in
    /// [`SandboxReport::unenforced`] and the process runs anyway.
    Auto,
    /// No confinement at all, said explicitly.
    Off,
}

impl SandboxMode {
    /// Every mode, in declaration order.
    pub const ALL: [SandboxMode; 3] = [SandboxMode::Enforce, SandboxMode::Auto, SandboxMode::Off];

    /// Every name, in declaration order (`names::LISTS`' `sandbox_mode`).
    pub const NAMES: &'static [&'static str] = &["enforce", "auto", "off"];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Enforce => "enforce",
            SandboxMode::Auto => "auto",
            SandboxMode::Off => "off",
        }
    }
}

impl FromStr for SandboxMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown sandbox mode `{s}`: use enforce, auto or off"
                ))
            })
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a confined process may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum NetworkPolicy {
    /// Unrestricted (a cloud agent reaching its provider).
    Allow,
    /// Nothing outside the process tree: a network namespace of its own
    /// with only its own loopback up, so the host's listeners (on
    /// 127.0.0.1 included) and every other host are unreachable.
    #[default]
    Deny,
    /// TCP connections only to these ports (an agent's model server on
    /// loopback), TCP binds only to an ephemeral port. Enforced by
    /// Landlock's TCP rules (ABI 4+), which filter by port, not by address,
    /// and do not cover UDP before ABI 8: see the README's threat model.
    Ports(Vec<u16>),
}

impl NetworkPolicy {
    /// The policy's name as the faces write it: `allow`, `deny`, or
    /// `loopback:8080,11434`.
    pub fn name(&self) -> String {
        match self {
            NetworkPolicy::Allow => "allow".into(),
            NetworkPolicy::Deny => "deny".into(),
            NetworkPolicy::Ports(ports) => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                format!("loopback:{}", ports.join(","))
            }
        }
    }
}

impl FromStr for NetworkPolicy {
    type Err = Error;
    /// `allow`, `deny`, or `loopback:PORT[,PORT…]` (ports 1–65535).
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::invalid_input(format!(
                "unknown network policy `{s}`: use allow, deny, or loopback:PORT[,PORT...] (e.g. loopback:8080)"
            ))
        };
        match s {
            "allow" => Ok(NetworkPolicy::Allow),
            "deny" => Ok(NetworkPolicy::Deny),
            _ => {
                let ports = s.strip_prefix("loopback:").ok_or_else(bad)?;
                let mut out = Vec::new();
                for p in ports.split(',') {
                    match p.trim().parse::<u16>() {
                        Ok(port) if port > 0 => out.push(port),
                        _ => return Err(bad()),
                    }
                }
                out.sort_unstable();
                out.dedup();
                Ok(NetworkPolicy::Ports(out))
            }
        }
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for NetworkPolicy {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::json::schema::from_json(serde_json::json!({
            "type": "string", "pattern": crate::json::schema::network_pattern(),
            "description": "`allow`, `deny`, or `loopback:PORT[,PORT...]` (TCP to those ports only)."
        }))
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for NetworkPolicy {}

impl Serialize for NetworkPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for NetworkPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.message()))
    }
}

/// Resource limits (setrlimit) of the confined process and, as the kernel
/// applies them, each of its descendants. `None`: inherited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResourceLimits {
    /// Open file descriptors per process (RLIMIT_NOFILE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
    /// Processes of the tree's user inside its user namespace (RLIMIT_NPROC):
    /// a fork bomb stops there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Largest file a process may write, in bytes (RLIMIT_FSIZE): a write
    /// past it fails (the writer gets SIGXFSZ, which ends it unless caught).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// Address space per process, in bytes (RLIMIT_AS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_space: Option<u64>,
    /// Size of the private temporary directory, in bytes: a tmpfs of that
    /// size mounted on `TMPDIR` in a mount namespace of the tree's own, so
    /// filling it — in one file or many — stops there with `ENOSPC`, and
    /// what was written never reaches the disk. Needs user namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmp_size: Option<u64>,
}

impl ResourceLimits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == ResourceLimits::default()
    }
}

/// The credential stores under the home directory that a confined process
/// cannot read unless a policy lists them in [`SandboxPolicy::readable`].
/// Relative to `$HOME`.
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".password-store",
    ".local/share/keyrings",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
];

/// What a process may touch. Built per use (oracle, command step, agent
/// turn) with [`SandboxPolicy::new`] and the `with_*` helpers, or merged
/// from a user's [`SandboxOverrides`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// Directories (or files) the process may create, change and remove
    /// files in, besides its private temporary directory. Absolute.
    pub writable: Vec<PathBuf>,
    /// The roots everything readable lies under (default `/`: the whole
    /// filesystem). Programs run from outside them cannot be executed.
    pub read_roots: Vec<PathBuf>,
    /// Paths readable although [`SandboxPolicy::hidden`] would hide them
    /// (e.g. `~/.ssh` for a step that pushes over ssh). Absolute.
    pub readable: Vec<PathBuf>,
    /// Paths nobody in the tree can read (defaults: [`CREDENTIAL_STORES`]
    /// under the home directory). Everything else is readable.
    pub hidden: Vec<PathBuf>,
    /// The network.
    pub network: NetworkPolicy,
    /// Resource limits.
    pub limits: ResourceLimits,
    /// Run the tree in a PID namespace of its own whose init dies with the
    /// process that started it, so no descendant outlives it (kill -9 of
    /// coderig included). Default true.
    pub isolate_processes: bool,
}

impl SandboxPolicy {
    /// The strict base: nothing writable but the private temp dir, no
    /// network, credential stores under `home` hidden, processes isolated.
    pub fn new(home: Option<&Path>) -> Self {
        SandboxPolicy {
            writable: Vec::new(),
            read_roots: vec![PathBuf::from("/")],
            readable: Vec::new(),
            hidden: home
                .map(|h| CREDENTIAL_STORES.iter().map(|c| h.join(c)).collect())
                .unwrap_or_default(),
            network: NetworkPolicy::Deny,
            limits: ResourceLimits::default(),
            isolate_processes: true,
        }
    }

    /// Adds a writable path.
    pub fn with_writable(mut self, path: impl Into<PathBuf>) -> Self {
        self.writable.push(path.into());
        self
    }

    /// Sets the network.
    pub fn with_network(mut self, network: NetworkPolicy) -> Self {
        self.network = network;
        self
    }

    /// Applies what a user stated on top of this policy: extra writable and
    /// readable paths are added, the network and each limit given replace
    /// this policy's.
    pub fn merge(mut self, overrides: &SandboxOverrides) -> Self {
        self.writable.extend(overrides.writable.iter().cloned());
        self.readable.extend(overrides.readable.iter().cloned());
        if let Some(network) = &overrides.network {
            self.network = network.clone();
        }
        let l = &overrides.limits;
        self.limits = ResourceLimits {
            open_files: l.open_files.or(self.limits.open_files),
            processes: l.processes.or(self.limits.processes),
            file_size: l.file_size.or(self.limits.file_size),
            address_space: l.address_space.or(self.limits.address_space),
            tmp_size: l.tmp_size.or(self.limits.tmp_size),
        };
        self
    }

    /// Checks every path the policy names: absolute, existing, and — for a
    /// writable one — under one of `roots` when `roots` is given (the
    /// private temp dir and the preset state dirs are added by coderig, not
    /// checked here). Errors are `invalid_input` with the path of the field
    /// under `at` (e.g. `steps[2].sandbox.writable[0]`).
    pub fn validate_paths(
        paths: &[PathBuf],
        field: &str,
        roots: Option<&[PathBuf]>,
    ) -> Result<(), Error> {
        for (i, path) in paths.iter().enumerate() {
            let at = format!("{field}[{i}]");
            if !path.is_absolute() {
                return Err(Error::invalid_at(
                    &at,
                    format_args!(
                        "{} is a relative path: give an absolute one",
                        path.display()
                    ),
                ));
            }
            let real = path.canonicalize().map_err(|e| {
                Error::invalid_at(
                    &at,
                    format_args!(
                        "{} cannot be used in a sandbox policy ({e}): create it first or remove it",
                        path.display()
                    ),
                )
            })?;
            if let Some(roots) = roots {
                let inside = roots.iter().any(|r| {
                    r.canonicalize()
                        .map(|r| real.starts_with(r))
                        .unwrap_or(false)
                });
                if !inside {
                    return Err(Error::invalid_at(
                        &at,
                        format_args!(
                            "{} is outside the project roots: a writable path must lie under one of them ({})",
                            path.display(),
                            roots
                                .iter()
                                .map(|r| r.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What a user may state about a sandbox in a flow step's `sandbox:`, a
/// Rig's configuration or `coderig.toml`'s `[sandbox]`: each field given
/// widens or narrows the default policy of the use it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxOverrides {
    /// `enforce` (default), `auto` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// `allow`, `deny` or `loopback:PORT[,PORT...]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicy>,
    /// Extra writable paths (absolute, existing, under a project root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<PathBuf>,
    /// Credential stores made readable (absolute, existing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readable: Vec<PathBuf>,
    /// Resource limits.
    #[serde(default, skip_serializing_if = "ResourceLimits::is_empty")]
    pub limits: ResourceLimits,
}

impl SandboxOverrides {
    /// Checks the paths (see [`SandboxPolicy::validate_paths`]); `at` is the
    /// JSON path of this object (`""` at the top).
    pub fn validate(&self, at: &str, roots: Option<&[PathBuf]>) -> Result<(), Error> {
        let field = |name: &str| {
            if at.is_empty() {
                name.to_owned()
            } else {
                format!("{at}.{name}")
            }
        };
        SandboxPolicy::validate_paths(&self.writable, &field("writable"), roots)?;
        SandboxPolicy::validate_paths(&self.readable, &field("readable"), None)
    }
}

/// The `[sandbox]` table of `coderig.toml` (and a Rig's `sandbox`
/// configuration in the faces): the mode every process coderig starts runs
/// under, unless a use states its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// `enforce` (default), `auto` or `off`.
    #[serde(default)]
    pub mode: SandboxMode,
}

impl SandboxConfig {
    /// Decodes what a face's `Rig(sandbox=...)` takes: a mode name
    /// (`"auto"`) or the `[sandbox]` table (`{"mode": "auto"}`); `null` is
    /// the default. Errors are `invalid_input` at `sandbox` / `sandbox.mode`.
    pub fn from_json(value: serde_json::Value) -> Result<SandboxConfig, Error> {
        match value {
            serde_json::Value::Null => Ok(SandboxConfig::default()),
            serde_json::Value::String(mode) => Ok(SandboxConfig {
                mode: mode
                    .parse()
                    .map_err(|e: Error| Error::invalid_at("sandbox", e.message()))?,
            }),
            serde_json::Value::Object(_) => {
                let config: SandboxConfig =
                    serde_path_to_error::deserialize(value).map_err(|e| {
                        let at = e.path().to_string();
                        let at = if at == "." {
                            "sandbox".into()
                        } else {
                            format!("sandbox.{at}")
                        };
                        Error::invalid_at(&at, e.inner())
                    })?;
                Ok(config)
            }
            _ => Err(Error::invalid_at(
                "sandbox",
                "expected a mode (\"enforce\", \"auto\" or \"off\") or a table {\"mode\": ...}",
            )),
        }
    }
}

/// How a part of a policy was enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Enforcer {
    /// By Landlock rules.
    Landlock,
    /// By a namespace of its own (network or PID).
    Namespace,
    /// Not confined by the kernel (mode `off`, an `allow` network, or what
    /// `auto` could not enforce).
    None,
}

impl Enforcer {
    /// Every variant, in declaration order.
    pub const ALL: [Enforcer; 3] = [Enforcer::Landlock, Enforcer::Namespace, Enforcer::None];

    /// Every name, in declaration order (`names::LISTS`' `sandbox_enforcer`).
    pub const NAMES: &'static [&'static str] = &["landlock", "namespace", "none"];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcer::Landlock => "landlock",
            Enforcer::Namespace => "namespace",
            Enforcer::None => "none",
        }
    }
}

/// What was actually enforced on a process tree: recorded with every turn,
/// command step attempt and oracle run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SandboxReport {
    /// The mode it ran under.
    pub mode: SandboxMode,
    /// Whether every part of the policy was enforced by the kernel.
    pub confined: bool,
    /// The Landlock ABI the kernel offered, when Landlock was used.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub landlock_abi: Option<u32>,
    /// How writes (and reads of hidden paths) were confined.
    pub filesystem: Enforcer,
    /// The writable paths (the private temp dir included).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub writable: Vec<PathBuf>,
    /// The hidden paths that exist.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub hidden: Vec<PathBuf>,
    /// The network policy, as named by [`NetworkPolicy::name`].
    pub network: String,
    /// How the network policy was enforced.
    pub network_enforced_by: Enforcer,
    /// How the process tree is kept from outliving its use.
    pub processes: Enforcer,
    /// The limits applied.
    pub limits: ResourceLimits,
    /// What `auto` could not enforce, each with why (empty when confined).
    pub unenforced: Vec<String>,
}

impl SandboxReport {
    /// The report of a process started with mode `off`.
    pub fn off() -> Self {
        SandboxReport {
            mode: SandboxMode::Off,
            confined: false,
            landlock_abi: None,
            filesystem: Enforcer::None,
            writable: Vec::new(),
            hidden: Vec::new(),
            network: NetworkPolicy::Allow.name(),
            network_enforced_by: Enforcer::None,
            processes: Enforcer::None,
            limits: ResourceLimits::default(),
            unenforced: Vec::new(),
        }
    }

    /// One line for a log or a CLI: `enforce: landlock v7, network deny
    /// (namespace), pid namespace`.
    pub fn summary(&self) -> String {
        if self.mode == SandboxMode::Off {
            return "off: unconfined".into();
        }
        let fs = match (self.filesystem, self.landlock_abi) {
            (Enforcer::Landlock, Some(abi)) => format!("landlock v{abi}"),
            _ => "filesystem unconfined".into(),
        };
        let net = match self.network_enforced_by {
            Enforcer::None if self.network != "allow" => {
                format!("network {} (not enforced)", self.network)
            }
            Enforcer::None => "network allow".into(),
            Enforcer::Landlock => format!("network {} (landlock)", self.network),
            Enforcer::Namespace => format!("network {} (namespace)", self.network),
        };
        let procs = match self.processes {
            Enforcer::Namespace => "pid namespace",
            _ => "process group",
        };
        let mut line = format!("{}: {fs}, {net}, {procs}", self.mode);
        if !self.unenforced.is_empty() {
            line.push_str(&format!("; not enforced: {}", self.unenforced.join("; ")));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_policies_parse_by_table() {
        let cases: &[(&str, Option<NetworkPolicy>)] = &[
            ("allow", Some(NetworkPolicy::Allow)),
            ("deny", Some(NetworkPolicy::Deny)),
            ("loopback:8080", Some(NetworkPolicy::Ports(vec![8080]))),
            (
                "loopback:9000, 80,9000",
                Some(NetworkPolicy::Ports(vec![80, 9000])),
            ),
            ("loopback:", None),
            ("loopback:0", None),
            ("loopback:70000", None),
            ("Allow", None),
            ("", None),
            ("open", None),
        ];
        for (text, want) in cases {
            let got = text.parse::<NetworkPolicy>().ok();
            assert_eq!(&got, want, "{text}");
            if let Some(policy) = got {
                assert_eq!(policy.name().parse::<NetworkPolicy>().unwrap(), policy);
            }
        }
    }

    #[test]
    fn modes_round_trip() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>().unwrap(), mode);
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        let names: Vec<_> = SandboxMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, SandboxMode::NAMES);
        let names: Vec<_> = Enforcer::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, Enforcer::NAMES);
        for e in Enforcer::ALL {
            assert_eq!(serde_json::to_value(e).unwrap(), e.as_str());
        }
        let e = "strict".parse::<SandboxMode>().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
    }

    #[test]
    fn overrides_merge_onto_the_base() {
        let home = Path::new("/home/u");
        let base = SandboxPolicy::new(Some(home)).with_writable("/w");
        let over = SandboxOverrides {
            network: Some(NetworkPolicy::Allow),
            writable: vec!["/x".into()],
            limits: ResourceLimits {
                processes: Some(64),
                tmp_size: Some(1 << 20),
                ..Default::default()
            },
            ..Default::default()
        };
        let merged = base.merge(&over);
        assert_eq!(merged.limits.tmp_size, Some(1 << 20));
        assert_eq!(merged.writable, vec![PathBuf::from("/w"), "/x".into()]);
        assert_eq!(merged.network, NetworkPolicy::Allow);
        assert_eq!(merged.limits.processes, Some(64));
        assert!(merged.hidden.contains(&home.join(".ssh")));
    }

    #[test]
    fn a_rigs_sandbox_config_decodes_by_table() {
        use serde_json::json;
        let cases = [
            (json!(null), Ok(SandboxMode::Enforce)),
            (json!("auto"), Ok(SandboxMode::Auto)),
            (json!({"mode": "off"}), Ok(SandboxMode::Off)),
            (json!({}), Ok(SandboxMode::Enforce)),
            (json!("strict"), Err("sandbox")),
            (json!({"mode": "strict"}), Err("sandbox.mode")),
            (json!({"network": "deny"}), Err("sandbox.network")),
            (json!(3), Err("sandbox")),
        ];
        for (value, want) in cases {
            match (SandboxConfig::from_json(value.clone()), want) {
                (Ok(config), Ok(mode)) => assert_eq!(config.mode, mode, "{value}"),
                (Err(e), Err(path)) => {
                    assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{value}");
                    assert_eq!(e.details()["path"], path, "{value}: {}", e.message());
                }
                (got, want) => panic!("{value}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn overrides_decode_strictly() {
        let ok: SandboxOverrides = serde_json::from_value(serde_json::json!({
            "network": "loopback:8080", "writable": ["/tmp"], "limits": {"open_files": 64}
        }))
        .unwrap();
        assert_eq!(ok.network, Some(NetworkPolicy::Ports(vec![8080])));
        for bad in [
            serde_json::json!({"network": "sometimes"}),
            serde_json::json!({"writeable": ["/tmp"]}),
            serde_json::json!({"limits": {"cpu": 1}}),
            serde_json::json!({"mode": "strict"}),
        ] {
            assert!(
                serde_json::from_value::<SandboxOverrides>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn paths_are_checked_with_their_field() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("in");
        std::fs::create_dir(&inside).unwrap();
        let roots = [dir.path().to_path_buf()];
        let cases: Vec<(PathBuf, Option<&str>)> = vec![
            (inside.clone(), None),
            ("relative/dir".into(), Some("relative path")),
            (dir.path().join("missing"), Some("create it first")),
            ("/".into(), Some("outside the project roots")),
        ];
        for (path, want) in cases {
            let got = SandboxPolicy::validate_paths(
                std::slice::from_ref(&path),
                "sandbox.writable",
                Some(&roots),
            );
            match want {
                None => got.unwrap(),
                Some(text) => {
                    let e = got.unwrap_err();
                    assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{path:?}");
                    assert!(e.message().contains(text), "{path:?}: {}", e.message());
                    assert_eq!(e.details()["path"], "sandbox.writable[0]");
                }
            }
        }
    }
}
