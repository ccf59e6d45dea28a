//! The daily workload report pipeline: configuration, counting, audit cross-check and run status.
