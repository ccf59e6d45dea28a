//! How to reach the cluster: in-cluster ServiceAccount credentials or a kubeconfig, turned into a
//! `kube::Client` with finite timeouts and no silent retries.
//!
//! [`ClusterSource::detect`] follows what `kubectl` users expect: an explicit `--kubeconfig` or
//! `--context` selects the kubeconfig; otherwise, inside a Pod (`KUBERNETES_SERVICE_HOST` and
//! `KUBERNETES_SERVICE_PORT` set) the mounted ServiceAccount token and CA are used; otherwise
//! `KUBECONFIG` / `~/.kube/config` with its current context.
//!
//! Every file named here is read through `bounded-input`: regular files only (a FIFO or
//! `/dev/zero` is refused at once), each under a cap named in the error, and a kubeconfig's YAML
//! nesting is checked before it is parsed. [`ClusterSource::redactor`] knows the credentials the
//! source sends (tokens, passwords), so texts built from the server's answers never show them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bounded_input::{NestingError, ReadErrorKind, YAML_MAX_DEPTH};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig, KubeconfigError};
use redaction::Redactor;
use secrecy::ExposeSecret;

/// The largest kubeconfig read (embedded certificates make them tens of KiB).
pub const MAX_KUBECONFIG_BYTES: u64 = 4 << 20;
/// The largest ServiceAccount token read (a projected token is about 1 KiB).
pub const MAX_TOKEN_BYTES: u64 = 1 << 20;
/// The largest CA bundle read.
pub const MAX_CA_BYTES: u64 = 4 << 20;

/// The ServiceAccount token path inside a Pod.
pub const SERVICE_ACCOUNT_TOKEN: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// The cluster CA path inside a Pod.
pub const SERVICE_ACCOUNT_CA: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/// Errors while building a client configuration. Texts never hold a token.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The in-cluster token file is missing, unreadable or empty.
    #[error("in-cluster config: service account token {path} is missing or empty")]
    TokenMissing {
        /// The token path.
        path: PathBuf,
        /// The read error, if the file could not be read.
        #[source]
        source: Option<ReadErrorKind>,
    },
    /// The in-cluster CA file is missing or unreadable.
    #[error("in-cluster config: cluster CA {path} is missing or unreadable")]
    CaMissing {
        /// The CA path.
        path: PathBuf,
        /// The read error.
        #[source]
        source: ReadErrorKind,
    },
    /// The CA file holds no PEM certificate.
    #[error("in-cluster config: cluster CA {path} holds no PEM certificate")]
    CaInvalid {
        /// The CA path.
        path: PathBuf,
    },
    /// The API server URL does not parse.
    #[error("invalid API server URL {url:?}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// A kubeconfig file could not be read (missing, not a regular file, over the cap).
    #[error("kubeconfig")]
    KubeconfigRead(#[source] bounded_input::ReadError),
    /// A kubeconfig file nests deeper than YAML parsing is allowed to.
    #[error("kubeconfig {}: invalid YAML", path.display())]
    KubeconfigNesting {
        /// The file.
        path: PathBuf,
        /// How deep.
        #[source]
        source: NestingError,
    },
    /// The context asked for (or the current context) is not in the kubeconfig, as kubectl
    /// says it: `context "nope" not found in <file>; contexts: a, b`.
    #[error(
        "context {context:?} not found in {files}; contexts: {}",
        list_or_none(contexts)
    )]
    ContextNotFound {
        /// The context.
        context: String,
        /// The kubeconfig files read, `, `-separated.
        files: String,
        /// The contexts the files define, in order.
        contexts: Vec<String>,
    },
    /// No `--context` and the kubeconfig sets no `current-context`.
    #[error(
        "no context: {files} sets no current-context; contexts: {}",
        list_or_none(contexts)
    )]
    NoCurrentContext {
        /// The kubeconfig files read, `, `-separated.
        files: String,
        /// The contexts the files define, in order.
        contexts: Vec<String>,
    },
    /// No kubeconfig path: neither `KUBECONFIG` nor a home directory.
    #[error("kubeconfig: KUBECONFIG is not set and there is no home directory")]
    NoKubeconfig,
    /// The kubeconfig could not be parsed, or its context/cluster/user could not be loaded.
    #[error("kubeconfig {location}")]
    Kubeconfig {
        /// Which kubeconfig (`KUBECONFIG / ~/.kube/config` or a path), and context if given.
        location: String,
        /// kube's reason.
        #[source]
        source: KubeconfigError,
    },
    /// kube could not build a client from the configuration (TLS setup).
    #[error("building the Kubernetes client failed")]
    Client(#[source] kube::Error),
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// In-cluster access: the API server URL and the mounted ServiceAccount files.
///
/// Tests build one with explicit paths ([`InClusterConfig::with_paths`]); no environment is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InClusterConfig {
    /// The API server base URL, e.g. `https://10.0.0.1:443`.
    pub server: String,
    /// The bearer token file (re-read by kube when it rotates).
    pub token_file: PathBuf,
    /// The cluster CA bundle (PEM).
    pub ca_file: PathBuf,
}

