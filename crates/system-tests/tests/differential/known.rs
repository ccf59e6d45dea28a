//! The known differences between gator and the embedded engine, by class: each entry names
//! its class and says how a difference is recognised. Other work closes these classes; when a
//! class no longer occurs, remove its entry.

use crate::Difference;

/// A class of known differences.
pub(crate) struct Class {
    /// The class, as the figures name it.
    pub(crate) name: &'static str,
    /// Whether a difference belongs to the class.
    pub(crate) matches: fn(&Difference) -> bool,
}

fn any(messages: &[String], needle: &str) -> bool {
    messages.iter().any(|m| m.contains(needle))
}

/// The classes, checked in order.
pub(crate) const CLASSES: &[Class] = &[
    Class {
        // cel-go makes `x.f` on a missing key `no such key: f` and `has(x.f)` false on null
        // or absent receivers; ours fails the selection or index itself with an overload
        // error (issue 25 §3, first class), so a violation of gator's can be an error of ours.
        name: "CEL: field selection or index on null, a scalar or a missing key",
        matches: |d| {
            d.cel
                && (any(&d.ours, "found no matching overload for '_._'")
                    || any(&d.ours, "found no matching overload for '_[_]'"))
        },
    },
    Class {
        // Both fail; cel-go says `no such overload` (`no such overload: _+_`), ours names the
        // function and the operand values (`Unsupported binary operator 'add': Null, …`).
        name: "CEL: error texts (no such overload)",
        matches: |d| {
            d.cel
                && any(&d.gator, "no such overload")
                && (any(&d.ours, "found no matching overload")
                    || any(&d.ours, "Unsupported binary operator"))
        },
    },
    Class {
        // cel-go refuses `list + map` (`no such overload`); ours evaluates it without error.
        name: "CEL: an overload cel-go refuses (a list plus a map) evaluates in ours",
        matches: |d| {
            d.cel && any(&d.gator, "no such overload") && !any(&d.ours, "resulted in error")
        },
    },
    Class {
        // A README known difference: Go prints float64 numbers >= 1e6 as `1e+06`.
        name: "numbers >= 1e6 print as 1e+06 in gator",
        matches: |d| any(&d.gator, "e+0") && !any(&d.ours, "e+0"),
    },
    Class {
        // `some x in null` is undefined in OPA (the body fails), an evaluation error in ours.
        name: "Rego: `some .. in` over a non-collection is undefined in OPA",
        matches: |d| any(&d.ours, "`some .. in collection` expects array/set/object"),
    },
];

/// The first class `difference` belongs to.
pub(crate) fn class_of(difference: &Difference) -> Option<&'static str> {
    CLASSES
        .iter()
        .find(|class| (class.matches)(difference))
        .map(|class| class.name)
}
