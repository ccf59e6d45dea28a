//! GCO's front-door job admission checks as pure functions.
//!
//! This crate re-implements the checks of the GCO project's `gco/job_admission.py` and the
//! multi-region judgement of `cli/job_policy.py`: no HTTP, no cluster, no async.