impl InClusterConfig {
    /// In-cluster access with explicit server URL and file paths.
    pub fn with_paths(
        server: impl Into<String>,
        token_file: impl Into<PathBuf>,
        ca_file: impl Into<PathBuf>,
    ) -> InClusterConfig {
        InClusterConfig {
            server: server.into(),
            token_file: token_file.into(),
            ca_file: ca_file.into(),
        }
    }

    /// In-cluster access from `KUBERNETES_SERVICE_HOST` / `KUBERNETES_SERVICE_PORT` with the
    /// standard mount paths, or `None` when not running in a Pod.
    pub fn from_env() -> Option<InClusterConfig> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`InClusterConfig::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<InClusterConfig> {
        let host = lookup("KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty())?;
        let port = lookup("KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty())?;
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host
        };
        Some(InClusterConfig::with_paths(
            format!("https://{host}:{port}"),
            SERVICE_ACCOUNT_TOKEN,
            SERVICE_ACCOUNT_CA,
        ))
    }

    fn kube_config(&self) -> Result<kube::Config, ConfigError> {
        let url = self
            .server
            .parse::<http::Uri>()
            .map_err(|source| ConfigError::InvalidUrl {
                url: self.server.clone(),
                source,
            })?;
        self.token()?;
        let roots = read_ca(&self.ca_file)?;
        let mut config = kube::Config::new(url);
        config.root_cert = Some(roots);
        config.auth_info.token_file = Some(self.token_file.display().to_string());
        Ok(config)
    }

    /// The token, read (bounded) and trimmed; an empty token is missing.
    fn token(&self) -> Result<String, ConfigError> {
        let missing = |source| ConfigError::TokenMissing {
            path: self.token_file.clone(),
            source,
        };
        let token = bounded_input::read_file_to_string(&self.token_file, MAX_TOKEN_BYTES)
            .map_err(|e| missing(Some(e.kind)))?;
        match token.trim() {
            "" => Err(missing(None)),
            token => Ok(token.to_string()),
        }
    }
}

fn read_ca(path: &Path) -> Result<Vec<Vec<u8>>, ConfigError> {
    let pem = bounded_input::read_file(path, MAX_CA_BYTES).map_err(|e| ConfigError::CaMissing {
        path: path.to_path_buf(),
        source: e.kind,
    })?;
    let certs: Vec<Vec<u8>> = rustls_pemfile::certs(&mut pem.as_slice())
        .filter_map(Result::ok)
        .map(|der| der.as_ref().to_vec())
        .collect();
    if certs.is_empty() {
        return Err(ConfigError::CaInvalid {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// Where the cluster is: the value the binary fills from `--kubeconfig`, `--context` and the
/// environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterSource {
    /// The Pod's ServiceAccount.
    InCluster(InClusterConfig),
    /// A kubeconfig file.
    Kubeconfig {
        /// The file; `None` means `KUBECONFIG` (which may list several files) or `~/.kube/config`.
        path: Option<PathBuf>,
        /// The context; `None` means the file's `current-context`.
        context: Option<String>,
    },
}

impl ClusterSource {
    /// Chooses the source the way `kubectl` users expect (see the module documentation).
    pub fn detect(kubeconfig: Option<PathBuf>, context: Option<String>) -> ClusterSource {
        Self::detect_with(kubeconfig, context, |name| std::env::var(name).ok())
    }

    /// Like [`ClusterSource::detect`], reading variables through `lookup`.
    pub fn detect_with(
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> ClusterSource {
        if kubeconfig.is_none()
            && context.is_none()
            && let Some(in_cluster) = InClusterConfig::from_lookup(lookup)
        {
            return ClusterSource::InCluster(in_cluster);
        }
        ClusterSource::Kubeconfig {
            path: kubeconfig,
            context,
        }
    }

    /// A short description for logs (no credentials): `in-cluster https://…` or
    /// `kubeconfig PATH (context NAME)`.
    pub fn describe(&self) -> String {
        match self {
            ClusterSource::InCluster(c) => format!("in-cluster {}", c.server),
            ClusterSource::Kubeconfig { path, context } => {
                let mut text = match path {
                    Some(p) => format!("kubeconfig {}", p.display()),
                    None => "kubeconfig KUBECONFIG / ~/.kube/config".to_string(),
                };
                if let Some(context) = context {
                    text.push_str(&format!(" (context {context})"));
                }
                text
            }
        }
    }

