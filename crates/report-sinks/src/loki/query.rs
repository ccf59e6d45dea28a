//! Loki's read wire format, sans I/O: LogQL stream selectors, `query_range` parameters, and the
//! answer of a log query parsed into [`Entry`]s.
//!
//! Loki pages by time: a `query_range` returns at most `limit` lines, the earliest (`forward`) or
//! the latest (`backward`) in `[start, end)` (Unix nanoseconds, `end` exclusive). A reader pages
//! on by moving `start` past the last line read (or `end` to the earliest). Errors about an
//! answer name what is wrong in fixed words and a position, never the answer's bytes.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

/// The order of a `query_range`'s lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Earliest first.
    Forward,
    /// Latest first.
    Backward,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }
}

/// One `GET /loki/api/v1/query_range` of a log query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRange {
    /// The LogQL query (a stream selector, see [`selector`]).
    pub query: String,
    /// The first nanosecond (inclusive).
    pub start: i128,
    /// The end nanosecond (exclusive).
    pub end: i128,
    /// The most lines returned.
    pub limit: usize,
    /// Which end of the range the lines come from.
    pub direction: Direction,
}

impl QueryRange {
    /// The URL query string (`query=…&start=…&end=…&limit=…&direction=…`), percent-encoded.
    pub fn query_string(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("query", &self.query)
            .append_pair("start", &self.start.to_string())
            .append_pair("end", &self.end.to_string())
            .append_pair("limit", &self.limit.to_string())
            .append_pair("direction", self.direction.as_str())
            .finish()
    }
}

/// A LogQL stream selector matching each label exactly: `{job="…", cluster="…"}`. Values are
/// written as JSON strings, whose escapes (`\"`, `\\`, `\n`, `\u0001`) are also Go's, which LogQL
/// reads: any value, a quote or a brace included, stays one value.
pub fn selector(labels: &[(&str, &str)]) -> String {
    let matchers: Vec<String> = labels
        .iter()
        .map(|(name, value)| {
            let quoted = serde_json::to_string(value).expect("a string serializes");
            format!("{name}={quoted}")
        })
        .collect();
    format!("{{{}}}", matchers.join(", "))
}

/// One log line of an answer: its stream's labels, its timestamp and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The stream labels.
    pub labels: BTreeMap<String, String>,
    /// Unix nanoseconds.
    pub ts: i128,
    /// The line.
    pub line: String,
}

/// Why an answer is not a log query's answer. Texts are fixed words and positions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The body is not the JSON of a query answer.
    #[error("the answer is not a Loki query result ({what} at line {line} column {column})")]
    NotAnswer {
        /// `syntax error`, `unexpected shape` or `cut short`.
        what: &'static str,
        /// The line of the body where parsing stopped.
        line: usize,
        /// The column there.
        column: usize,
    },
    /// `status` is not `success`.
    #[error("the answer's status is not success")]
    NotSuccess,
    /// `data.resultType` is not `streams` (not a log query's answer).
    #[error("the answer holds no log lines (result type is not streams)")]
    NotStreams,
    /// A timestamp is not a number of nanoseconds.
    #[error("the answer has a timestamp that is not a number of nanoseconds")]
    BadTimestamp,
}

impl AnswerError {
    fn from_json(error: &serde_json::Error) -> AnswerError {
        let what = match error.classify() {
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Eof => "cut short",
            serde_json::error::Category::Data | serde_json::error::Category::Io => {
                "unexpected shape"
            }
        };
        AnswerError::NotAnswer {
            what,
            line: error.line(),
            column: error.column(),
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    data: Data,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    #[serde(default)]
    result: Vec<StreamResult>,
}

#[derive(Deserialize)]
struct StreamResult {
    #[serde(default)]
    stream: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<RawEntry>,
}

/// `[timestamp, line]`, or `[timestamp, line, structured metadata]` (the rest is skipped).
struct RawEntry(String, String);

impl<'de> Deserialize<'de> for RawEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawEntry, D::Error> {
        struct Pair;
        impl<'de> Visitor<'de> for Pair {
            type Value = RawEntry;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a [timestamp, line] pair")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawEntry, A::Error> {
                let ts: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let line: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawEntry(ts, line))
            }
        }
        deserializer.deserialize_seq(Pair)
    }
}

