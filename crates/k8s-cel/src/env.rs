//! The CEL environment: cel-rust's standard library and its strings and lists extensions, the
//! Kubernetes libraries, the metering functions, built once; and the catalogue of the functions
//! a Gatekeeper template may call (what Kubernetes 1.34's base environment declares, as the
//! `gator` of Gatekeeper v3.21.1 builds it), split into those provided and those not.

use crate::{budget, library};
use cel::Env;
use std::sync::{Arc, OnceLock};

/// The shared environment; `None` if building it failed (a declaration conflict, which the
/// crate's tests rule out), reported as an error at compile time rather than a panic.
pub(crate) fn shared() -> Option<Arc<Env>> {
    static ENV: OnceLock<Option<Arc<Env>>> = OnceLock::new();
    ENV.get_or_init(|| build().ok().map(Arc::new)).clone()
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    budget::register(&mut env)?;
    crate::access::register(&mut env)?;
    // Before cel's strings extension: the guarded `replace`/`join` must be found first.
    library::register(&mut env)?;
    env.add_extension(cel::extensions::strings)?;
    env.add_extension(cel::extensions::lists)?;
    Ok(env)
}

/// How a function is called.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `f(x)`, or `ns.f(x)` for a namespaced function.
    Global,
    /// `x.f()`.
    Member,
}

/// `(name, style, argument counts)`: the functions templates may call and this crate provides.
/// Argument counts exclude a member call's receiver.
pub(crate) const PROVIDED: &[(&str, Style, &[usize])] = &[
    // CEL standard library
    ("size", Style::Global, &[1]),
    ("size", Style::Member, &[0]),
    ("int", Style::Global, &[1]),
    ("uint", Style::Global, &[1]),
    ("double", Style::Global, &[1]),
    ("string", Style::Global, &[1]),
    ("bytes", Style::Global, &[1]),
    ("bool", Style::Global, &[1]),
    ("dyn", Style::Global, &[1]),
    ("type", Style::Global, &[1]),
    ("duration", Style::Global, &[1]),
    ("timestamp", Style::Global, &[1]),
    ("matches", Style::Global, &[2]),
    ("matches", Style::Member, &[1]),
    ("contains", Style::Member, &[1]),
    ("startsWith", Style::Member, &[1]),
    ("endsWith", Style::Member, &[1]),
    ("getFullYear", Style::Member, &[0, 1]),
    ("getMonth", Style::Member, &[0, 1]),
    ("getDayOfYear", Style::Member, &[0, 1]),
    ("getDayOfMonth", Style::Member, &[0, 1]),
    ("getDate", Style::Member, &[0, 1]),
    ("getDayOfWeek", Style::Member, &[0, 1]),
    ("getHours", Style::Member, &[0, 1]),
    ("getMinutes", Style::Member, &[0, 1]),
    ("getSeconds", Style::Member, &[0, 1]),
    ("getMilliseconds", Style::Member, &[0, 1]),
    // optional types
    ("optional.of", Style::Global, &[1]),
    ("optional.ofNonZeroValue", Style::Global, &[1]),
    ("optional.none", Style::Global, &[0]),
    ("hasValue", Style::Member, &[0]),
    ("value", Style::Member, &[0]),
    ("orValue", Style::Member, &[1]),
    ("or", Style::Member, &[1]),
    // strings extension (version 2)
    ("charAt", Style::Member, &[1]),
    ("indexOf", Style::Member, &[1, 2]),
    ("lastIndexOf", Style::Member, &[1, 2]),
    ("lowerAscii", Style::Member, &[0]),
    ("upperAscii", Style::Member, &[0]),
    ("replace", Style::Member, &[2, 3]),
    ("split", Style::Member, &[1, 2]),
    ("substring", Style::Member, &[1, 2]),
    ("trim", Style::Member, &[0]),
    ("join", Style::Member, &[0, 1]),
    ("format", Style::Member, &[1]),
    ("strings.quote", Style::Global, &[1]),
    // Kubernetes list library and the lists extension (version 3)
    ("isSorted", Style::Member, &[0]),
    ("sum", Style::Member, &[0]),
    ("min", Style::Member, &[0]),
    ("max", Style::Member, &[0]),
    ("slice", Style::Member, &[2]),
    ("flatten", Style::Member, &[0, 1]),
    ("distinct", Style::Member, &[0]),
    ("reverse", Style::Member, &[0]),
    ("sort", Style::Member, &[0]),
    ("@sortByAssociatedKeys", Style::Member, &[1]),
    ("lists.range", Style::Global, &[1]),
    // regex
    ("find", Style::Member, &[1]),
    ("findAll", Style::Member, &[1, 2]),
    // quantity
    ("quantity", Style::Global, &[1]),
    ("isQuantity", Style::Global, &[1]),
    ("sign", Style::Global, &[1]),
    ("isInteger", Style::Member, &[0]),
    ("asInteger", Style::Member, &[0]),
    ("asApproximateFloat", Style::Member, &[0]),
    ("add", Style::Member, &[1]),
    ("sub", Style::Member, &[1]),
    ("isGreaterThan", Style::Member, &[1]),
    ("isLessThan", Style::Member, &[1]),
    ("compareTo", Style::Member, &[1]),
    // URLs
    ("url", Style::Global, &[1]),
    ("isURL", Style::Global, &[1]),
    ("getScheme", Style::Member, &[0]),
    ("getHost", Style::Member, &[0]),
    ("getHostname", Style::Member, &[0]),
    ("getPort", Style::Member, &[0]),
    ("getEscapedPath", Style::Member, &[0]),
    ("getQuery", Style::Member, &[0]),
    // IP and CIDR
    ("ip", Style::Global, &[1]),
    ("isIP", Style::Global, &[1]),
    ("ip.isCanonical", Style::Global, &[1]),
    ("family", Style::Member, &[0]),
    ("isUnspecified", Style::Member, &[0]),
    ("isLoopback", Style::Member, &[0]),
    ("isLinkLocalMulticast", Style::Member, &[0]),
    ("isLinkLocalUnicast", Style::Member, &[0]),
    ("isGlobalUnicast", Style::Member, &[0]),
    ("cidr", Style::Global, &[1]),
    ("isCIDR", Style::Global, &[1]),
    ("containsIP", Style::Member, &[1]),
    ("containsCIDR", Style::Member, &[1]),
    ("ip", Style::Member, &[0]),
    ("masked", Style::Member, &[0]),
    ("prefixLength", Style::Member, &[0]),
    // format
    ("format.named", Style::Global, &[1]),
    ("format.dns1123Label", Style::Global, &[0]),
    ("format.dns1123Subdomain", Style::Global, &[0]),
    ("format.dns1035Label", Style::Global, &[0]),
    ("format.qualifiedName", Style::Global, &[0]),
    ("format.dns1123LabelPrefix", Style::Global, &[0]),
    ("format.dns1123SubdomainPrefix", Style::Global, &[0]),
    ("format.dns1035LabelPrefix", Style::Global, &[0]),
    ("format.labelValue", Style::Global, &[0]),
    ("validate", Style::Member, &[1]),
    // sets extension
    ("sets.contains", Style::Global, &[2]),
    ("sets.equivalent", Style::Global, &[2]),
    ("sets.intersects", Style::Global, &[2]),
];

