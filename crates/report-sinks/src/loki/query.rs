//! Loki's read wire format, sans I/O: LogQL stream selectors, `query_range` parameters, and the
//! answer of a log query parsed into [`Entry`]s.
//!
//! Loki pages by time: a `query_range` returns at most `limit` lines, the earliest (`forward`) or
//! the latest (`backward`) in `[start, end)` (Unix nanoseconds, `end` exclusive). A reader pages
//! on by moving `start` past the last line read (or `end` to the earliest). Errors about an
//! answer name what is wrong in fixed words and a position, never the answer's bytes.

use std::fmt;
use std::time::Instant;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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

/// One log line of an answer: its timestamp and its text. Its stream's labels are not kept: the
/// selector already says which streams were asked for, and a copy of them per line is what made a
/// many-label answer cost gigabytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Unix nanoseconds.
    pub ts: i128,
    /// The line.
    pub line: String,
}

/// How much of an answer the parser keeps and for how long it may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// The most lines kept: the query's `limit` (Loki never answers more), so an answer holding
    /// more is not Loki's and is refused at the first line over it.
    pub max_lines: usize,
    /// When the parse gives up ([`AnswerError::Deadline`]); checked before every stream and line.
    pub deadline: Option<Instant>,
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
    /// More lines than the query asked for ([`ParseLimits::max_lines`]).
    #[error("the answer holds more than the {limit} lines asked for")]
    TooManyLines {
        /// [`ParseLimits::max_lines`].
        limit: usize,
    },
    /// The deadline passed while the answer was being parsed.
    #[error("the answer could not be parsed before the deadline")]
    Deadline,
    /// The parse ended without a result (it panicked, or the runtime shut down).
    #[error("the answer's parse was aborted")]
    Aborted,
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

/// The lines of a log query's answer (`{"status": "success", "data": {"resultType": "streams",
/// "result": [{"stream": {…}, "values": [[ts, line], …]}]}}`), in the answer's order.
///
/// The answer is read in one pass: each line goes straight into the result (stream labels and
/// structured metadata are skipped, never built), at most `limits.max_lines` of them, and the
/// parse stops at `limits.deadline`. Memory is the body plus the lines kept.
pub fn parse_streams(body: &[u8], limits: ParseLimits) -> Result<Vec<Entry>, AnswerError> {
    let mut sink = Sink {
        entries: Vec::new(),
        limits,
        stop: None,
    };
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let parsed = AnswerSeed(&mut sink)
        .deserialize(&mut deserializer)
        .and_then(|shape| deserializer.end().map(|()| shape));
    let shape = match parsed {
        Ok(shape) => shape,
        // a stop the sink asked for is its own error, not the position serde_json reports
        Err(error) => {
            return Err(sink
                .stop
                .take()
                .unwrap_or_else(|| AnswerError::from_json(&error)));
        }
    };
    if !shape.success {
        return Err(AnswerError::NotSuccess);
    }
    if !shape.streams {
        return Err(AnswerError::NotStreams);
    }
    Ok(sink.entries)
}

/// Where the parse puts lines, and why it stopped early.
struct Sink {
    entries: Vec<Entry>,
    limits: ParseLimits,
    stop: Option<AnswerError>,
}

impl Sink {
    /// Fails the parse with `reason` (kept, because serde_json only carries a message).
    fn stop<E: de::Error>(&mut self, reason: AnswerError) -> E {
        let error = E::custom(&reason);
        self.stop = Some(reason);
        error
    }

    fn check_deadline<E: de::Error>(&mut self) -> Result<(), E> {
        match self.limits.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(self.stop(AnswerError::Deadline)),
            _ => Ok(()),
        }
    }

    fn push<E: de::Error>(&mut self, ts: &str, line: String) -> Result<(), E> {
        self.check_deadline()?;
        if self.entries.len() >= self.limits.max_lines {
            let limit = self.limits.max_lines;
            return Err(self.stop(AnswerError::TooManyLines { limit }));
        }
        let Ok(ts) = ts.parse::<i128>() else {
            return Err(self.stop(AnswerError::BadTimestamp));
        };
        self.entries.push(Entry { ts, line });
        Ok(())
    }
}

/// What the answer says besides its lines.
struct Shape {
    success: bool,
    streams: bool,
}

/// The answer object: `status` and `data` (any order, other keys skipped).
struct AnswerSeed<'a>(&'a mut Sink);

impl<'de> DeserializeSeed<'de> for AnswerSeed<'_> {
    type Value = Shape;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Shape, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AnswerSeed<'_> {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a query answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut success = None;
        let mut streams = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "status" => success = Some(map.next_value::<Key>()?.0 == "success"),
                "data" => streams = Some(map.next_value_seed(DataSeed(&mut *self.0))?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Shape {
            success: success.ok_or_else(|| de::Error::missing_field("status"))?,
            streams: streams.ok_or_else(|| de::Error::missing_field("data"))?,
        })
    }
}

