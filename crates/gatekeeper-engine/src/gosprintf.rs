//! `sprintf` as OPA runs it: arguments converted as OPA's builtin converts them (integral
//! numbers to Go `int`s, or `*big.Int` past int64, other numbers to float64, strings as is,
//! every other value — null, booleans, collections — to the Go string of its Rego text), then
//! formatted with Go's `fmt` rules, including its error texts (`%!v(MISSING)`,
//! `%!(EXTRA string=null)`, `%!d(float64=3.5)`, `%!s(int=3)`, `%!d(string=true)`). regorus' own `sprintf` is undefined in
//! those cases, which drops violations a template meant to report (gatekeeper-library's
//! horizontalpodautoscaler has one verb too many), so this extension replaces it.
//!
//! Widths and precisions are parsed as Go parses them (a number that grows past 10^6 while its
//! digits are read gives up, and the rest of the format is `%!(NOVERB)`), and the output is
//! capped at [`crate::limits::MAX_TEXT`]: a width, a precision or a result over it is an
//! evaluation error instead of gigabytes of padding. Rust's formatter refuses precisions past
//! [`MAX_PRECISION`] (it panics), so a longer precision is formatted at that one and extended
//! with the zeros Go prints (a float64's exact decimal expansion ends long before).

use regorus::Value;

use crate::limits::{LimitExceeded, MAX_TEXT};

/// The built-in this extension replaces.
pub(crate) const NAME: &str = "sprintf";

fn too_long(what: String) -> LimitExceeded {
    LimitExceeded {
        builtin: NAME,
        what,
        limit: format!("{MAX_TEXT} bytes"),
    }
}

