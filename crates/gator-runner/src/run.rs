//! Running `gator test` and interpreting what it printed (`docs/gator-cli.md`).
//!
//! This is the one place in the workspace that spawns a process. gator runs as
//! `gator test -f <dir> -o json [--enable-k8s-native-validation=<bool>]` with stdin on
//! `/dev/null` (gator reads stdin unless it is a character device), an explicit environment
//! (nothing of ours, such as webhook secrets, leaks into it), its own process group, and a
//! timeout after which the whole group is killed. stdout and stderr are read on their own
//! threads.
//!
//! Interpretation (exit 1 means either deny results or a fatal error, so content decides):
//! - any stderr text is an error: a `WARNING` line (e.g. the duplicate-resource warning) is
//!   [`RunError::Warning`], anything else [`RunError::Failed`];
//! - stdout `null` is no results; a JSON array is the results; anything else is
//!   [`RunError::NonJson`];
//! - a policy that failed to evaluate on an object is a result too: its `msg` is the error
//!   (e.g. `template:3: eval_conflict_error: complete rules must not produce multiple outputs`)
//!   and its `metadata` is `{"details": null}` (a matching error has no `metadata`), where a
//!   violation has `details` (`{}` at least); so its [`ReviewResult::details`] is `None`;
//! - a result of a template gator evaluates by its CEL has no `metadata` at all, violation or
//!   error alike: it is an error when its message has the shape of a CEL evaluation error
//!   ([`gatekeeper_engine::result::cel_message_is_error`]), otherwise a violation with details
//!   `{}`, as the embedded engine gives it (an autoreject has no `metadata` either);
//! - exit codes other than 0 and 1, a signal, or exit 1 with no output are [`RunError::Failed`];
//! - the timeout is [`RunError::Timeout`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use gatekeeper_engine::result::{ADMISSION_TARGET, AUTOREJECT_PREFIX, cel_message_is_error};
use gatekeeper_engine::{ConstraintRef, ObjectRef, ReviewResult};
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

/// The default limit on one gator run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The `PATH` gator is given unless the environment is overridden.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Longest excerpt of gator's stderr or stdout kept in an error.
const EXCERPT_CHARS: usize = 2000;