/// `data`: `resultType` and `result`; answers whether the result type is `streams`.
struct DataSeed<'a>(&'a mut Sink);

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the answer's data")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut streams = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "resultType" => streams = Some(map.next_value::<Key>()?.0 == "streams"),
                "result" => map.next_value_seed(ResultSeed(&mut *self.0))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        streams.ok_or_else(|| de::Error::missing_field("resultType"))
    }
}

/// `result`: a list of streams.
struct ResultSeed<'a>(&'a mut Sink);

impl<'de> DeserializeSeed<'de> for ResultSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of streams")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.0.check_deadline()?;
            if seq.next_element_seed(StreamSeed(&mut *self.0))?.is_none() {
                return Ok(());
            }
        }
    }
}

/// One stream: its labels (`stream`, skipped) and its `values`.
struct StreamSeed<'a>(&'a mut Sink);

impl<'de> DeserializeSeed<'de> for StreamSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StreamSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a stream")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == "values" {
                map.next_value_seed(ValuesSeed(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// A stream's `values`: `[timestamp, line]` or `[timestamp, line, structured metadata]` (the
/// rest skipped), each pushed into the sink as it is read.
struct ValuesSeed<'a>(&'a mut Sink);

impl<'de> DeserializeSeed<'de> for ValuesSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ValuesSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of [timestamp, line] pairs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(RawEntry(ts, line)) = seq.next_element::<RawEntry>()? {
            self.0.push(&ts, line)?;
        }
        Ok(())
    }
}

