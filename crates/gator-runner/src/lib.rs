//! Fetches, verifies and runs the pinned `gator` binary, and puts both engines behind one
//! `Evaluator` interface.
