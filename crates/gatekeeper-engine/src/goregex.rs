//! Go's regular-expression syntax (RE2, as Go's `regexp` package accepts it) translated into
//! the syntax of the `regex` crate, so a pattern means what it means to gator and OPA.
//!
//! gator compiles `verify` assertion messages and `--run` filters with Go's `regexp`, and OPA's
//! `regex.match` uses it too. The two dialects mostly agree; where they differ, the translation
//! follows Go:
//!
//! - a `{` that does not start a valid repetition (`{n}`, `{n,}`, `{n,m}`, counts up to 1000)
//!   is a literal brace (`labels: {"foo"}`); a `}` outside a repetition is literal too;
//! - `\Q…\E` quotes literal text; octal escapes (`\0`, `\12`, `\123`) are characters;
//! - `\d`, `\s`, `\w`, `\b` and their negations are ASCII-only (the crate's are Unicode);
//! - in a character class, `[` is literal unless it opens `[:name:]`, and `&&`, `--`, `~~`
//!   are plain characters (the crate reads them as set operations);
//! - a repetition of a repetition (`a**`, `a{2}{3}`), a count over 1000, the flags `x`, `u` and
//!   `R`, and escapes Go does not know (`\u`, `\<`, `\Z`, a lone `\1`) are errors, as in Go.
//!
//! The translator only rewrites escapes, braces and classes; everything else is passed through
//! for the crate to parse, so any error the crate finds is reported as an invalid pattern too.

use std::fmt::Write;

/// Go's largest repetition count.
const MAX_REPEAT: u32 = 1000;

/// Why Go rejects a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error parsing regexp: {0}")]
pub struct GoRegexError(String);

/// Compiles a Go regular expression (unanchored, as `regexp.MatchString` uses it).
pub fn compile(pattern: &str) -> Result<regex::Regex, GoRegexError> {
    compile_with_limit(pattern, None)
}

/// [`compile`] with a cap on the compiled program's size.
pub(crate) fn compile_with_limit(
    pattern: &str,
    size_limit: Option<usize>,
) -> Result<regex::Regex, GoRegexError> {
    let translated = translate(pattern)?;
    let mut builder = regex::RegexBuilder::new(&translated);
    if let Some(limit) = size_limit {
        builder.size_limit(limit);
    }
    builder.build().map_err(|e| match e {
        regex::Error::CompiledTooBig(limit) => GoRegexError(format!(
            "expression too large (compiled size over {limit} bytes)"
        )),
        other => GoRegexError(format!(
            "invalid pattern `{pattern}`: {}",
            first_line(&other)
        )),
    })
}

fn first_line(error: &regex::Error) -> String {
    let text = error.to_string();
    text.lines()
        .rev()
        .find(|l| l.trim_start().starts_with("error:"))
        .map(|l| {
            l.trim_start()
                .trim_start_matches("error:")
                .trim()
                .to_string()
        })
        .unwrap_or(text)
}

/// Translates a Go pattern into the `regex` crate's syntax.
pub fn translate(pattern: &str) -> Result<String, GoRegexError> {
    Translator {
        chars: pattern.chars().collect(),
        at: 0,
        out: String::with_capacity(pattern.len() + 8),
        after_repeat: false,
    }
    .run()
}

struct Translator {
    chars: Vec<char>,
    at: usize,
    out: String,
    /// Whether the last thing emitted was a repetition operator (for Go's nested-repetition
    /// error).
    after_repeat: bool,
}

