//! Cutting a YAML stream into pieces that parse alone to the same documents, so the pieces can
//! be parsed on several cores.
//!
//! A line that starts with `---` followed by a blank, a line break or the end always starts a
//! new document: YAML forbids such a line inside any scalar (libyaml ends a plain or block
//! scalar there and refuses it inside a quoted one) and closes every open block collection
//! before it. The parser's state at that line is the one it starts a stream with, except for
//! directives (`%YAML`, `%TAG`), which apply to the document after them: a stream with a
//! directive line is not cut. Whatever the cut, an error in any piece sends the caller back to
//! parsing the whole stream, so error messages and positions stay the whole stream's.

/// `text` cut at document starts into at most `pieces` parts of about equal size (fewer when
/// there are fewer document starts, or one when the stream has directives).
pub(crate) fn document_pieces(text: &str, pieces: usize) -> Vec<&str> {
    if pieces <= 1 || has_directive(text) {
        return vec![text];
    }
    let mut out = Vec::with_capacity(pieces);
    let mut start = 0;
    for part in 1..pieces {
        // (u128: no overflow whatever the length and count)
        let target = (text.len() as u128 * part as u128 / pieces as u128) as usize;
        if target <= start {
            continue;
        }
        let Some(cut) = next_document_start(text, target) else {
            break;
        };
        out.push(&text[start..cut]);
        start = cut;
    }
    out.push(&text[start..]);
    out
}

/// Whether a line of `text` starts with `%` (a directive, or an error the whole parse reports).
fn has_directive(text: &str) -> bool {
    text.starts_with('%') || text.contains("\n%")
}

/// The byte offset of the first line at or after `from` that starts a document.
fn next_document_start(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut search = from;
    loop {
        let newline = search + text.get(search..)?.find("\n---")?;
        let line = newline + 1;
        let after = bytes.get(line + 3);
        if after.is_none_or(|byte| matches!(byte, b' ' | b'\t' | b'\r' | b'\n')) {
            return Some(line);
        }
        search = line;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_start_at_document_starts_and_cover_the_text() {
        let text = "a: 1\n---\nb: 2\n--- \nc: 3\n---x: 4\n---\r\nd: 5\n---";
        for pieces in 1..8 {
            let cut = document_pieces(text, pieces);
            assert_eq!(cut.concat(), text);
            assert!(cut.len() <= pieces);
            for piece in &cut[1..] {
                assert!(piece.starts_with("---"), "{piece:?}");
                assert!(!piece.starts_with("---x"), "{piece:?}");
            }
        }
        assert_eq!(document_pieces(text, 100).len(), 5);
    }

    #[test]
    fn streams_with_directives_are_not_cut() {
        for text in [
            "%YAML 1.2\n---\na: 1\n---\nb: 2\n",
            "a: 1\n...\n%YAML 1.2\n---\nb: 2\n",
        ] {
            assert_eq!(document_pieces(text, 4), vec![text]);
        }
    }
}
