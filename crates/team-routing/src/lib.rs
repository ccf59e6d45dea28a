//! Routes namespaces to their owning teams: ordered whole-name globs, first team wins.
