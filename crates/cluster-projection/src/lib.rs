//! Reads Gatekeeper ConstraintTemplates, Constraints, Namespaces and workloads from a live
//! cluster or a snapshot, and writes the projection an evaluator reads.
