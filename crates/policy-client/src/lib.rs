//! Reads every region's deployed job-validation policy (`GET /api/v1/policy`) concurrently.