/// The lines of a log query's answer (`{"status": "success", "data": {"resultType": "streams",
/// "result": [{"stream": {…}, "values": [[ts, line], …]}]}}`), in the answer's order.
pub fn parse_streams(body: &[u8]) -> Result<Vec<Entry>, AnswerError> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| AnswerError::from_json(&e))?;
    if answer.status != "success" {
        return Err(AnswerError::NotSuccess);
    }
    if answer.data.result_type != "streams" {
        return Err(AnswerError::NotStreams);
    }
    let mut entries = Vec::new();
    for stream in answer.data.result {
        for RawEntry(ts, line) in stream.values {
            let ts = ts.parse::<i128>().map_err(|_| AnswerError::BadTimestamp)?;
            entries.push(Entry {
                labels: stream.stream.clone(),
                ts,
                line,
            });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn selector_values_cannot_break_out_of_their_quotes() {
        assert_eq!(
            selector(&[("job", "report"), ("cluster", "dev")]),
            r#"{job="report", cluster="dev"}"#
        );
        assert_eq!(
            selector(&[("cluster", "a\"} or {x=\"\\\n")]),
            r#"{cluster="a\"} or {x=\"\\\n"}"#
        );
    }

    #[test]
    fn query_string_is_percent_encoded() {
        let query = QueryRange {
            query: selector(&[("job", "a b&c")]),
            start: 1,
            end: 2,
            limit: 5,
            direction: Direction::Backward,
        };
        assert_eq!(
            query.query_string(),
            "query=%7Bjob%3D%22a+b%26c%22%7D&start=1&end=2&limit=5&direction=backward"
        );
    }

    #[test]
    fn answers_parse_with_or_without_structured_metadata() {
        let body = br#"{"status":"success","data":{"resultType":"streams","result":[
            {"stream":{"team":"a"},"values":[["2","x"],["1","y",{"k":"v"}]]},
            {"stream":{"team":"b"},"values":[["3","z"]]}],"stats":{}}}"#;
        let entries = parse_streams(body).unwrap();
        let short: Vec<(&str, i128, &str)> = entries
            .iter()
            .map(|e| (e.labels["team"].as_str(), e.ts, e.line.as_str()))
            .collect();
        assert_eq!(short, [("a", 2, "x"), ("a", 1, "y"), ("b", 3, "z")]);
    }

    #[test]
    fn what_is_no_log_answer_is_said_in_fixed_words() {
        let cases: [(&[u8], &str); 6] = [
            (
                b"<html>secret-token</html>",
                "the answer is not a Loki query result (syntax error at line 1 column 1)",
            ),
            (
                br#"{"status":"success","data":{"resultType":"streams","result":[{"values":[["1"#,
                "the answer is not a Loki query result (cut short at line 1 column 75)",
            ),
            (
                br#"{"status":"success","data":{"resultType":"streams","result":[{"values":[[1,"secret-token"]]}]}}"#,
                "the answer is not a Loki query result (unexpected shape at line 1 column 74)",
            ),
            (
                br#"{"status":"error","data":{"resultType":"streams"}}"#,
                "the answer's status is not success",
            ),
            (
                br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
                "the answer holds no log lines (result type is not streams)",
            ),
            (
                br#"{"status":"success","data":{"resultType":"streams","result":[{"values":[["x","l"]]}]}}"#,
                "the answer has a timestamp that is not a number of nanoseconds",
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(parse_streams(body).unwrap_err().to_string(), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_body_parses_or_fails_without_quoting_it(
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut body = body;
            body.extend_from_slice(b"secret-token");
            if let Err(error) = parse_streams(&body) {
                prop_assert!(!error.to_string().contains("secret"), "{}", error);
            }
        }
    }
}
