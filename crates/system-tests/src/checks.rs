//! The check collector: a test makes many small checks on a rendered chart and reports every
//! one that failed at once (one chart mistake often breaks several), then fails.

use serde_json::Value;

/// The failed checks of one test, each prefixed by the case it was made on.
#[derive(Debug)]
pub struct Checks {
    case: String,
    failures: Vec<String>,
    passed: usize,
}

impl Checks {
    /// A collector for checks on the render case `case`.
    pub fn new(case: &str) -> Checks {
        Checks {
            case: case.to_string(),
            failures: Vec::new(),
            passed: 0,
        }
    }

    /// Further checks are about the render case `case`.
    pub fn case(&mut self, case: &str) {
        self.case = case.to_string();
    }

    /// Records a failure with `message` unless `ok`.
    pub fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if ok {
            self.passed += 1;
        } else {
            self.fail(message());
        }
    }

    /// Records a failure.
    pub fn fail(&mut self, message: String) {
        self.failures.push(format!("[{}] {message}", self.case));
    }

    /// Records a failure unless `got == want`, naming `what`.
    pub fn eq(&mut self, what: &str, got: &Value, want: &Value) {
        self.check(got == want, || format!("{what}: got {got}, want {want}"));
    }

    /// The failures so far.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }

    /// Fails the test listing every failed check; a test that checked nothing fails too.
    #[track_caller]
    pub fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{} check(s) failed ({} passed):\n  {}",
            self.failures.len(),
            self.passed,
            self.failures.join("\n  ")
        );
        assert!(self.passed > 0, "[{}] no check was made", self.case);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_failure_is_kept_with_its_case() {
        let mut checks = Checks::new("full");
        checks.eq("a", &json!(1), &json!(1));
        checks.eq("b", &json!(1), &json!(2));
        checks.case("minimal");
        checks.check(false, || "c is wrong".into());
        assert_eq!(
            checks.failures(),
            ["[full] b: got 1, want 2", "[minimal] c is wrong"]
        );
    }

    #[test]
    fn finish_fails_listing_the_failures() {
        let mut checks = Checks::new("full");
        checks.eq("b", &json!(1), &json!(2));
        let panic = std::panic::catch_unwind(move || checks.finish()).unwrap_err();
        let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(text.contains("1 check(s) failed (0 passed)"), "{text}");
        assert!(text.contains("[full] b: got 1, want 2"), "{text}");
    }

    #[test]
    fn finish_fails_when_nothing_was_checked() {
        let checks = Checks::new("full");
        assert!(std::panic::catch_unwind(move || checks.finish()).is_err());
    }
}
