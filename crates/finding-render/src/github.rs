//! `-o github`: GitHub Actions workflow commands, one annotation per finding
//! (`::error file=…,line=…,title=…::message`, `::warning` for advisory warnings and unreadable
//! regions, `::notice` for cross-region drift), escaped the way the Actions toolkit escapes them.

use std::fmt::Write as _;

use crate::{CiReport, Finding, Level};

/// Every annotation, one per line.
pub fn render(report: &CiReport) -> String {
    let mut out = String::new();
    for region in &report.regions {
        if let Some(reason) = &region.reason {
            command(
                &mut out,
                "warning",
                &[("title", &format!("jobcheck ({})", region.region))],
                &format!("policy unreadable: {reason}"),
            );
        }
        for case in &region.manifests {
            for finding in &case.findings {
                annotate(&mut out, &region.region, Some(&case.label), finding);
            }
        }
        for finding in &region.together {
            annotate(&mut out, &region.region, None, finding);
        }
    }
    for drift in &report.drift {
        command(
            &mut out,
            "notice",
            &[("title", "jobcheck policy drift")],
            &format!("regions differ in {drift}"),
        );
    }
    out
}

fn annotate(out: &mut String, region: &str, manifest: Option<&str>, finding: &Finding) {
    let kind = match finding.level {
        Level::Error => "error",
        Level::Warning => "warning",
    };
    let line = finding.location.line.map(|l| l.to_string());
    let title = format!("jobcheck {} ({region})", finding.check);
    let mut properties = vec![("file", finding.location.file.as_str())];
    if let Some(line) = &line {
        properties.push(("line", line));
    }
    properties.push(("title", &title));
    let subject = manifest.map(|m| format!("{m}: ")).unwrap_or_default();
    command(
        out,
        kind,
        &properties,
        &format!("{subject}{}", finding.message),
    );
}

/// `::kind key=value,…::message`.
fn command(out: &mut String, kind: &str, properties: &[(&str, &str)], message: &str) {
    let _ = write!(out, "::{kind}");
    for (index, (key, value)) in properties.iter().enumerate() {
        let separator = if index == 0 { ' ' } else { ',' };
        let _ = write!(out, "{separator}{key}={}", escape_property(value));
    }
    let _ = writeln!(out, "::{}", escape_data(message));
}

/// A message: `%`, carriage returns and line feeds are percent-encoded.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value: as a message, and `:` and `,` too.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_escaped_like_the_actions_toolkit() {
        let mut out = String::new();
        command(
            &mut out,
            "error",
            &[("file", "a,b:c.yaml"), ("line", "3")],
            "100% sure\nreally",
        );
        assert_eq!(
            out,
            "::error file=a%2Cb%3Ac.yaml,line=3::100%25 sure%0Areally\n"
        );
    }
}
