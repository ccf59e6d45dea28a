//! Located admission findings rendered for CI: `sarif` (SARIF 2.1.0 for code scanning), `junit`
//! (JUnit XML for test reports) and `github` (GitHub Actions workflow commands).
//!
//! Pure: a [`CiReport`] in — per region, each manifest with the findings against it, each finding
//! pointing at a file and, when known, a line — and text out. Who attributes findings to
//! manifests and lines is the caller's business (`jobcheck`'s `ci` module), so any consumer that
//! has located findings (an admission webhook, another checker) can print the same formats.

pub mod github;
pub mod junit;
pub mod sarif;

use admission_core::Verdict;

/// Where a finding points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The manifest file as given, `-` for stdin.
    pub file: String,
    /// The 1-based line, when it could be found.
    pub line: Option<usize>,
}

impl std::fmt::Display for Location {
    /// `file:line`, or the file alone when the line is not known.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// An issue: the region would reject the manifest.
    Error,
    /// An advisory warning: the region admits it, the cluster may still refuse its pods.
    Warning,
}

/// One issue or warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The check (`images`, `limit_range`, …).
    pub check: String,
    /// Error or warning.
    pub level: Level,
    /// The reference's message text.
    pub message: String,
    /// Where it points.
    pub location: Location,
}

/// One mapping manifest and what a region found in it.
#[derive(Debug, Clone)]
pub struct ManifestCase {
    /// Its `Kind/name` label.
    pub label: String,
    /// Where the manifest starts.
    pub location: Location,
    /// The region's findings, issues first.
    pub findings: Vec<Finding>,
}

/// One region's outcome.
#[derive(Debug, Clone)]
pub struct RegionCases {
    /// The region.
    pub region: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// Why it could not be read (`unknown` only).
    pub reason: Option<String>,
    /// Every mapping manifest, in order (without findings for an unreadable region).
    pub manifests: Vec<ManifestCase>,
    /// Findings about several manifests together (namespace totals over a ResourceQuota).
    pub together: Vec<Finding>,
}

/// Everything the CI formats print.
#[derive(Debug, Clone)]
pub struct CiReport {
    /// One entry per region, in the order read.
    pub regions: Vec<RegionCases>,
    /// Cross-region drift, one line per field (`max_gpu_count: us-east-1: 16, us-east-2: 8`).
    pub drift: Vec<String>,
}
