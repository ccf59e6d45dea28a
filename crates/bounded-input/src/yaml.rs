//! A linear pre-scan that rejects YAML nested too deeply, before a parser sees it.
//!
//! libyaml (behind `serde_yaml`) parses deeply nested flow collections in quadratic time:
//! `a: [[[[…]]]]` with 100,000 levels takes tens of seconds before serde's recursion limit of 128
//! is ever consulted. This scan estimates the nesting depth of every line in one pass and stops at
//! the first line deeper than the cap. It is an estimate from the layout, not a parse:
//!
//! - block nesting is the number of open indentation levels, plus one per compact indicator on a
//!   line (`- - - x`, `- key: v`, `? x`);
//! - flow nesting counts `[` and `{` that open a collection (outside quotes, comments and block
//!   scalars);
//! - it may count one level more than a parser for a line such as `- scalar`, never fewer for the
//!   shapes that make parsing slow.

/// The default cap: `serde_yaml`'s own recursion limit, so the pre-scan and the parser refuse the
/// same documents with errors that read alike.
pub const YAML_MAX_DEPTH: usize = 128;

/// A document nested deeper than the cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recursion limit exceeded: YAML nested deeper than {max} levels at line {line}")]
pub struct NestingError {
    /// The 1-based line where the cap was passed.
    pub line: usize,
    /// The cap.
    pub max: usize,
}

/// Fails when `text` (one or more YAML documents) nests deeper than `max` levels anywhere.
pub fn check_yaml_nesting(text: &str, max: usize) -> Result<(), NestingError> {
    let mut scan = Scan {
        max,
        ..Scan::default()
    };
    for (index, line) in text.lines().enumerate() {
        scan.line(line.as_bytes(), index + 1)?;
    }
    Ok(())
}

#[derive(Default)]
struct Scan {
    max: usize,
    /// Indentation columns of the open block nodes.
    blocks: Vec<usize>,
    flow: usize,
    /// Inside a quoted scalar that continues on the next line.
    quote: Option<u8>,
    /// Inside a block scalar (`|`, `>`) whose parent line had this indentation.
    block_scalar: Option<usize>,
}

impl Scan {
    fn line(&mut self, line: &[u8], number: usize) -> Result<(), NestingError> {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        if let Some(parent) = self.block_scalar {
            if rest.is_empty() || indent > parent {
                return Ok(());
            }
            self.block_scalar = None;
        }
        let mut at = indent;
        if self.quote.is_none() && self.flow == 0 {
            if rest.is_empty() || rest[0] == b'#' {
                return Ok(());
            }
            if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) {
                let marker_ends = rest.len() == 3 || rest[3] == b' ' || rest[3] == b'\t';
                if marker_ends {
                    self.blocks.clear();
                    at = 3;
                }
            }
            if at == indent {
                while self.blocks.last().is_some_and(|&top| top > indent) {
                    self.blocks.pop();
                }
                if self.blocks.last() != Some(&indent) {
                    self.blocks.push(indent);
                }
                self.check(number)?;
            }
        }
        self.rest_of_line(line, at, indent, number)
    }

    /// Scans from `at`: quotes, comments, compact indicators, flow brackets, block scalars.
    fn rest_of_line(
        &mut self,
        line: &[u8],
        mut at: usize,
        indent: usize,
        number: usize,
    ) -> Result<(), NestingError> {
        let mut node_start = self.flow == 0;
        while at < line.len() {
            let byte = line[at];
            if let Some(quote) = self.quote {
                at = close_quote(line, at, quote, &mut self.quote);
                node_start = false;
                continue;
            }
            match byte {
                b' ' | b'\t' => {}
                b'#' if at == 0 || matches!(line[at - 1], b' ' | b'\t') => return Ok(()),
                b'\'' | b'"' if node_start || self.flow > 0 => {
                    self.quote = Some(byte);
                    at = close_quote(line, at + 1, byte, &mut self.quote);
                    node_start = false;
                    continue;
                }
                b'[' | b'{' if node_start || self.flow > 0 => {
                    self.flow += 1;
                    self.check(number)?;
                    node_start = false;
                }
                b']' | b'}' if self.flow > 0 => self.flow -= 1,
                b'|' | b'>' if node_start && self.flow == 0 => {
                    self.block_scalar = Some(indent);
                    return Ok(());
                }
                b'-' | b'?' | b':' if self.flow == 0 && separated(line, at) => {
                    if node_start || byte == b':' {
                        let next = next_content(line, at + 1);
                        if byte != b':' && next < line.len() {
                            self.blocks.push(next);
                            self.check(number)?;
                        }
                        node_start = true;
                    }
                }
                b',' if self.flow > 0 => {}
                _ => node_start = false,
            }
            at += 1;
        }
        Ok(())
    }

    fn check(&self, line: usize) -> Result<(), NestingError> {
        if self.blocks.len() + self.flow > self.max {
            return Err(NestingError {
                line,
                max: self.max,
            });
        }
        Ok(())
    }
}