    /// The kube configuration, with a connect timeout of `timeout`, read/write timeouts a second
    /// longer (the reader's deadline of `timeout` reports a stall) and kube's automatic retries
    /// turned off (a failure is reported, not hidden).
    pub async fn kube_config(&self, timeout: Duration) -> Result<kube::Config, ConfigError> {
        let mut config = match self {
            ClusterSource::InCluster(in_cluster) => in_cluster.kube_config()?,
            ClusterSource::Kubeconfig { context, .. } => {
                let options = KubeConfigOptions {
                    context: context.clone(),
                    ..KubeConfigOptions::default()
                };
                let file = self.check_kubeconfig()?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(|source| ConfigError::Kubeconfig {
                        location: self.describe(),
                        source,
                    })?
            }
        };
        // The reader's own deadline (the same `timeout`, over the whole exchange) is the one that
        // reports a hung server; kube's per-read and per-write timeouts are a second behind it,
        // so the two never race to describe the same stall.
        let backstop = timeout.saturating_add(Duration::from_secs(1));
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(backstop);
        config.write_timeout = Some(backstop);
        config.default_retry = false;
        Ok(config)
    }

    /// Checks, without contacting the server, that this source can be used: its kubeconfig
    /// files read and parse and the context (`--context`, else the current context) is defined
    /// in them. In-cluster access is checked when it connects.
    pub fn check(&self) -> Result<(), ConfigError> {
        match self {
            ClusterSource::InCluster(_) => Ok(()),
            ClusterSource::Kubeconfig { .. } => self.check_kubeconfig().map(drop),
        }
    }

    /// The API server URL this source connects to, when it can be told without connecting
    /// (for messages such as `cannot reach https://…:6443: connection refused`).
    pub fn server(&self) -> Option<String> {
        match self {
            ClusterSource::InCluster(in_cluster) => Some(in_cluster.server.clone()),
            ClusterSource::Kubeconfig { context, .. } => {
                let file = self.check_kubeconfig().ok()?;
                let name = context.as_ref().or(file.current_context.as_ref())?;
                let context = file.contexts.iter().find(|c| &c.name == name)?;
                let cluster = &context.context.as_ref()?.cluster;
                let named = file.clusters.iter().find(|c| &c.name == cluster)?;
                named.cluster.as_ref()?.server.clone()
            }
        }
    }

    /// The merged kubeconfig, once its context is known to be defined in it.
    fn check_kubeconfig(&self) -> Result<Kubeconfig, ConfigError> {
        let ClusterSource::Kubeconfig { path, context } = self else {
            unreachable!("only called for a kubeconfig source");
        };
        let (file, read) = load_kubeconfig_files(path.as_deref(), &self.describe())?;
        let files = read
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let contexts: Vec<String> = file.contexts.iter().map(|c| c.name.clone()).collect();
        match context.as_ref().or(file.current_context.as_ref()) {
            None => Err(ConfigError::NoCurrentContext { files, contexts }),
            Some(name) if !contexts.contains(name) => Err(ConfigError::ContextNotFound {
                context: name.clone(),
                files,
                contexts,
            }),
            Some(_) => Ok(file),
        }
    }

