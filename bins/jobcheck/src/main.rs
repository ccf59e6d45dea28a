//! `jobcheck`: which regions would admit these job manifests, and do the regions still agree?

fn main() {}