/// Whether the indicator at `at` is followed by a space, a tab or the end of the line.
fn separated(line: &[u8], at: usize) -> bool {
    line.get(at + 1).is_none_or(|b| matches!(b, b' ' | b'\t'))
}

fn next_content(line: &[u8], from: usize) -> usize {
    from + line[from.min(line.len())..]
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count()
}

/// Skips to just past the closing `quote` from `at`; leaves `state` set when the line ends first.
fn close_quote(line: &[u8], mut at: usize, quote: u8, state: &mut Option<u8>) -> usize {
    while at < line.len() {
        let byte = line[at];
        if quote == b'"' && byte == b'\\' {
            at += 2;
            continue;
        }
        if byte == quote {
            if quote == b'\'' && line.get(at + 1) == Some(&b'\'') {
                at += 2;
                continue;
            }
            *state = None;
            return at + 1;
        }
        at += 1;
    }
    *state = Some(quote);
    line.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, max: usize) -> bool {
        check_yaml_nesting(text, max).is_ok()
    }

    #[test]
    fn deep_flow_nesting_is_refused_at_its_line() {
        let text = format!("a: 1\nb: {}{}\n", "[".repeat(200), "]".repeat(200));
        let error = check_yaml_nesting(&text, YAML_MAX_DEPTH).unwrap_err();
        assert_eq!(error, NestingError { line: 2, max: 128 });
        assert_eq!(
            error.to_string(),
            "recursion limit exceeded: YAML nested deeper than 128 levels at line 2"
        );
    }

    #[test]
    fn a_hundred_thousand_levels_are_refused_quickly() {
        let text = format!("a: {}", "[".repeat(100_000));
        assert!(check_yaml_nesting(&text, YAML_MAX_DEPTH).is_err());
        let text = "- ".repeat(100_000);
        assert!(check_yaml_nesting(&text, YAML_MAX_DEPTH).is_err());
        let text = "{a: ".repeat(100_000);
        assert!(check_yaml_nesting(&text, YAML_MAX_DEPTH).is_err());
    }

    #[test]
    fn block_nesting_counts_indentation_levels_not_columns() {
        let mut text = String::new();
        for level in 0..5 {
            text.push_str(&" ".repeat(level * 40));
            text.push_str("k:\n");
        }
        assert!(depth_ok(&text, 5));
        assert!(!depth_ok(&text, 4));
    }

    #[test]
    fn dedent_closes_levels() {
        let text = "a:\n  b:\n    c: 1\nd:\n  e: 2\n";
        assert!(depth_ok(text, 3));
        assert!(!depth_ok(text, 2));
    }

    #[test]
    fn compact_sequences_count_per_indicator() {
        assert!(depth_ok("- - - x\n", 4));
        assert!(!depth_ok("- - - - - x\n", 4));
        assert!(depth_ok("- name: a\n  image: b\n", 2));
    }

    #[test]
    fn brackets_in_quotes_comments_plain_scalars_and_block_scalars_do_not_count() {
        let text = concat!(
            "a: \"[[[[[[\"\n",
            "b: '{{{{{{ '' [[['\n",
            "c: x[[[[[[ # [[[[[[\n",
            "d: |\n",
            "  [[[[[[[[[\n",
            "  {{{{{{{{{\n",
            "e: \"multi\n",
            "  line [[[[[[[\"\n",
            "f: [1, [2, \"]]]]\"], {g: '[['}]\n",
        );
        assert!(depth_ok(text, 3), "{:?}", check_yaml_nesting(text, 3));
        assert!(!depth_ok(text, 2));
    }

    #[test]
    fn documents_reset_the_block_stack() {
        let text = "a:\n  b:\n    c: 1\n---\nd: 1\n--- [x]\n";
        assert!(depth_ok(text, 3));
    }

    #[test]
    fn kubernetes_objects_pass() {
        let text = concat!(
            "apiVersion: apps/v1\n",
            "kind: Deployment\n",
            "metadata:\n",
            "  name: web\n",
            "  labels: {app: web}\n",
            "spec:\n",
            "  template:\n",
            "    spec:\n",
            "      containers:\n",
            "      - name: app\n",
            "        image: nginx:1.27\n",
            "        args: [\"--port\", \"80\"]\n",
            "        resources:\n",
            "          limits: {cpu: 100m}\n",
        );
        assert!(depth_ok(text, 12));
    }
}