    /// A redactor that knows the credentials this source sends: the ServiceAccount token, or
    /// every token, token file and password of the kubeconfig's users (whichever context is
    /// used). Best effort: what cannot be read is left out (reading the cluster then fails with
    /// the reason). Tokens an exec plugin or auth provider obtains at run time are not known.
    pub fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::new();
        match self {
            ClusterSource::InCluster(in_cluster) => {
                if let Ok(token) = in_cluster.token() {
                    redactor.add_secret(&token);
                }
            }
            ClusterSource::Kubeconfig { path, .. } => {
                if let Ok(file) = load_kubeconfig(path.as_deref(), "") {
                    for user in file.auth_infos.iter().filter_map(|u| u.auth_info.as_ref()) {
                        add_user_secrets(&mut redactor, user);
                    }
                }
            }
        }
        redactor
    }

    /// A client for this source (see [`ClusterSource::kube_config`]).
    pub async fn client(&self, timeout: Duration) -> Result<kube::Client, ConfigError> {
        let config = self.kube_config(timeout).await?;
        kube::Client::try_from(config).map_err(ConfigError::Client)
    }
}

fn add_user_secrets(redactor: &mut Redactor, user: &AuthInfo) {
    if let Some(token) = &user.token {
        redactor.add_secret(token.expose_secret());
    }
    if let Some(file) = &user.token_file
        && let Ok(token) = bounded_input::read_file_to_string(Path::new(file), MAX_TOKEN_BYTES)
    {
        redactor.add_secret(token.trim());
    }
    if let Some(password) = &user.password {
        let name = user.username.as_deref().unwrap_or("");
        redactor.add_basic(name, password.expose_secret());
    }
    if let Some(provider) = &user.auth_provider {
        for (key, value) in &provider.config {
            if key.contains("token") || key.contains("secret") {
                redactor.add_secret(value);
            }
        }
    }
}

/// The kubeconfig at `path`, else the files `KUBECONFIG` lists (merged, first wins), else
/// `~/.kube/config`; each read bounded, nesting-checked, with its relative paths made absolute
/// against its own directory (as kubectl does).
fn load_kubeconfig(path: Option<&Path>, location: &str) -> Result<Kubeconfig, ConfigError> {
    load_kubeconfig_files(path, location).map(|(file, _)| file)
}

/// [`load_kubeconfig`], and the files it read. As kubectl does, a file of a `KUBECONFIG` list
/// that does not exist is skipped (unless none exists); `--kubeconfig` must exist.
fn load_kubeconfig_files(
    path: Option<&Path>,
    location: &str,
) -> Result<(Kubeconfig, Vec<PathBuf>), ConfigError> {
    let (paths, skip_missing): (Vec<PathBuf>, bool) = match path {
        Some(path) => (vec![path.to_path_buf()], false),
        None => (default_kubeconfig_paths()?, true),
    };
    let mut merged = Kubeconfig::default();
    let mut read = Vec::new();
    let mut first_missing = None;
    for path in &paths {
        let text = match bounded_input::read_file_to_string(path, MAX_KUBECONFIG_BYTES) {
            Ok(text) => text,
            Err(error) if skip_missing && matches!(error.kind, ReadErrorKind::NotFound) => {
                first_missing.get_or_insert(error);
                continue;
            }
            Err(error) => return Err(ConfigError::KubeconfigRead(error)),
        };
        bounded_input::check_yaml_nesting(&text, YAML_MAX_DEPTH).map_err(|source| {
            ConfigError::KubeconfigNesting {
                path: path.clone(),
                source,
            }
        })?;
        let wrap = |source| ConfigError::Kubeconfig {
            location: location.to_string(),
            source,
        };
        let mut file = Kubeconfig::from_yaml(&text).map_err(wrap)?;
        if let Some(dir) = path.parent() {
            absolutize(&mut file, dir);
        }
        merged = merged.merge(file).map_err(wrap)?;
        read.push(path.clone());
    }
    match first_missing {
        Some(error) if read.is_empty() => Err(ConfigError::KubeconfigRead(error)),
        _ => Ok((merged, read)),
    }
}

