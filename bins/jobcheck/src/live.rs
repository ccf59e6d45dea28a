//! Live regions: which regions file to read, which regions to select, and the concurrent read of
//! their deployed policies through `policy-client` (with the pending-regions line on a terminal).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use admission_core::RegionPolicy;
use anyhow::anyhow;
use policy_client::{PolicyClient, Region, RegionsConfig, RegionsFileError};

use crate::check::CheckError;

/// The regions file read when neither `--regions-file` nor `JOBCHECK_REGIONS_FILE` names one.
pub(crate) const DEFAULT_REGIONS_FILE: &str = "jobcheck.yaml";

/// The environment variable that names the regions file.
pub(crate) const REGIONS_FILE_ENV: &str = "JOBCHECK_REGIONS_FILE";

/// Where the regions file comes from, and whether the user named it.
#[derive(Debug, Clone)]
pub(crate) struct RegionsFileChoice {
    path: PathBuf,
    explicit: bool,
}

impl RegionsFileChoice {
    /// `--regions-file`, else `JOBCHECK_REGIONS_FILE`, else `./jobcheck.yaml`.
    pub(crate) fn new(flag: Option<PathBuf>) -> RegionsFileChoice {
        // An empty JOBCHECK_REGIONS_FILE (a CI variable left blank) counts as unset; read here
        // rather than by clap, which refuses an empty value.
        let from_env = || std::env::var_os(REGIONS_FILE_ENV).map(PathBuf::from);
        match flag
            .or_else(from_env)
            .filter(|path| !path.as_os_str().is_empty())
        {
            Some(path) => RegionsFileChoice {
                path,
                explicit: true,
            },
            None => RegionsFileChoice {
                path: PathBuf::from(DEFAULT_REGIONS_FILE),
                explicit: false,
            },
        }
    }

    /// Whether the user named a regions file (flag or environment).
    pub(crate) fn is_explicit(&self) -> bool {
        self.explicit
    }

    /// Reads and validates the regions file; any problem is a usage error naming the file.
    pub(crate) fn load(&self) -> Result<RegionsConfig, CheckError> {
        if !self.explicit && !self.path.exists() {
            return Err(CheckError::Usage(format!(
                "no regions: give --policy-file REGION=FILE, or a regions file with --regions-file, \
                 JOBCHECK_REGIONS_FILE or ./{DEFAULT_REGIONS_FILE}"
            )));
        }
        RegionsConfig::load(&self.path).map_err(|error| match error {
            // A read error names the path already.
            RegionsFileError::Read(_) => CheckError::Usage(chain(error)),
            _ => CheckError::Usage(format!("{}: {}", self.path.display(), chain(error))),
        })
    }
}

/// The selected live regions (`-r`, de-duplicated keeping the first; all in file order without).
pub(crate) fn select(
    config: &RegionsConfig,
    requested: &[String],
) -> Result<Vec<Region>, CheckError> {
    config
        .select(requested)
        .map_err(|error| CheckError::Usage(error.to_string()))
}

/// A client for the regions file's auth, timeouts and trust roots.
pub(crate) fn client(config: &RegionsConfig) -> Result<PolicyClient, CheckError> {
    PolicyClient::new(config).map_err(|error| CheckError::Usage(chain(error)))
}

/// Reads every selected region's policy concurrently, in selection order. `show_progress` draws
/// the still-pending regions on stderr once the read takes over a second.
pub(crate) fn read_policies(
    client: &PolicyClient,
    regions: &[Region],
    show_progress: bool,
) -> Result<Vec<RegionPolicy>, CheckError> {
    let mut stderr = std::io::stderr();
    let mut progress = |pending: &[String]| {
        if !show_progress {
            return;
        }
        // `\r` + erase-line keeps one status line that the final empty call clears.
        let _ = if pending.is_empty() {
            write!(stderr, "\r\x1b[K")
        } else {
            write!(stderr, "\r\x1b[K  waiting for: {}", pending.join(", "))
        };
        let _ = stderr.flush();
    };
    client
        .fetch_region_policies_blocking(regions, &mut progress)
        .map_err(|error| CheckError::Failed(anyhow!(chain(error))))
}

/// Whether a progress line may be drawn: a table going to a terminal.
pub(crate) fn progress_allowed(table_output: bool) -> bool {
    table_output && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// An error and its causes on one line (`a: b: c`).
pub(crate) fn chain(error: impl std::error::Error + Send + Sync + 'static) -> String {
    format!("{:#}", anyhow::Error::new(error))
}
