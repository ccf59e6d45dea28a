//! A server process with a lifetime: started under coreutils `timeout --signal=KILL` (the hard
//! upper bound, which holds even when the test process crashes), in a process group of its own
//! that is killed when the handle drops, with stdout and stderr captured to a log file whose tail
//! goes into every failure message.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a test server may live, whatever happens to the test.
pub const HARD_LIFETIME: Duration = Duration::from_secs(20 * 60);

/// How many log lines a failure message shows.
const TAIL_LINES: usize = 40;

/// A running server process; dropping it kills its whole process group.
#[derive(Debug)]
pub struct ServerProcess {
    name: String,
    child: Child,
    log: PathBuf,
}

/// Why a server did not become ready.
#[derive(Debug)]
pub struct NotReady {
    /// What happened (exited with…, not ready within…).
    pub what: String,
    /// The whole log so far.
    pub log: String,
}

impl NotReady {
    /// Whether the server failed because a port was taken (the caller picks new ports).
    pub fn port_taken(&self) -> bool {
        self.log.contains("address already in use")
    }
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; last log lines:\n{}", self.what, tail(&self.log))
    }
}

impl ServerProcess {
    /// Starts `program ARGS` in `dir`, logging to `dir/<name>.log`. Panics when it cannot start
    /// (a missing `timeout` or binary is a setup error).
    pub fn spawn(name: &str, program: &Path, args: &[OsString], dir: &Path) -> ServerProcess {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
        let err = out
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot share {}: {e}", log.display()));
        let child = Command::new("timeout")
            .arg("--signal=KILL")
            .arg(format!("{}s", HARD_LIFETIME.as_secs()))
            .arg(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {name} ({}) under coreutils `timeout`: {e}",
                    program.display()
                )
            });
        ServerProcess {
            name: name.to_string(),
            child,
            log,
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Everything the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Polls `probe` every 100 ms until it succeeds, the process exits or `within` passes.
    pub fn wait_ready(
        &mut self,
        within: Duration,
        mut probe: impl FnMut() -> Result<(), String>,
    ) -> Result<(), NotReady> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(self.not_ready(format!("{} exited with {status}", self.name)));
            }
            let last = match probe() {
                Ok(()) => return Ok(()),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                return Err(self.not_ready(format!(
                    "{} was not ready within {}s (last probe: {last})",
                    self.name,
                    within.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn not_ready(&self, what: String) -> NotReady {
        NotReady {
            what,
            log: self.log(),
        }
    }

    /// A panic message for a failure while the server runs: `what` and the log's tail.
    pub fn failure(&self, what: &str) -> String {
        format!(
            "{what}\n--- last lines of the {} log ---\n{}",
            self.name,
            tail(&self.log())
        )
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        use nix::sys::signal::{Signal, kill, killpg};
        use nix::unistd::Pid;
        // The server first, so `timeout` reaps it and exits (no zombie is left to init) ...
        for server in children(self.child.id()) {
            let _ = kill(Pid::from_raw(server), Signal::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // ... then whatever is left of the group.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child processes of `pid` (Linux `/proc`; empty when unreadable).
fn children(pid: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A port that was free a moment ago on 127.0.0.1 (servers that lose the race are restarted on
/// new ports by their callers, see [`NotReady::port_taken`]).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind a loopback port")
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// Starts a server with up to three attempts: `attempt` gets fresh ports each time and either
/// returns the ready server or why it is not; only a taken port is retried.
pub fn start_with_retries<T>(name: &str, mut attempt: impl FnMut() -> Result<T, NotReady>) -> T {
    let mut failures = Vec::new();
    for _ in 0..3 {
        match attempt() {
            Ok(server) => return server,
            Err(not_ready) if not_ready.port_taken() => failures.push(not_ready.what),
            Err(not_ready) => panic!("{name} did not start: {not_ready}"),
        }
    }
    panic!(
        "{name} did not start: a port was taken three times: {}",
        failures.join("; ")
    )
}