fn default_kubeconfig_paths() -> Result<Vec<PathBuf>, ConfigError> {
    if let Some(value) = std::env::var_os("KUBECONFIG") {
        let paths: Vec<PathBuf> = std::env::split_paths(&value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            return Ok(paths);
        }
    }
    let home = std::env::home_dir().ok_or(ConfigError::NoKubeconfig)?;
    Ok(vec![home.join(".kube").join("config")])
}

/// Makes the file paths of a kubeconfig absolute against `dir`: CA, client certificate and key,
/// token file, and an exec command that names a path (a bare command is looked up on `PATH`).
fn absolutize(file: &mut Kubeconfig, dir: &Path) {
    for cluster in file.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
        make_absolute(dir, cluster.certificate_authority.as_mut());
    }
    for user in file
        .auth_infos
        .iter_mut()
        .filter_map(|u| u.auth_info.as_mut())
    {
        make_absolute(dir, user.client_certificate.as_mut());
        make_absolute(dir, user.client_key.as_mut());
        make_absolute(dir, user.token_file.as_mut());
        let command = user.exec.as_mut().and_then(|e| e.command.as_mut());
        if command
            .as_ref()
            .is_some_and(|c| c.contains(std::path::MAIN_SEPARATOR))
        {
            make_absolute(dir, command);
        }
    }
}

fn make_absolute(dir: &Path, path: Option<&mut String>) {
    if let Some(path) = path
        && Path::new(path.as_str()).is_relative()
    {
        *path = dir.join(path.as_str()).display().to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn detect_prefers_explicit_kubeconfig_then_pod_then_default_kubeconfig() {
        let pod = [
            ("KUBERNETES_SERVICE_HOST", "10.0.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ];
        assert_eq!(
            ClusterSource::detect_with(None, None, env(&pod)),
            ClusterSource::InCluster(InClusterConfig::with_paths(
                "https://10.0.0.1:443",
                SERVICE_ACCOUNT_TOKEN,
                SERVICE_ACCOUNT_CA
            ))
        );
        assert_eq!(
            ClusterSource::detect_with(None, Some("dev".into()), env(&pod)),
            ClusterSource::Kubeconfig {
                path: None,
                context: Some("dev".into())
            }
        );
        assert_eq!(
            ClusterSource::detect_with(None, None, env(&[])),
            ClusterSource::Kubeconfig {
                path: None,
                context: None
            }
        );
        let v6 = [
            ("KUBERNETES_SERVICE_HOST", "fd00::1"),
            ("KUBERNETES_SERVICE_PORT", "6443"),
        ];
        let ClusterSource::InCluster(c) = ClusterSource::detect_with(None, None, env(&v6)) else {
            panic!("expected in-cluster")
        };
        assert_eq!(c.server, "https://[fd00::1]:6443");
    }

    #[tokio::test]
    async fn missing_token_or_ca_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("token");
        let ca = dir.path().join("ca.crt");
        let source = ClusterSource::InCluster(InClusterConfig::with_paths(
            "https://127.0.0.1:6443",
            &token,
            &ca,
        ));
        let err = source
            .kube_config(Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(err, ConfigError::TokenMissing { .. }));
        assert!(err.to_string().contains("service account token"), "{err}");

        std::fs::write(&token, "  \n").expect("write");
        let err = source
            .kube_config(Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ConfigError::TokenMissing { source: None, .. }),
            "{err}"
        );

        std::fs::write(&token, "secret-token").expect("write");
        let err = source
            .kube_config(Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(err, ConfigError::CaMissing { .. }), "{err}");
        assert!(!err.to_string().contains("secret-token"));

        std::fs::write(&ca, "not a certificate").expect("write");
        let err = source
            .kube_config(Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(err, ConfigError::CaInvalid { .. }), "{err}");
    }
}
