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
        // `'k' in s` with a string `s`: cel-go has no such overload of `@in`; ours tests for a
        // substring, so the expression goes on (and fails later, or passes).
        name: "CEL: `in` with a string on the right evaluates in ours",
        matches: |d| {
            d.cel
                && d.gator.iter().any(|m| m.ends_with("no such overload"))
                && any(&d.ours, "no such key")
        },
    },
    Class {
        // Both operands of `&&` / `||` fail: cel-go reports the left operand's error, ours the
        // right one's.
        name: "CEL: of two failing operands of a logical operator, ours reports the other one",
        matches: |d| {
            d.cel
                && any(&d.gator, "no such overload: _")
                && any(&d.ours, "no such overload: _")
                && any(&d.gator, "&&")
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
        // A README known difference: Go prints float64 numbers >= 1e6 in exponent form
        // (`1e+06`, `9.007199254740992e+15`).
        name: "numbers >= 1e6 print as 1e+06 in gator",
        matches: |d| any(&d.gator, "e+") && !any(&d.ours, "e+"),
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