/// Go's `parsenum`: the number at the start of `chars`, giving up (no number, all of the input
/// consumed) once it grows past 10^6 while digits remain.
fn parse_number(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<usize> {
    const TOO_LARGE: usize = 1_000_000;
    let mut number: Option<usize> = None;
    while let Some(digit) = chars.peek().and_then(|c| c.to_digit(10)) {
        let so_far = number.unwrap_or(0);
        if so_far > TOO_LARGE {
            chars.for_each(drop);
            return None;
        }
        number = Some(so_far * 10 + digit as usize);
        chars.next();
    }
    number
}

/// The largest precision Rust's `format!` takes (`u16::MAX`).
const MAX_PRECISION: usize = u16::MAX as usize;

enum Arg {
    Int(i128),
    Float(f64),
    Str(String),
}

fn convert(value: &Value) -> Arg {
    match value {
        Value::Number(n) => {
            if n.is_integer()
                && let Some(i) = n.as_i128()
            {
                return Arg::Int(i);
            }
            Arg::Float(n.as_f64().unwrap_or(f64::NAN))
        }
        Value::String(s) => Arg::Str(s.to_string()),
        other => Arg::Str(rego_text(other)),
    }
}

/// A value's Rego text (OPA's `ast.Value.String()`): JSON-like, `", "` and `": "` separators,
/// sets in braces (`set()` when empty).
pub(crate) fn rego_text(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => match convert(value) {
            Arg::Int(i) => i.to_string(),
            Arg::Float(f) => go_float(f),
            _ => String::new(),
        },
        Value::String(s) => serde_json::to_string(s.as_ref()).unwrap_or_default(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(rego_text).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Set(items) => {
            if items.is_empty() {
                "set()".to_string()
            } else {
                let parts: Vec<String> = items.iter().map(rego_text).collect();
                format!("{{{}}}", parts.join(", "))
            }
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", rego_text(k), rego_text(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Undefined => "undefined".to_string(),
    }
}

/// Go's `%v` of a float64 (`%g`, shortest digits): exponent form (`1e-05`, `1.5e+06`) when the
/// decimal exponent is < -4, or >= 6 for a non-integral value (integral values below 1e21 are
/// ints by the time they get here).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return "0".to_string();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..21).contains(&exp) || (exp >= 6 && f.fract() != 0.0) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

fn type_name(arg: &Arg) -> &'static str {
    match arg {
        Arg::Int(i) if i64::try_from(*i).is_ok() => "int",
        Arg::Int(_) => "*big.Int",
        Arg::Float(_) => "float64",
        Arg::Str(_) => "string",
    }
}

fn plain(arg: &Arg) -> String {
    match arg {
        Arg::Int(i) => i.to_string(),
        Arg::Float(f) => go_float(*f),
        Arg::Str(s) => s.clone(),
    }
}

/// `f` with `precision` digits after the point, past [`MAX_PRECISION`] too.
fn fixed(f: f64, precision: usize) -> String {
    let text = format!("{:.*}", precision.min(MAX_PRECISION), f);
    extend_zeros(text, f, precision, MAX_PRECISION, None)
}

/// `f` in Go's `%e` form with `precision` mantissa digits, past [`MAX_PRECISION`] too.
fn exponent(f: f64, precision: usize) -> String {
    // `{:.*e}` counts the leading digit too, so it takes one digit less.
    let cap = MAX_PRECISION - 1;
    let text = format!("{:.*e}", precision.min(cap), f);
    let (mantissa, e) = text.split_once('e').unwrap_or((&text, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let suffix = format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    extend_zeros(mantissa.to_string(), f, precision, cap, Some(suffix))
}

/// Appends the zeros a precision past the `cap` it was formatted with adds (only finite
/// values have digits), then `suffix`.
fn extend_zeros(
    mut text: String,
    f: f64,
    precision: usize,
    cap: usize,
    suffix: Option<String>,
) -> String {
    if precision > cap && f.is_finite() {
        text.push_str(&"0".repeat(precision - cap));
    }
    text.push_str(&suffix.unwrap_or_default());
    text
}

fn bad_verb(verb: char, arg: &Arg) -> String {
    format!("%!{verb}({}={})", type_name(arg), plain(arg))
}

fn format_one(verb: char, precision: Option<usize>, arg: &Arg) -> Result<String, LimitExceeded> {
    if let Some(p) = precision.filter(|p| *p > MAX_TEXT) {
        return Err(too_long(format!("a precision of {p}")));
    }
    Ok(match (verb, arg) {
        ('v', a) => plain(a),
        ('s', Arg::Str(_)) => plain(arg),
        // `*big.Int` formats itself: `%s` prints its digits.
        ('s', Arg::Int(i)) if i64::try_from(*i).is_err() => i.to_string(),
        ('d', Arg::Int(i)) => i.to_string(),
        ('q', Arg::Str(s)) => crate::gotext::go_quote(s),
        ('x', Arg::Int(i)) => format!("{i:x}"),
        ('X', Arg::Int(i)) => format!("{i:X}"),
        ('x', Arg::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
        ('f' | 'F', Arg::Float(f)) => fixed(*f, precision.unwrap_or(6)),
        ('e', Arg::Float(f)) => exponent(*f, precision.unwrap_or(6)),
        ('g', Arg::Float(f)) => go_float(*f),
        _ => bad_verb(verb, arg),
    })
}

fn pad(
    text: String,
    width: Option<usize>,
    left: bool,
    zero: bool,
) -> Result<String, LimitExceeded> {
    let Some(width) = width else {
        return Ok(text);
    };
    if width > MAX_TEXT {
        return Err(too_long(format!("a width of {width}")));
    }
    let len = text.chars().count();
    if len >= width {
        return Ok(text);
    }
    let fill = width - len;
    Ok(if left {
        format!("{text}{}", " ".repeat(fill))
    } else if zero {
        format!("{}{text}", "0".repeat(fill))
    } else {
        format!("{}{text}", " ".repeat(fill))
    })
}

/// Formats like OPA's `sprintf(format, args)`; fails when the output would pass
/// [`MAX_TEXT`].
pub(crate) fn sprintf(format: &str, args: &[Value]) -> Result<String, LimitExceeded> {
    let args: Vec<Arg> = args.iter().map(convert).collect();
    let mut out = String::new();
    let mut next = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut left, mut zero) = (false, false);
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let width = parse_number(&mut chars);
        let mut precision = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            precision = Some(parse_number(&mut chars).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(next) {
            None => out.push_str(&format!("%!{verb}(MISSING)")),
            Some(arg) => out.push_str(&pad(format_one(verb, precision, arg)?, width, left, zero)?),
        }
        next += 1;
        if out.len() > MAX_TEXT {
            return Err(too_long(format!("a result of over {} bytes", out.len())));
        }
    }
    if next < args.len() {
        let extra: Vec<String> = args[next..]
            .iter()
            .map(|a| format!("{}={}", type_name(a), plain(a)))
            .collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    if out.len() > MAX_TEXT {
        return Err(too_long(format!("a result of {} bytes", out.len())));
    }
    Ok(out)
}

/// The regorus extension: `__gk_sprintf(format, args)`; undefined unless `format` is a string
/// and `args` an array, as OPA's type checker would reject anything else.
pub(crate) fn extension(params: Vec<Value>) -> anyhow::Result<Value> {
    let (Some(Value::String(format)), Some(Value::Array(args))) = (params.first(), params.get(1))
    else {
        return Ok(Value::Undefined);
    };
    Ok(Value::from(sprintf(format, &args.to_vec())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: &str) -> Vec<Value> {
        match Value::from_json_str(json).unwrap() {
            Value::Array(items) => items.to_vec(),
            _ => unreachable!("test arrays only"),
        }
    }

    fn sprintf(format: &str, args: &[Value]) -> String {
        super::sprintf(format, args).unwrap()
    }

    #[test]
    fn widths_are_parsed_as_go_parses_them() {
        // Seven digits still make a width; the eighth gives up and drops the rest.
        assert_eq!(
            sprintf("%99999999d|tail", &v("[1]")),
            "%!(NOVERB)%!(EXTRA int=1)"
        );
        assert_eq!(
            sprintf("%.123456789012345678901f", &v("[1.5]")),
            "%!(NOVERB)%!(EXTRA float64=1.5)"
        );
        assert_eq!(sprintf("%.f", &v("[2.5]")), "2");
        assert_eq!(sprintf("%3.1f|", &v("[2.25]")), "2.2|");
    }

    #[test]
    fn huge_widths_and_outputs_are_errors() {
        let error = super::sprintf("%9999999d", &v("[1]")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "sprintf: a width of 9999999 exceeds the embedded engine's limit of 1048576 bytes"
        );
        assert!(super::sprintf("%.9999999f", &v("[1.5]")).is_err());
        let big = Value::from("x".repeat(600_000));
        assert!(super::sprintf("%s%s", &[big.clone(), big]).is_err());
    }

    #[test]
    fn go_fmt_error_texts() {
        assert_eq!(sprintf("%v %v", &v("[1]")), "1 %!v(MISSING)");
        assert_eq!(sprintf("%v", &v("[1, 2]")), "1%!(EXTRA int=2)");
        assert_eq!(sprintf("%d", &v("[3.5]")), "%!d(float64=3.5)");
        assert_eq!(sprintf("%s", &v("[3]")), "%!s(int=3)");
    }

    /// gator v3.21.1's answers: OPA hands null, booleans and collections to Go as the strings
    /// of their Rego text, integers past int64 as `*big.Int`.
    #[test]
    fn non_strings_are_converted_as_opa_converts_them() {
        assert_eq!(
            sprintf("%v %s %s %q %q", &v("[null, true, 0, null, true]")),
            "null true %!s(int=0) \"null\" \"true\""
        );
        assert_eq!(
            sprintf("%d %t %x", &v("[true, null, [1]]")),
            "%!d(string=true) %!t(string=null) 5b315d"
        );
        assert_eq!(
            sprintf("%v", &v("[1, [], null]")),
            "1%!(EXTRA string=[], string=null)"
        );
        assert_eq!(
            sprintf("%s %v", &v("[18446744073709551616, 18446744073709551616]")),
            "18446744073709551616 18446744073709551616"
        );
    }

    /// Rust's formatter panics past a precision of 65535; Go prints the zeros.
    #[test]
    fn precisions_past_rusts_limit_are_formatted_as_go_does() {
        let long = sprintf("%.70000f", &v("[1.5]"));
        assert_eq!(long.len(), 2 + 70_000);
        assert!(long.starts_with("1.5000") && long.ends_with('0'));
        let e = sprintf("%.70000e", &v("[1.5]"));
        assert_eq!(e.len(), 2 + 70_000 + 4);
        assert!(e.starts_with("1.5000") && e.ends_with("0e+00"));
        assert_eq!(sprintf("%.70000v", &v("[1.5]")), "1.5");
        assert!(super::sprintf("%.2000000f", &v("[1.5]")).is_err());
    }

    #[test]
    fn values_print_like_opa() {
        assert_eq!(
            sprintf("%v|%s|%d|%q|%v", &v(r#"["a", "b", 7, "q\"", true]"#)),
            "a|b|7|\"q\\\"\"|true"
        );
        assert_eq!(
            sprintf(
                "%v %v",
                &v(r#"[{"b": 1, "a": [true, null, "s"]}, [1, 2.5]]"#)
            ),
            r#"{"a": [true, null, "s"], "b": 1} [1, 2.5]"#
        );
        assert_eq!(
            sprintf("%v %v %v", &v("[0.1, 1500, 0.00001]")),
            "0.1 1500 1e-05"
        );
        assert_eq!(
            sprintf("%.2f%%|%5d|%-3v|", &v("[2.5, 42, 1]")),
            "2.50%|   42|1  |"
        );
    }
}
