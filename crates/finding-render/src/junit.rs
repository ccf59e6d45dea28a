//! `-o junit`: a JUnit XML report, the format CI test-report tools read
//! (`testsuites` / `testsuite` / `testcase` / `failure` / `skipped`).
//!
//! One testsuite per region and one testcase per manifest (`name` its `Kind/name`, with its
//! `file` and `line`). A manifest the region would reject fails with one `failure` listing every
//! issue; advisory warnings go to the testcase's `system-out`; every testcase of an unreadable
//! region is `skipped` with the reason (it has refused nothing). Findings about several
//! manifests together are one more testcase, `(manifests together)`.

use std::borrow::Cow;
use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::writer::ElementWriter;

use crate::{CiReport, Finding, Level, Location, RegionCases};

/// The testcase that holds findings about several manifests together.
const TOGETHER: &str = "(manifests together)";

/// The report as an XML document with a trailing newline.
pub fn render(report: &CiReport) -> String {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing to a Vec cannot fail.
    let _ = write_report(&mut writer, report);
    let mut text = String::from_utf8_lossy(&writer.into_inner()).into_owned();
    text.push('\n');
    text
}

/// The counts of a set of testcases.
#[derive(Default)]
struct Counts {
    tests: usize,
    failures: usize,
    skipped: usize,
}

impl Counts {
    /// The `tests`, `failures`, `errors` and `skipped` attributes on `element`.
    fn on<'w>(&self, element: ElementWriter<'w, Vec<u8>>) -> ElementWriter<'w, Vec<u8>> {
        element
            .with_attribute(("tests", self.tests.to_string().as_str()))
            .with_attribute(("failures", self.failures.to_string().as_str()))
            .with_attribute(("errors", "0"))
            .with_attribute(("skipped", self.skipped.to_string().as_str()))
    }

    fn of(region: &RegionCases) -> Self {
        let mut counts = Self::default();
        for findings in cases(region).map(|(_, _, findings)| findings) {
            counts.tests += 1;
            // An unreadable region still fails a malformed manifest (every region refuses it).
            if findings.iter().any(|f| f.level == Level::Error) {
                counts.failures += 1;
            } else if region.reason.is_some() {
                counts.skipped += 1;
            }
        }
        counts
    }
}

/// A region's testcases: each manifest, then the findings about several together (if any).
fn cases(region: &RegionCases) -> impl Iterator<Item = (&str, Option<&Location>, &[Finding])> {
    let manifests = region.manifests.iter().map(|case| {
        (
            case.label.as_str(),
            Some(&case.location),
            case.findings.as_slice(),
        )
    });
    let together =
        (!region.together.is_empty()).then_some((TOGETHER, None, region.together.as_slice()));
    manifests.chain(together)
}

fn write_report(writer: &mut Writer<Vec<u8>>, report: &CiReport) -> io::Result<()> {
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let per_region: Vec<Counts> = report.regions.iter().map(Counts::of).collect();
    let total = Counts {
        tests: per_region.iter().map(|c| c.tests).sum(),
        failures: per_region.iter().map(|c| c.failures).sum(),
        skipped: per_region.iter().map(|c| c.skipped).sum(),
    };
    let element = writer
        .create_element("testsuites")
        .with_attribute(("name", "jobcheck"));
    total.on(element).write_inner_content(|writer| {
        for (region, counts) in report.regions.iter().zip(&per_region) {
            let element = writer
                .create_element("testsuite")
                .with_attribute(("name", xml_safe(&region.region).as_ref()));
            counts.on(element).write_inner_content(|writer| {
                for (name, location, findings) in cases(region) {
                    write_case(writer, region, name, location, findings)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok(())
}

fn write_case(
    writer: &mut Writer<Vec<u8>>,
    region: &RegionCases,
    name: &str,
    location: Option<&Location>,
    findings: &[Finding],
) -> io::Result<()> {
    let classname = format!("jobcheck.{}", region.region);
    let line = location.and_then(|l| l.line).map(|l| l.to_string());
    let mut element = writer
        .create_element("testcase")
        .with_attribute(("name", xml_safe(name).as_ref()))
        .with_attribute(("classname", xml_safe(&classname).as_ref()));
    if let Some(location) = location {
        element = element.with_attribute(("file", xml_safe(&location.file).as_ref()));
    }
    if let Some(line) = &line {
        element = element.with_attribute(("line", line.as_str()));
    }
    let errors: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.level == Level::Error)
        .collect();
    let warnings: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.level == Level::Warning)
        .collect();
    if region.reason.is_none() && errors.is_empty() && warnings.is_empty() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|writer| {
        if let Some(reason) = region.reason.as_ref().filter(|_| errors.is_empty()) {
            writer
                .create_element("skipped")
                .with_attribute((
                    "message",
                    xml_safe(&format!("policy unreadable: {reason}")).as_ref(),
                ))
                .write_empty()?;
        }
        if !errors.is_empty() {
            let summary = match errors.as_slice() {
                [only] => only.message.clone(),
                many => format!("{} issues", many.len()),
            };
            writer
                .create_element("failure")
                .with_attribute(("message", xml_safe(&summary).as_ref()))
                .with_attribute(("type", "reject"))
                .write_text_content(text(&lines(&errors)))?;
        }
        if !warnings.is_empty() {
            writer
                .create_element("system-out")
                .write_text_content(text(&lines(&warnings)))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Element text with only `<`, `>` and `&` escaped (quotes are plain text there), after
/// [`xml_safe`].
fn text(content: &str) -> BytesText<'static> {
    let safe = xml_safe(content);
    BytesText::from_escaped(quick_xml::escape::partial_escape(safe.as_ref()).into_owned())
}

/// `content` with every character XML 1.0 forbids (C0 controls other than tab, newline and
/// carriage return; U+FFFE and U+FFFF) written as a visible `\u{..}` escape: no character
/// reference can stand for them, so an escape is the only way to keep them readable and the
/// document well-formed. Manifest values and file names reach the report, so anything can.
fn xml_safe(content: &str) -> Cow<'_, str> {
    let forbidden = |c: char| matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}');
    if !content.contains(forbidden) {
        return Cow::Borrowed(content);
    }
    let mut safe = String::with_capacity(content.len() + 8);
    for c in content.chars() {
        if forbidden(c) {
            safe.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

/// One line per finding: `[check] message (file:line)`.
fn lines(findings: &[&Finding]) -> String {
    findings
        .iter()
        .map(|finding| {
            let place = match finding.location.line {
                Some(line) => format!("{}:{line}", finding.location.file),
                None => finding.location.file.clone(),
            };
            let prefix = match finding.level {
                Level::Error => "",
                Level::Warning => "warning: ",
            };
            format!("{prefix}[{}] {} ({place})", finding.check, finding.message)
        })
        .collect::<Vec<_>>()
        .join("\n")
}
