//! Where each manifest and its fields stand in the YAML text, from yaml-rust2's event markers:
//! the CI output formats point at lines. Only they need it, so this second pass over the text
//! runs only for them; `-o table|json|yaml` never pay for it.
//!
//! Documents are matched to manifests by order, skipping the `null` documents the loader drops.
//! When the count does not match what the loader found (the two parsers disagree on an odd
//! stream), no position is given rather than a wrong one.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One document's lines: where it starts and where each of its keys and list items stands.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DocumentPositions {
    /// The 1-based line of the document's first node.
    pub line: usize,
    /// The 1-based line of each field, by JSON pointer (`/spec/template/spec/containers/0/image`).
    fields: HashMap<String, usize>,
}

impl DocumentPositions {
    /// The line of `pointer`, or of its nearest ancestor that could be found, or the document's.
    pub fn line_of(&self, pointer: &str) -> usize {
        let mut pointer = pointer;
        loop {
            if let Some(line) = self.fields.get(pointer) {
                return *line;
            }
            match pointer.rfind('/') {
                Some(parent) => pointer = &pointer[..parent],
                None => return self.line,
            }
        }
    }
}

/// The positions of the `expected` non-null documents of `text`, or `None` when they cannot be
/// told apart reliably.
pub fn locate(text: &str, expected: usize) -> Option<Vec<DocumentPositions>> {
    let text = bounded_input::strip_bom(text);
    let mut locator = Locator::default();
    Parser::new_from_str(text).load(&mut locator, true).ok()?;
    let documents: Vec<DocumentPositions> = locator
        .documents
        .into_iter()
        .filter_map(|(document, null)| (!null).then_some(document))
        .collect();
    (documents.len() == expected).then_some(documents)
}

/// JSON pointer escaping of one key (`~` → `~0`, `/` → `~1`).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// An open collection while the events are read.
#[derive(Debug)]
enum Frame {
    /// A mapping at `pointer` (`None`: inside something that has no pointer, like a complex
    /// key), and where it stands between its keys and values.
    Mapping { pointer: Option<String>, key: Key },
    /// A sequence at `pointer` and the index of its next item.
    Sequence {
        pointer: Option<String>,
        next: usize,
    },
}

#[derive(Debug, Default)]
struct Locator {
    /// Every finished document and whether it is `null` (dropped by the loader).
    documents: Vec<(DocumentPositions, bool)>,
    current: DocumentPositions,
    null: bool,
    stack: Vec<Frame>,
}

impl Locator {
    /// The pointer of the node that starts now, or `None` when it is a mapping key (which
    /// then gets recorded as the key's field) or has no pointer.
    fn node_pointer(&mut self) -> NodeSlot {
        match self.stack.last_mut() {
            None => NodeSlot::Root,
            Some(Frame::Mapping {
                key: Key::Expected | Key::Complex,
                ..
            }) => NodeSlot::Key,
            Some(Frame::Mapping {
                pointer,
                key: Key::Read(key),
            }) => NodeSlot::Value(pointer.as_ref().zip(key.as_ref()).map(|(p, k)| {
                let mut child = p.clone();
                child.push('/');
                child.push_str(&escape(k));
                child
            })),
            Some(Frame::Sequence { pointer, next }) => {
                NodeSlot::Value(pointer.as_ref().map(|p| format!("{p}/{next}")))
            }
        }
    }

    /// A value (scalar or finished collection) completed in the innermost open collection.
    fn value_done(&mut self) {
        match self.stack.last_mut() {
            Some(Frame::Mapping { key, .. }) => *key = Key::Expected,
            Some(Frame::Sequence { next, .. }) => *next += 1,
            None => {}
        }
    }

    fn record(&mut self, pointer: Option<String>, mark: Marker) {
        if let Some(pointer) = pointer {
            self.current.fields.insert(pointer, mark.line());
        }
    }

    fn open(&mut self, mark: Marker, mapping: bool) {
        let pointer = match self.node_pointer() {
            NodeSlot::Root => {
                self.current.line = mark.line();
                Some(String::new())
            }
            // A collection as a mapping key: nothing under it has a pointer, and the value
            // after it has none either.
            NodeSlot::Key => {
                if let Some(Frame::Mapping { key, .. }) = self.stack.last_mut() {
                    *key = Key::Complex;
                }
                None
            }
            NodeSlot::Value(pointer) => {
                self.record(pointer.clone(), mark);
                pointer
            }
        };
        self.stack.push(if mapping {
            Frame::Mapping {
                pointer,
                key: Key::Expected,
            }
        } else {
            Frame::Sequence { pointer, next: 0 }
        });
    }

    fn close(&mut self) {
        self.stack.pop();
        match self.stack.last_mut() {
            // The collection was a key: its value (which has no pointer) comes next.
            Some(Frame::Mapping { key, .. }) if matches!(key, Key::Complex) => {
                *key = Key::Read(None);
            }
            _ => self.value_done(),
        }
    }