/// Why a gator run gave no usable results. The message says which, for a skipped run's reason.
#[derive(Debug, Error)]
pub enum RunError {
    /// The process could not be started.
    #[error("gator could not be started ({binary})")]
    Spawn {
        /// The binary's path.
        binary: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the process or reading its output failed.
    #[error("gator output could not be read")]
    Io(#[source] std::io::Error),
    /// The run took longer than the timeout and was killed.
    #[error("gator timed out after {}s and was killed", after.as_secs_f64())]
    Timeout {
        /// The limit.
        after: Duration,
    },
    /// gator printed a warning on stderr (e.g. a resource defined twice).
    #[error("gator warning: {line}")]
    Warning {
        /// The first warning line.
        line: String,
    },
    /// gator failed: stderr text, an unexpected exit code, or a signal.
    #[error("gator error ({status}): {stderr}")]
    Failed {
        /// `exit N` or `signal N`.
        status: String,
        /// stderr (trimmed, capped), or a note when it was empty.
        stderr: String,
    },
    /// stdout is neither `null` nor a JSON array of results.
    #[error("gator printed non-JSON output: {excerpt}")]
    NonJson {
        /// The start of stdout.
        excerpt: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

/// What a finished gator process left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOutput {
    /// The exit code, `None` when killed by a signal.
    pub code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Everything written to stdout.
    pub stdout: Vec<u8>,
    /// Everything written to stderr.
    pub stderr: Vec<u8>,
}

/// How to run one gator binary.
#[derive(Debug, Clone)]
pub struct GatorRunner {
    binary: PathBuf,
    timeout: Duration,
    k8s_native_validation: Option<bool>,
    env: BTreeMap<String, String>,
}

impl GatorRunner {
    /// A runner for `binary` with the default timeout, no `--enable-k8s-native-validation` flag
    /// (gator's default, true) and an environment of only `PATH`.
    pub fn new(binary: impl Into<PathBuf>) -> GatorRunner {
        GatorRunner {
            binary: binary.into(),
            timeout: DEFAULT_TIMEOUT,
            k8s_native_validation: None,
            env: BTreeMap::from([("PATH".to_string(), DEFAULT_PATH.to_string())]),
        }
    }

    /// Sets the timeout after which gator is killed.
    pub fn with_timeout(mut self, timeout: Duration) -> GatorRunner {
        self.timeout = timeout;
        self
    }

    /// Passes `--enable-k8s-native-validation=<value>` (`None`: no flag, gator's default).
    pub fn with_k8s_native_validation(mut self, value: Option<bool>) -> GatorRunner {
        self.k8s_native_validation = value;
        self
    }

    /// Adds (or replaces) one environment variable of gator's otherwise empty environment.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> GatorRunner {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Gives gator `HOME=<dir>` (the report's work dir), so nothing it might write lands in the
    /// invoking user's home. The current directory is left alone, so relative inputs still work.
    pub fn with_work_dir(mut self, dir: impl Into<PathBuf>) -> GatorRunner {
        let dir: PathBuf = dir.into();
        self.env
            .insert("HOME".to_string(), dir.display().to_string());
        self
    }

    /// The binary this runner starts.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The arguments for reviewing `input` (a file or directory).
    pub fn args(&self, input: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "test".into(),
            "-f".into(),
            input.as_os_str().to_owned(),
            "-o".into(),
            "json".into(),
        ];
        if let Some(value) = self.k8s_native_validation {
            args.push(format!("--enable-k8s-native-validation={value}").into());
        }
        args
    }

    /// Runs `gator test` on `input` and interprets the output.
    pub fn test(&self, input: &Path) -> Result<Vec<ReviewResult>, RunError> {
        interpret(&self.run(input)?)
    }

    /// Runs `gator test` on `input` and returns what it printed, without interpreting it.
    pub fn run(&self, input: &Path) -> Result<RawOutput, RunError> {
        let mut command = Command::new(&self.binary);
        command
            .args(self.args(input))
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = spawn(&mut command, &self.binary)?;
        let stdout = child.stdout.take().map(read_on_thread);
        let stderr = child.stderr.take().map(read_on_thread);
        let status = wait_with_timeout(&mut child, self.timeout);
        // Whatever happened, nothing of gator's process group may outlive the run (a child that
        // kept the pipes open would otherwise block the readers).
        kill_group(&child);
        let status = match status {
            Ok(Some(status)) => status,
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout {
                    after: self.timeout,
                });
            }
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Io(error));
            }
        };
        let stdout = join(stdout)?;
        let stderr = join(stderr)?;
        Ok(RawOutput {
            code: status.code(),
            signal: status.signal(),
            stdout,
            stderr,
        })
    }
}

/// Starts the command, retrying briefly on `ETXTBSY` (a binary just written by this process can
/// be momentarily busy while another thread forks).
fn spawn(command: &mut Command, binary: &Path) -> Result<Child, RunError> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Ok(child) => return Ok(child),
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 50 =>
            {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(source) => {
                return Err(RunError::Spawn {
                    binary: binary.display().to_string(),
                    source,
                });
            }
        }
    }
}

fn read_on_thread<R: Read + Send + 'static>(
    mut pipe: R,
) -> std::thread::JoinHandle<std::io::Result<Vec<u8>>> {
    std::thread::spawn(move || {
        let mut buffer = Vec::new();
        pipe.read_to_end(&mut buffer)?;
        Ok(buffer)
    })
}

fn join(
    handle: Option<std::thread::JoinHandle<std::io::Result<Vec<u8>>>>,
) -> Result<Vec<u8>, RunError> {
    match handle {
        None => Ok(Vec::new()),
        Some(handle) => handle
            .join()
            .map_err(|_| RunError::Io(std::io::Error::other("output reader panicked")))?
            .map_err(RunError::Io),
    }
}