impl Translator {
    fn error(&self, what: &str, text: &str) -> GoRegexError {
        GoRegexError(format!("{what}: `{text}`"))
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn rest(&self) -> String {
        self.chars[self.at..].iter().collect()
    }

    fn run(mut self) -> Result<String, GoRegexError> {
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    self.after_repeat = false;
                    self.escape(false)?;
                }
                '[' => {
                    self.after_repeat = false;
                    self.class()?;
                }
                '{' => self.brace()?,
                '}' => {
                    self.after_repeat = false;
                    self.out.push_str("\\}");
                    self.at += 1;
                }
                '*' | '+' | '?' => self.repeat_op(c)?,
                '(' => {
                    self.after_repeat = false;
                    self.group()?;
                }
                _ => {
                    self.after_repeat = false;
                    self.out.push(c);
                    self.at += 1;
                }
            }
        }
        Ok(self.out)
    }

    fn repeat_op(&mut self, op: char) -> Result<(), GoRegexError> {
        if self.after_repeat {
            let text: String = self.chars[self.at.saturating_sub(1)..=self.at]
                .iter()
                .collect();
            return Err(self.error("invalid nested repetition operator", &text));
        }
        self.out.push(op);
        self.at += 1;
        self.lazy_marker();
        self.after_repeat = true;
        Ok(())
    }

    /// A `?` right after a repetition makes it non-greedy; it is part of the operator.
    fn lazy_marker(&mut self) {
        if self.peek(0) == Some('?') {
            self.out.push('?');
            self.at += 1;
        }
    }

    /// `{n}`, `{n,}` or `{n,m}`: a repetition; anything else: a literal `{`.
    fn brace(&mut self) -> Result<(), GoRegexError> {
        let Some((len, min, max)) = self.parse_repeat() else {
            self.after_repeat = false;
            self.out.push_str("\\{");
            self.at += 1;
            return Ok(());
        };
        let text: String = self.chars[self.at..self.at + len].iter().collect();
        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
            return Err(self.error("invalid repeat count", &text));
        }
        if self.after_repeat {
            return Err(self.error("invalid nested repetition operator", &text));
        }
        self.out.push_str(&text);
        self.at += len;
        self.lazy_marker();
        self.after_repeat = true;
        Ok(())
    }

    /// Parses a repetition at the cursor: (length, min, max) where max `None` means unbounded.
    fn parse_repeat(&self) -> Option<(usize, u32, Option<u32>)> {
        let mut i = self.at + 1;
        let number = |i: &mut usize| -> Option<u32> {
            let start = *i;
            while self.chars.get(*i).is_some_and(char::is_ascii_digit) {
                *i += 1;
            }
            if *i == start {
                return None;
            }
            let digits: String = self.chars[start..*i].iter().collect();
            // Go's own parser gives up on counts this long; they are invalid either way.
            Some(digits.parse::<u32>().unwrap_or(u32::MAX))
        };
        let min = number(&mut i)?;
        let max = match self.chars.get(i)? {
            '}' => Some(min),
            ',' => {
                i += 1;
                if self.chars.get(i) == Some(&'}') {
                    None
                } else {
                    Some(number(&mut i)?)
                }
            }
            _ => return None,
        };
        (self.chars.get(i) == Some(&'}')).then_some((i + 1 - self.at, min, max))
    }

    /// A group opener: flags are checked against Go's (`i`, `m`, `s`, `U`).
    fn group(&mut self) -> Result<(), GoRegexError> {
        if self.peek(1) != Some('?') {
            self.out.push('(');
            self.at += 1;
            return Ok(());
        }
        match self.peek(2) {
            Some('P') | Some('<') | Some(':') => {
                self.out.push_str("(?");
                self.at += 2;
                return Ok(());
            }
            _ => {}
        }
        let mut i = self.at + 2;
        while let Some(&c) = self.chars.get(i) {
            match c {
                'i' | 'm' | 's' | 'U' | '-' => i += 1,
                ':' | ')' => {
                    let text: String = self.chars[self.at..=i].iter().collect();
                    self.out.push_str(&text);
                    self.at = i + 1;
                    return Ok(());
                }
                _ => break,
            }
        }
        let end = (i + 1).min(self.chars.len());
        let text: String = self.chars[self.at..end].iter().collect();
        Err(self.error("invalid or unsupported Perl syntax", &text))
    }

    /// A character class `[...]`, copied with Go's meaning of its contents.
    fn class(&mut self) -> Result<(), GoRegexError> {
        let start = self.at;
        self.out.push('[');
        self.at += 1;
        if self.peek(0) == Some('^') {
            self.out.push('^');
            self.at += 1;
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek(0) else {
                let text: String = self.chars[start..].iter().collect();
                return Err(self.error("missing closing ]", &text));
            };
            match c {
                ']' if !first => {
                    self.out.push(']');
                    self.at += 1;
                    return Ok(());
                }
                '[' if self.peek(1) == Some(':') => self.posix_class()?,
                '\\' => self.escape(true)?,
                '[' | ']' | '&' | '~' => {
                    self.out.push('\\');
                    self.out.push(c);
                    self.at += 1;
                }
                '-' if self.peek(1) == Some('-') => {
                    self.out.push_str("\\-");
                    self.at += 1;
                }
                _ => {
                    self.out.push(c);
                    self.at += 1;
                }
            }
            first = false;
        }
    }

    /// `[:alpha:]` and friends, which both dialects share.
    fn posix_class(&mut self) -> Result<(), GoRegexError> {
        let rest = self.rest();
        match rest.find(":]") {
            Some(end) => {
                self.out.push_str(&rest[..end + 2]);
                self.at += rest[..end + 2].chars().count();
                Ok(())
            }
            None => {
                // Not a POSIX class: a literal `[` inside the class.
                self.out.push_str("\\[");
                self.at += 1;
                Ok(())
            }
        }
    }

    /// An escape sequence; `in_class` when inside `[...]`.
    fn escape(&mut self, in_class: bool) -> Result<(), GoRegexError> {
        let Some(c) = self.peek(1) else {
            return Err(self.error("trailing backslash at end of expression", ""));
        };
        self.at += 2;
        let ascii_class = |set: &str, negated: bool| match (in_class, negated) {
            (true, false) => set.to_string(),
            (true, true) | (false, true) => format!("[^{set}]"),
            (false, false) => format!("[{set}]"),
        };
        let text = match c {
            'd' | 'D' => ascii_class("0-9", c == 'D'),
            'w' | 'W' => ascii_class("0-9A-Za-z_", c == 'W'),
            's' | 'S' => ascii_class("\\t\\n\\f\\r ", c == 'S'),
            'b' | 'B' if !in_class => format!("(?-u:\\{c})"),
            'A' | 'z' if !in_class => format!("\\{c}"),
            'a' | 'f' | 't' | 'n' | 'r' | 'v' => format!("\\{c}"),
            'p' | 'P' => self.unicode_class(c)?,
            'x' => self.hex_escape()?,
            'Q' if !in_class => self.quoted(),
            'C' if !in_class => "(?s:.)".to_string(),
            '0'..='7' => self.octal(c)?,
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => {
                format!("\\x{{{:X}}}", u32::from(c))
            }
            other => {
                return Err(self.error("invalid escape sequence", &format!("\\{other}")));
            }
        };
        self.out.push_str(&text);
        Ok(())
    }

    /// `\pL`, `\p{Greek}`, `\PL`, `\P{^Greek}`: passed through.
    fn unicode_class(&mut self, c: char) -> Result<String, GoRegexError> {
        match self.peek(0) {
            Some('{') => {
                let rest = self.rest();
                let end = rest
                    .find('}')
                    .ok_or_else(|| self.error("invalid character class range", &rest))?;
                self.at += rest[..=end].chars().count();
                Ok(format!("\\{c}{}", &rest[..=end]))
            }
            Some(name) => {
                self.at += 1;
                Ok(format!("\\{c}{name}"))
            }
            None => Err(self.error("invalid character class range", &format!("\\{c}"))),
        }
    }

    /// `\x7F` or `\x{10FFFF}`.
    fn hex_escape(&mut self) -> Result<String, GoRegexError> {
        let rest = self.rest();
        let digits = if let Some(inner) = rest.strip_prefix('{') {
            let end = inner
                .find('}')
                .ok_or_else(|| self.error("invalid escape sequence", "\\x{"))?;
            self.at += end + 2;
            inner[..end].to_string()
        } else {
            let two: String = rest.chars().take(2).collect();
            self.at += two.chars().count();
            if two.chars().count() != 2 {
                return Err(self.error("invalid escape sequence", &format!("\\x{two}")));
            }
            two
        };
        let value = u32::from_str_radix(&digits, 16)
            .ok()
            .filter(|v| *v <= 0x10FFFF && !digits.is_empty())
            .ok_or_else(|| self.error("invalid escape sequence", &format!("\\x{digits}")))?;
        Ok(format!("\\x{{{value:X}}}"))
    }

    /// `\Q…\E` (or to the end of the pattern): literal text.
    fn quoted(&mut self) -> String {
        let rest = self.rest();
        let (literal, consumed) = match rest.find("\\E") {
            Some(end) => (&rest[..end], end + 2),
            None => (rest.as_str(), rest.len()),
        };
        self.at += rest[..consumed].chars().count();
        regex::escape(literal)
    }

    /// Octal escapes: `\0` with up to two more digits, `\1`–`\7` only with more digits (a lone
    /// `\1` would be a backreference, which Go does not support).
    fn octal(&mut self, first: char) -> Result<String, GoRegexError> {
        let mut digits = first.to_string();
        while digits.len() < 3 && self.peek(0).is_some_and(|d| ('0'..='7').contains(&d)) {
            digits.push(self.peek(0).unwrap_or('0'));
            self.at += 1;
        }
        if first != '0' && digits.len() == 1 {
            return Err(self.error("invalid escape sequence", &format!("\\{first}")));
        }
        let value = u32::from_str_radix(&digits, 8).unwrap_or(0);
        let mut out = String::new();
        let _ = write!(out, "\\x{{{value:X}}}");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        compile(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    fn rejected(pattern: &str) -> String {
        compile(pattern).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn braces_that_are_not_repetitions_are_literal() {
        assert!(matches(
            r#"you must provide labels: {"foo"}"#,
            r#"you must provide labels: {"foo"}"#
        ));
        assert!(matches("a{", "a{"));
        assert!(matches("a{,2}", "a{,2}"));
        assert!(matches("x{1,2", "x{1,2"));
        assert!(matches("}", "}"));
        assert!(matches("^a{2}$", "aa"));
        assert!(!matches("^a{2}$", "a"));
        assert!(matches("^a{2,}$", "aaaa"));
        assert!(matches("^a{1,3}?$", "aa"));
    }

    #[test]
    fn repetition_errors_are_gos() {
        assert!(rejected("a{1001}").contains("invalid repeat count"));
        assert!(rejected("a{3,2}").contains("invalid repeat count"));
        assert!(rejected("a**").contains("invalid nested repetition operator"));
        assert!(rejected("a{2}{3}").contains("invalid nested repetition operator"));
        assert!(rejected("a+*").contains("invalid nested repetition operator"));
        assert!(matches("^a+?b$", "aab"));
        assert!(matches("^a*?$", ""));
    }

    #[test]
    fn quoting_and_octal_escapes() {
        assert!(matches(r"^\Q*.+?\E$", "*.+?"));
        assert!(matches(r"\Qa.b", "a.b"));
        assert!(!matches(r"^\Qa.b\E$", "axb"));
        assert!(matches(r"^\101\0$", "A\0"));
        assert!(matches(r"^\x41\x{263a}$", "A☺"));
        assert!(rejected(r"\1").contains("invalid escape sequence"));
        assert!(rejected(r"\8").contains("invalid escape sequence"));
    }

    #[test]
    fn perl_classes_and_word_boundaries_are_ascii() {
        assert!(matches(r"^\d+$", "123"));
        assert!(!matches(r"^\d$", "٣"));
        assert!(!matches(r"^\w$", "é"));
        assert!(matches(r"^\W$", "é"));
        assert!(matches(r"^\s$", "\t"));
        assert!(!matches(r"^\s$", "\u{a0}"));
        assert!(matches(r"^[\d_]+$", "1_2"));
        assert!(matches(r"^[^\d]$", "x"));
        assert!(matches(r"\bfoo\b", "a foo b"));
        assert!(matches(r"\Aab\z", "ab"));
    }

    #[test]
    fn classes_keep_gos_meaning() {
        assert!(matches("^[[:alpha:]]+$", "abc"));
        assert!(matches("^[]a]+$", "]a"));
        assert!(matches("^[a[]+$", "[a"));
        assert!(matches("^[a&&b]+$", "a&b"));
        assert!(matches("^[a~~]+$", "~a"));
        assert!(matches(r"^[\]]$", "]"));
        assert!(matches(r"^\pL+$", "héllo"));
        assert!(matches(r"^\p{Greek}$", "λ"));
        assert!(rejected("[a").contains("missing closing ]"));
    }

    #[test]
    fn flags_are_gos() {
        assert!(matches("(?i)^ABC$", "abc"));
        assert!(matches("(?s)^a.b$", "a\nb"));
        assert!(matches("(?m)^b$", "a\nb"));
        assert!(matches("(?U)^a+", "a"));
        assert!(matches("(?i:A)b", "ab"));
        assert!(matches("(?P<name>x)(?<other>y)", "xy"));
        assert!(rejected("(?x)a b").contains("invalid or unsupported Perl syntax"));
        assert!(rejected("(?=a)").contains("invalid or unsupported Perl syntax"));
        assert!(rejected("(?u)a").contains("invalid or unsupported Perl syntax"));
    }

    #[test]
    fn escapes_go_does_not_know_are_errors() {
        assert!(rejected(r"\u0041").contains("invalid escape sequence"));
        assert!(rejected(r"\Z").contains("invalid escape sequence"));
        assert!(rejected(r"\e").contains("invalid escape sequence"));
        assert!(rejected("a\\").contains("trailing backslash"));
        assert!(matches(r"^\.\*\+\<\>$", ".*+<>"));
        assert!(matches(r"^\#\ $", "# "));
    }

    #[test]
    fn dollar_is_end_of_text() {
        assert!(!matches("^a$", "a\n"));
        assert!(matches("(?m)^a$", "a\n"));
    }
}