/// Functions and macros Kubernetes declares for Gatekeeper's templates that this crate does not
/// provide: `(name, style, argument counts, what it is)`. Using one is a compile error naming it.
pub(crate) const NOT_PROVIDED: &[(&str, Style, &[usize], &str)] = &[
    (
        "first",
        Style::Member,
        &[0],
        "function 'first' (lists extension v3)",
    ),
    (
        "last",
        Style::Member,
        &[0],
        "function 'last' (lists extension v3)",
    ),
    (
        "all",
        Style::Member,
        &[3],
        "two-variable comprehension 'all'",
    ),
    (
        "exists",
        Style::Member,
        &[3],
        "two-variable comprehension 'exists'",
    ),
    (
        "existsOne",
        Style::Member,
        &[3],
        "two-variable comprehension 'existsOne'",
    ),
    (
        "exists_one",
        Style::Member,
        &[3],
        "two-variable comprehension 'exists_one'",
    ),
    (
        "transformList",
        Style::Member,
        &[3, 4],
        "two-variable comprehension 'transformList'",
    ),
    (
        "transformMap",
        Style::Member,
        &[3, 4],
        "two-variable comprehension 'transformMap'",
    ),
    (
        "transformMapEntry",
        Style::Member,
        &[3, 4],
        "two-variable comprehension 'transformMapEntry'",
    ),
    (
        "semver",
        Style::Global,
        &[1, 2],
        "function 'semver' (semver library)",
    ),
    (
        "isSemver",
        Style::Global,
        &[1, 2],
        "function 'isSemver' (semver library)",
    ),
    (
        "major",
        Style::Member,
        &[0],
        "function 'major' (semver library)",
    ),
    (
        "minor",
        Style::Member,
        &[0],
        "function 'minor' (semver library)",
    ),
    (
        "patch",
        Style::Member,
        &[0],
        "function 'patch' (semver library)",
    ),
    (
        "format.uri",
        Style::Global,
        &[0],
        "function 'format.uri' (format library)",
    ),
    (
        "format.uuid",
        Style::Global,
        &[0],
        "function 'format.uuid' (format library)",
    ),
    (
        "format.byte",
        Style::Global,
        &[0],
        "function 'format.byte' (format library)",
    ),
    (
        "format.date",
        Style::Global,
        &[0],
        "function 'format.date' (format library)",
    ),
    (
        "format.datetime",
        Style::Global,
        &[0],
        "function 'format.datetime' (format library)",
    ),
];

/// Namespaces of the namespaced functions above.
pub(crate) const NAMESPACES: &[&str] = &["optional", "strings", "lists", "sets", "format", "ip"];

/// Operators and the internal calls macro expansions produce.
pub(crate) fn is_operator(name: &str) -> bool {
    use cel::common::ast::operators as op;
    [
        op::CONDITIONAL,
        op::LOGICAL_AND,
        op::LOGICAL_OR,
        op::LOGICAL_NOT,
        op::SUBSTRACT,
        op::ADD,
        op::MULTIPLY,
        op::DIVIDE,
        op::MODULO,
        op::EQUALS,
        op::NOT_EQUALS,
        op::GREATER_EQUALS,
        op::LESS_EQUALS,
        op::GREATER,
        op::LESS,
        op::NEGATE,
        op::INDEX,
        op::OPT_INDEX,
        op::OPT_SELECT,
        op::NOT_STRICTLY_FALSE,
        op::IN,
    ]
    .contains(&name)
}