/// `Ok(None)` when the timeout passed first.
fn wait_with_timeout(child: &mut Child, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    // A timeout too long for the clock to add means "no deadline", never a panic.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if deadline.is_some_and(|deadline| now >= deadline) {
            return Ok(None);
        }
        let left = deadline.map_or(Duration::MAX, |deadline| deadline - now);
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}

fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Interprets a finished run as `docs/gator-cli.md` describes gator (see the module docs).
pub fn interpret(output: &RawOutput) -> Result<Vec<ReviewResult>, RunError> {
    let status = match (output.code, output.signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown status".to_string(),
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        if let Some(line) = stderr.lines().find(|line| line.contains("WARNING")) {
            return Err(RunError::Warning {
                line: excerpt(line.trim()),
            });
        }
        return Err(RunError::Failed {
            status,
            stderr: excerpt(stderr),
        });
    }
    if !matches!(output.code, Some(0 | 1)) {
        return Err(RunError::Failed {
            status,
            stderr: "(stderr empty)".to_string(),
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.code == Some(1) && stdout.trim().is_empty() {
        return Err(RunError::Failed {
            status,
            stderr: "(stderr and stdout empty)".to_string(),
        });
    }
    parse_results(&stdout)
}

/// Parses `gator test -o json` output: `null` (no results) or an array of results.
pub fn parse_results(stdout: &str) -> Result<Vec<ReviewResult>, RunError> {
    let parsed: Option<Vec<GatorResult>> =
        serde_json::from_str(stdout).map_err(|source| RunError::NonJson {
            excerpt: excerpt(stdout.trim()),
            source,
        })?;
    Ok(parsed
        .unwrap_or_default()
        .into_iter()
        .map(GatorResult::into_review_result)
        .collect())
}

fn excerpt(text: &str) -> String {
    if text.chars().count() <= EXCERPT_CHARS {
        text.to_string()
    } else {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    }
}

/// One element of gator's JSON output (`docs/gator-cli.md`, "Output").
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GatorResult {
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    constraint: Option<Value>,
    #[serde(default)]
    enforcement_action: Option<String>,
    #[serde(default)]
    scoped_actions: Vec<String>,
    #[serde(default)]
    violating_object: Value,
}

impl GatorResult {
    fn into_review_result(self) -> ReviewResult {
        let constraint = self.constraint.unwrap_or(Value::Null);
        let enforcement_action = self
            .enforcement_action
            .or_else(|| str_at(&constraint, &["spec", "enforcementAction"]).map(String::from))
            .unwrap_or_default();
        let details = match &self.metadata {
            Some(Value::Object(metadata)) => match metadata.get("details") {
                None | Some(Value::Null) => None,
                Some(details) => Some(canonical_json(details)),
            },
            _ => None,
        };
        let object = &self.violating_object;
        let mut result = ReviewResult {
            target: self.target.unwrap_or_else(|| ADMISSION_TARGET.to_string()),
            msg: self.msg,
            details,
            constraint: ConstraintRef {
                kind: str_at(&constraint, &["kind"])
                    .unwrap_or_default()
                    .to_string(),
                name: str_at(&constraint, &["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
                enforcement_action,
                scoped_actions: self.scoped_actions,
            },
            object: ObjectRef {
                api_version: str_at(object, &["apiVersion"])
                    .unwrap_or_default()
                    .to_string(),
                kind: str_at(object, &["kind"]).unwrap_or_default().to_string(),
                namespace: str_at(object, &["metadata", "namespace"])
                    .filter(|ns| !ns.is_empty())
                    .map(String::from),
                name: str_at(object, &["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
            },
        };
        if self.metadata.is_none() {
            let own = result.own_message();
            if !own.starts_with(AUTOREJECT_PREFIX) && !cel_message_is_error(own) {
                result.details = Some("{}".to_string());
            }
        }
        result
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
}

/// `value` as compact JSON with object keys sorted at every level.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_too_long_for_the_clock_is_no_deadline_not_a_panic() {
        let mut child = Command::new("true").spawn().expect("spawn true");
        let status = wait_with_timeout(&mut child, Duration::MAX).expect("wait");
        assert!(status.is_some_and(|s| s.success()));
    }
}