/// A short string: a key, `status`, `resultType` or a timestamp. Any string is accepted (its
/// length is bounded by the body's cap).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        String::deserialize(deserializer).map(Key)
    }
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
        let entries = parse_streams(body, limits(3)).unwrap();
        let short: Vec<(i128, &str)> = entries.iter().map(|e| (e.ts, e.line.as_str())).collect();
        assert_eq!(short, [(2, "x"), (1, "y"), (3, "z")]);
    }

    fn limits(max_lines: usize) -> ParseLimits {
        ParseLimits {
            max_lines,
            deadline: None,
        }
    }

    #[test]
    fn keys_come_in_any_order_and_unknown_keys_are_skipped() {
        let body =
            br#"{"data":{"result":[{"values":[["5","x"]],"stream":{"a":"b"}}],"stats":[1,{}],
            "resultType":"streams"},"warnings":["w"],"status":"success"}"#;
        let entries = parse_streams(body, limits(1)).unwrap();
        assert_eq!(
            entries,
            [Entry {
                ts: 5,
                line: "x".into()
            }]
        );
    }

    #[test]
    fn more_lines_than_asked_for_are_refused_at_the_first_one_over() {
        let body = br#"{"status":"success","data":{"resultType":"streams","result":[
            {"stream":{},"values":[["1","a"],["2","b"]]},{"stream":{},"values":[["3","c"],"junk"]}]}}"#;
        assert_eq!(
            parse_streams(body, limits(3)).unwrap_err().to_string(),
            "the answer is not a Loki query result (unexpected shape at line 2 column 96)"
        );
        assert_eq!(
            parse_streams(body, limits(2)).unwrap_err(),
            AnswerError::TooManyLines { limit: 2 }
        );
        assert_eq!(
            AnswerError::TooManyLines { limit: 2 }.to_string(),
            "the answer holds more than the 2 lines asked for"
        );
    }

    #[test]
    fn a_passed_deadline_stops_the_parse() {
        let body = br#"{"status":"success","data":{"resultType":"streams","result":[{"values":[["1","a"]]}]}}"#;
        let passed = ParseLimits {
            max_lines: 10,
            deadline: Some(Instant::now()),
        };
        assert_eq!(
            parse_streams(body, passed).unwrap_err(),
            AnswerError::Deadline
        );
        let later = ParseLimits {
            deadline: Some(Instant::now() + std::time::Duration::from_secs(60)),
            ..passed
        };
        assert_eq!(parse_streams(body, later).unwrap().len(), 1);
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
            assert_eq!(
                parse_streams(body, limits(10)).unwrap_err().to_string(),
                expected
            );
        }
    }

    #[test]
    fn deep_nesting_where_it_is_skipped_is_walked_without_recursion() {
        // skipped values (labels, metadata, other keys) are walked without recursion, so any
        // depth is fine; the rest is refused past serde_json's depth limit of 128
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let labels = format!(
            r#"{{"status":"success","data":{{"resultType":"streams","result":[{{"stream":{deep},"values":[["1","x",{deep}]]}}]}}}}"#
        );
        assert_eq!(
            parse_streams(labels.as_bytes(), limits(10)).unwrap(),
            [Entry {
                ts: 1,
                line: "x".into()
            }]
        );
        let stats = format!(r#"{{"stats":{deep}}}"#);
        assert!(matches!(
            parse_streams(stats.as_bytes(), limits(10)),
            Err(AnswerError::NotAnswer { .. })
        ));
        let values = format!(
            r#"{{"status":"success","data":{{"resultType":"streams","result":[{{"values":[{deep}]}}]}}}}"#
        );
        assert!(matches!(
            parse_streams(values.as_bytes(), limits(10)),
            Err(AnswerError::NotAnswer { .. })
        ));
    }

    /// A generated stream: labels, and values of a timestamp (maybe no number), a line and maybe
    /// structured metadata.
    fn stream() -> impl Strategy<Value = serde_json::Value> {
        let label = ("[a-z_]{1,12}", "\\PC{0,24}");
        let value = (
            prop_oneof![4 => (0i128..i128::MAX).prop_map(|t| t.to_string()), 1 => "\\PC{0,8}"],
            "\\PC{0,40}",
            proptest::option::of(proptest::collection::btree_map(
                "[a-z]{1,5}",
                "[a-z]{0,5}",
                0..3,
            )),
        )
            .prop_map(|(ts, line, meta)| match meta {
                Some(meta) => serde_json::json!([ts, line, meta]),
                None => serde_json::json!([ts, line]),
            });
        (
            proptest::collection::btree_map(label.0, label.1, 0..30),
            proptest::collection::vec(value, 0..40),
        )
            .prop_map(|(labels, values)| serde_json::json!({"stream": labels, "values": values}))
    }

    /// A generated answer: streams, a status and result type that are usually right, extra keys.
    fn answer() -> impl Strategy<Value = serde_json::Value> {
        (
            proptest::collection::vec(stream(), 0..6),
            prop_oneof![5 => Just("success"), 1 => Just("error")],
            prop_oneof![5 => Just("streams"), 1 => Just("matrix")],
            any::<bool>(),
        )
            .prop_map(|(result, status, result_type, stats)| {
                let mut data = serde_json::json!({"resultType": result_type, "result": result});
                if stats {
                    data["stats"] = serde_json::json!({"summary": {"bytesProcessedPerSecond": 1}});
                }
                serde_json::json!({"status": status, "data": data})
            })
    }

    /// Whether `entry` is a line a generated answer holds, in its order.
    fn expected_lines(answer: &serde_json::Value) -> Option<Vec<Entry>> {
        let mut lines = Vec::new();
        for stream in answer["data"]["result"].as_array()? {
            for value in stream["values"].as_array()? {
                lines.push(Entry {
                    ts: value[0].as_str()?.parse().ok()?,
                    line: value[1].as_str()?.to_string(),
                });
            }
        }
        Some(lines)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn generated_answers_parse_to_their_lines_within_the_limit_and_deadline(
            answer in answer(),
            max_lines in 0usize..120,
            cut in proptest::option::of(any::<proptest::sample::Index>()),
            flip in proptest::option::of((any::<proptest::sample::Index>(), any::<u8>())),
        ) {
            let mut body = serde_json::to_vec(&answer).unwrap();
            let damaged = cut.is_some() || flip.is_some();
            if let Some((at, byte)) = flip {
                let at = at.index(body.len());
                body[at] = byte;
            }
            if let Some(cut) = cut {
                body.truncate(cut.index(body.len()));
            }
            let deadline = Instant::now() + std::time::Duration::from_secs(2);
            let started = Instant::now();
            let parsed = parse_streams(&body, ParseLimits { max_lines, deadline: Some(deadline) });
            prop_assert!(started.elapsed() < std::time::Duration::from_secs(1));
            if let Ok(entries) = &parsed {
                prop_assert!(entries.len() <= max_lines);
            }
            let valid = answer["status"] == "success" && answer["data"]["resultType"] == "streams";
            if let (false, true, Some(lines)) = (damaged, valid, expected_lines(&answer)) {
                if lines.len() <= max_lines {
                    prop_assert_eq!(parsed.unwrap(), lines);
                } else {
                    prop_assert_eq!(parsed.unwrap_err(), AnswerError::TooManyLines { limit: max_lines });
                }
            }
        }

        #[test]
        fn any_body_parses_or_fails_without_quoting_it(
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut body = body;
            body.extend_from_slice(b"secret-token");
            if let Err(error) = parse_streams(&body, limits(10)) {
                prop_assert!(!error.to_string().contains("secret"), "{}", error);
            }
        }
    }
}
