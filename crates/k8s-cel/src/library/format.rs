//! Kubernetes' format library: `format.named(name)`, one constructor per named format
//! (`format.dns1123Label()`, …) and `<Format>.validate(string)`, which is `optional.none()` for a
//! valid string and `optional.of([errors])` otherwise, with apimachinery's error texts.
//!
//! Provided: `dns1123Label`, `dns1123Subdomain`, `dns1035Label`, `qualifiedName`,
//! `dns1123LabelPrefix`, `dns1123SubdomainPrefix`, `dns1035LabelPrefix`, `labelValue`. Not
//! provided: `uri`, `uuid`, `byte`, `date`, `datetime` (their constructors are unknown functions,
//! and `format.named` of their names is an error saying so).

use super::{Outcome, fail, opaque_val, string_arg, take, typed_arg};
use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env};
use regex::Regex;
use std::sync::LazyLock;

/// The CEL type of a named format.
pub(crate) static FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

/// The formats Kubernetes names that this library does not provide.
pub(crate) const UNSUPPORTED_FORMATS: [&str; 5] = ["uri", "uuid", "byte", "date", "datetime"];

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// A whole-string pattern. The patterns are constants a test compiles; were one ever invalid,
/// every value would fail the format rather than the process abort.
struct Anchored(LazyLock<Option<Regex>>);

impl Anchored {
    const fn new(init: fn() -> Option<Regex>) -> Anchored {
        Anchored(LazyLock::new(init))
    }

    fn is_match(&self, value: &str) -> bool {
        self.0.as_ref().is_some_and(|re| re.is_match(value))
    }
}

fn anchored(fmt: &str) -> Option<Regex> {
    Regex::new(&format!("^{fmt}$")).ok()
}

static DNS1123_LABEL: Anchored = Anchored::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: Anchored = Anchored::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: Anchored = Anchored::new(|| anchored(DNS1035_LABEL_FMT));
static QUALIFIED_NAME: Anchored = Anchored::new(|| anchored(QUALIFIED_NAME_FMT));
static LABEL_VALUE: Anchored = Anchored::new(|| anchored(LABEL_VALUE_FMT));

/// The formats this library provides, by their Kubernetes names.
pub(crate) const FORMATS: [&str; 8] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
];

/// A named format.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NamedFormat(&'static str);

/// apimachinery's `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join("or ")
    )
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !DNS1035_LABEL.is_match(value) {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !LABEL_VALUE.is_match(value) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// apimachinery's `maskTrailingDash` (which drops two characters before appending `a`).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_owned()
}

impl NamedFormat {
    /// The errors of `value` under this format; empty when it is valid.
    pub(crate) fn validate(&self, value: &str) -> Vec<String> {
        match self.0 {
            "dns1123Label" => dns1123_label(value),
            "dns1123Subdomain" => dns1123_subdomain(value),
            "dns1035Label" => dns1035_label(value),
            "qualifiedName" => qualified_name(value),
            "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(value)),
            "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(value)),
            "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(value)),
            _ => label_value(value),
        }
    }
}

opaque_val!(NamedFormat, FORMAT_TYPE);

/// Registers `format.named`, one constructor per provided format, and `validate`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(FORMAT_TYPE.to_owned())?;
    env.add_overload("format.named", "k8s_format_named", vec![STRING_TYPE], named)?;
    for (name, constructor) in FORMATS.iter().zip(CONSTRUCTORS) {
        env.add_overload(
            &format!("format.{name}"),
            &format!("k8s_format_{name}"),
            vec![],
            constructor,
        )?;
    }
    env.add_member_overload(
        "validate",
        "k8s_format_validate",
        FORMAT_TYPE.to_owned(),
        vec![STRING_TYPE],
        validate,
    )
}

type Constructor = for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v>;

macro_rules! constructors {
    ($($index:literal),*) => {
        [$(|_args| Ok(CowVal::owned(NamedFormat(FORMATS[$index])))),*]
    };
}

/// One constructor per entry of [`FORMATS`], in the same order.
const CONSTRUCTORS: [Constructor; 8] = constructors!(0, 1, 2, 3, 4, 5, 6, 7);

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [name] = take("format.named", args)?;
    let name = string_arg("format.named", name.as_ref())?;
    if UNSUPPORTED_FORMATS.contains(&name) {
        return Err(fail(
            "format.named",
            format!("the format {name:?} is not provided by this engine"),
        ));
    }
    let found = FORMATS.iter().find(|f| **f == name);
    let optional = match found {
        Some(format) => CelOptional::of(Box::new(NamedFormat(format))),
        None => CelOptional::none(),
    };
    Ok(CowVal::owned(optional))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [format, value] = take("validate", args)?;
    let format = typed_arg::<NamedFormat>("validate", format.as_ref())?;
    let errors = format.validate(string_arg("validate", value.as_ref())?);
    if errors.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let errors: Vec<Box<dyn Val + 'v>> = errors
        .into_iter()
        .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        errors,
    )))))
}