    fn scalar(&mut self, value: &str, style: TScalarStyle, str_tag: bool, mark: Marker) {
        match self.node_pointer() {
            NodeSlot::Root => {
                self.current.line = mark.line();
                // The loader's null documents: a plain `~`, `null`, `Null`, `NULL` or nothing.
                self.null = style == TScalarStyle::Plain
                    && !str_tag
                    && matches!(value, "" | "~" | "null" | "Null" | "NULL");
            }
            NodeSlot::Key => {
                let pointer = match self.stack.last() {
                    Some(Frame::Mapping { pointer, .. }) => pointer.clone(),
                    _ => None,
                };
                let field = pointer.map(|p| format!("{p}/{}", escape(value)));
                self.record(field, mark);
                if let Some(Frame::Mapping { key, .. }) = self.stack.last_mut() {
                    *key = match key {
                        // A scalar inside a complex key.
                        Key::Complex => Key::Complex,
                        _ => Key::Read(Some(value.to_owned())),
                    };
                }
            }
            NodeSlot::Value(pointer) => {
                self.record(pointer, mark);
                self.value_done();
            }
        }
    }
}

/// Where a mapping stands.
#[derive(Debug, Clone)]
enum Key {
    /// A key comes next.
    Expected,
    /// A collection used as a key is being read.
    Complex,
    /// The value of this key comes next (`None`: a key without a JSON name).
    Read(Option<String>),
}

/// Where a node that starts now goes.
enum NodeSlot {
    /// The document's root.
    Root,
    /// A mapping key.
    Key,
    /// A value, at this pointer (if it has one).
    Value(Option<String>),
}

impl MarkedEventReceiver for Locator {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::DocumentStart => {
                self.current = DocumentPositions::default();
                self.null = false;
                self.stack.clear();
            }
            Event::DocumentEnd => {
                let document = std::mem::take(&mut self.current);
                self.documents.push((document, self.null));
            }
            Event::Scalar(value, style, _, tag) => {
                // `!!str` arrives resolved to the core schema's prefix.
                let str_tag = tag.is_some_and(|t| {
                    format!("{}{}", t.handle, t.suffix) == "tag:yaml.org,2002:str"
                        || (t.handle == "!!" && t.suffix == "str")
                });
                self.scalar(&value, style, str_tag, mark);
            }
            // Anchors and aliases are refused before this pass; an alias is a finished value.
            Event::Alias(_) => {
                let _ = self.node_pointer();
                self.value_done();
            }
            Event::MappingStart(..) => self.open(mark, true),
            Event::SequenceStart(..) => self.open(mark, false),
            Event::MappingEnd | Event::SequenceEnd => self.close(),
            Event::Nothing | Event::StreamStart | Event::StreamEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "\
# a comment
apiVersion: batch/v1
kind: Job
metadata:
  name: a
spec:
  template:
    spec:
      containers:
        - name: c
          image: evil/x:1
          resources:
            limits: {nvidia.com/gpu: \"2\"}
---
---
~
---
kind: Pod
spec: {containers: [{name: d, image: y}]}
";

    #[test]
    fn documents_and_fields_have_their_lines() {
        let documents = locate(STREAM, 2).unwrap();
        assert_eq!(documents[0].line, 2);
        assert_eq!(documents[0].line_of("/kind"), 3);
        assert_eq!(documents[0].line_of("/metadata/name"), 5);
        assert_eq!(
            documents[0].line_of("/spec/template/spec/containers/0/image"),
            11
        );
        assert_eq!(
            documents[0]
                .line_of("/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"),
            13
        );
        // Unknown fields fall back to their nearest known ancestor, then to the document.
        assert_eq!(
            documents[0].line_of("/spec/template/spec/containers/0/securityContext"),
            10
        );
        assert_eq!(documents[0].line_of("/nowhere"), 2);
        assert_eq!(documents[1].line, 18);
        assert_eq!(documents[1].line_of("/spec/containers/0/image"), 19);
    }

    #[test]
    fn a_count_that_does_not_match_gives_no_positions() {
        assert_eq!(locate(STREAM, 3), None);
        assert_eq!(locate("a: [", 1), None);
    }

    #[test]
    fn complex_keys_are_skipped_without_losing_the_rest() {
        let documents = locate("? [a, b]\n: {x: 1}\nkind: Job\n", 1).unwrap();
        assert_eq!(documents[0].line_of("/kind"), 3);
    }

    #[test]
    fn quoted_or_tagged_nulls_are_documents() {
        assert_eq!(
            locate("--- ''\n--- !!str ~\n--- null\n", 2).map(|d| d.len()),
            Some(2)
        );
    }
}
