//! Slack digests: content (snapshotted), who gets one, and Slack's limits.

mod common;

use std::collections::BTreeMap;

use report_sinks::slack::{MAX_BLOCKS, MAX_SECTION_CHARS, dashboard_link, team_message};
use report_sinks::{
    Report, RunStatus, Sink, SlackOptions, SlackSink, TeamReport, problems_message,
};
use serde_json::Value;

fn options() -> SlackOptions {
    SlackOptions {
        dashboard_url: Some("https://grafana.example/d/gk-workload-policy".into()),
        readme_url: Some("https://git.example/charts/gatekeeper-constraints#fixes".into()),
        ..SlackOptions::default()
    }
}

fn section_texts(blocks: &[Value]) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b["type"] == "section")
        .map(|b| b["text"]["text"].as_str().unwrap().to_string())
        .collect()
}

fn all_text(blocks: &[Value]) -> usize {
    blocks
        .iter()
        .map(|b| {
            if b["type"] == "context" {
                b["elements"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["text"].as_str().unwrap().chars().count())
                    .sum()
            } else {
                b["text"]["text"].as_str().unwrap().chars().count()
            }
        })
        .sum()
}

#[test]
fn team_digests_snapshot() {
    let digests = SlackSink::new(options()).render(&common::report());
    let teams: Vec<&str> = digests.iter().map(|d| d.team.as_str()).collect();
    // silenced never gets a digest; the clean team 3d gets none without postWhenClean
    assert_eq!(teams, ["infra", "raster"]);
    let raster = &digests[1].message;
    insta::assert_snapshot!("raster_digest", raster.to_json());
    insta::assert_snapshot!("infra_digest", digests[0].message.to_json());
}

#[test]
fn digest_shows_sorted_capped_names_categories_and_links() {
    let digests = SlackSink::new(options()).render(&common::report());
    let raster = &digests[1].message;
    let sections = section_texts(&raster.blocks);
    let dem = sections
        .iter()
        .find(|s| s.starts_with("*dem-dev*"))
        .unwrap();
    // sorted names, capped at 2 with +1 more, categories split
    assert!(
        dem.contains("• *K8sRequiredLabels*: 3 (invalid 1, missing 2) — `api`, `web` +1 more"),
        "{dem}"
    );
    let raster_dev = sections
        .iter()
        .find(|s| s.starts_with("*raster-dev*"))
        .unwrap();
    // a Deployment and a StatefulSet named api are two workloads
    assert!(
        raster_dev.contains("• *K8sRequiredProbes*: 2 — `api`, `statefulset/api`"),
        "{raster_dev}"
    );
    // dashboard link carries team and run id; readme link present
    let links = serde_json::to_string(raster.blocks.last().unwrap()).unwrap();
    assert!(
        links.contains("gk-workload-policy?var-team=raster&var-run=20261130T073000Z-a1b2"),
        "{links}"
    );
    assert!(links.contains("How to fix"), "{links}");
    assert!(
        raster.text.contains("dem-dev: K8sRequiredLabels 3"),
        "{}",
        raster.text
    );
}

#[test]
fn clean_team_gets_a_digest_only_with_post_when_clean() {
    let sink = SlackSink::new(SlackOptions {
        post_when_clean: true,
        ..options()
    });
    let digests = sink.render(&common::report());
    let teams: Vec<&str> = digests.iter().map(|d| d.team.as_str()).collect();
    assert_eq!(teams, ["3d", "infra", "raster"]);
    insta::assert_snapshot!("clean_digest", digests[0].message.to_json());
}

#[test]
fn problems_digest_snapshot() {
    let mut run = common::run();
    run.status = RunStatus::Partial;
    run.reason = "team raster: slack post failed: server answered HTTP 500; loki push failed: \
                  server answered HTTP 400: bad <entry>"
        .into();
    run.posted = vec!["infra".into()];
    run.failed = vec!["raster".into()];
    let problems = vec![
        "team raster: slack post failed: server answered HTTP 500".to_string(),
        "loki push failed: server answered HTTP 400: bad <entry>".to_string(),
    ];
    let message = problems_message(&run, &problems, &options());
    insta::assert_snapshot!("problems_digest", message.to_json());
}

#[test]
fn problems_digest_caps_many_problems_honestly() {
    let problems: Vec<String> = (0..500)
        .map(|i| format!("problem number {i:03} with some explanatory text to take room"))
        .collect();
    let message = problems_message(
        &common::run(),
        &problems,
        &SlackOptions {
            max_message_chars: 3_000,
            ..options()
        },
    );
    assert!(message.blocks.len() <= MAX_BLOCKS);
    let sections = section_texts(&message.blocks);
    let shown: usize = sections
        .iter()
        .map(|s| s.matches("• problem number").count())
        .sum();
    assert!(shown > 0 && shown < 500);
    let note = sections.last().unwrap();
    assert_eq!(
        note,
        &format!("…and {} more problems (see the job log).", 500 - shown)
    );
    assert!(all_text(&message.blocks) <= 3_000);
}

fn big_team(namespaces: usize, rules: usize, names: usize, name_len: usize) -> TeamReport {
    let mut team = TeamReport::default();
    for n in 0..namespaces {
        let rules = (0..rules)
            .map(|r| {
                let workloads: Vec<report_sinks::ViolatingWorkload> = (0..names)
                    .map(|w| {
                        let mut name = format!("w{w:04}-");
                        while name.len() < name_len {
                            name.push('x');
                        }
                        common::workload("Deployment", &name, "other", "m")
                    })
                    .collect();
                (format!("K8sRule{r:02}"), workloads)
            })
            .collect::<Vec<_>>();
        let rules = rules.iter().map(|(r, w)| (r.as_str(), w.clone())).collect();
        team.namespaces
            .insert(format!("ns-{n:03}"), common::namespace(rules, 10));
    }
    team
}

#[test]
fn many_namespaces_stay_within_50_blocks_and_say_how_many_were_cut() {
    let team = big_team(80, 1, 3, 8);
    let message = team_message(
        "raster",
        &team,
        &common::run(),
        &SlackOptions {
            max_message_chars: 1_000_000,
            ..options()
        },
    );
    assert_eq!(message.blocks.len(), MAX_BLOCKS);
    let shown = section_texts(&message.blocks)
        .iter()
        .filter(|s| s.starts_with("*ns-"))
        .count();
    assert_eq!(shown, MAX_BLOCKS - 4);
    let cut = 80 - shown;
    let note = section_texts(&message.blocks).last().unwrap().clone();
    assert_eq!(
        note,
        format!(
            "…and {cut} more namespaces ({} violations) not shown here: see the dashboard.",
            cut * 3
        )
    );
}

#[test]
fn max_message_chars_truncates_with_an_honest_count() {
    let team = big_team(30, 2, 5, 20);
    let max = 2_500;
    let message = team_message(
        "raster",
        &team,
        &common::run(),
        &SlackOptions {
            max_message_chars: max,
            ..options()
        },
    );
    assert!(
        all_text(&message.blocks) <= max,
        "{}",
        all_text(&message.blocks)
    );
    assert!(
        message.text.chars().count() <= max,
        "{}",
        message.text.chars().count()
    );
    let sections = section_texts(&message.blocks);
    let shown = sections.iter().filter(|s| s.starts_with("*ns-")).count();
    assert!((1..30).contains(&shown), "{shown}");
    let note = sections.last().unwrap();
    let cut = 30 - shown;
    assert_eq!(
        note,
        &format!(
            "…and {cut} more namespaces ({} violations) not shown here: see the dashboard.",
            cut * 10
        )
    );
    // the text fallback lists namespaces without names; whatever it cuts, it counts
    let listed = message
        .text
        .lines()
        .filter(|l| l.starts_with("ns-"))
        .count();
    if listed < 30 {
        assert!(
            message
                .text
                .contains(&format!("…and {} more namespaces.", 30 - listed)),
            "{}",
            message.text
        );
    }
    let tiny = team_message(
        "raster",
        &team,
        &common::run(),
        &SlackOptions {
            max_message_chars: 900,
            ..options()
        },
    );
    let listed = tiny.text.lines().filter(|l| l.starts_with("ns-")).count();
    assert!(listed < 30, "{}", tiny.text);
    assert!(
        tiny.text
            .contains(&format!("…and {} more namespaces.", 30 - listed)),
        "{}",
        tiny.text
    );
}

#[test]
fn a_huge_namespace_section_stays_under_3000_chars() {
    // 30 rules × 10 names of 200 chars: far beyond one section
    let team = big_team(1, 30, 12, 200);
    let message = team_message("raster", &team, &common::run(), &options());
    for text in section_texts(&message.blocks) {
        assert!(
            text.chars().count() <= MAX_SECTION_CHARS,
            "{}",
            text.chars().count()
        );
    }
    let ns = section_texts(&message.blocks)
        .into_iter()
        .find(|s| s.starts_with("*ns-000*"))
        .unwrap();
    // the rules that did not fit are counted, not dropped silently
    let shown = ns.matches("• *K8sRule").count();
    assert!(shown < 30);
    assert!(
        ns.ends_with(&format!(
            "…and {} more rules ({} violations)",
            30 - shown,
            (30 - shown) * 12
        )),
        "{ns}"
    );
    // names cut inside a rule line are added to its +N more
    let first = ns.lines().nth(1).unwrap();
    let names = first.matches('`').count() / 2;
    assert!(first.ends_with(&format!("+{} more", 12 - names)), "{first}");
}

#[test]
fn dashboard_link_appends_encoded_variables() {
    assert_eq!(
        dashboard_link("https://g.example/d/x", Some("team a"), "r1"),
        "https://g.example/d/x?var-team=team+a&var-run=r1"
    );
    assert_eq!(
        dashboard_link("https://g.example/d/x?orgId=1", None, "r&1"),
        "https://g.example/d/x?orgId=1&var-run=r%261"
    );
}

#[test]
fn skipped_run_report_renders_no_team_digest() {
    let report = Report {
        run: common::run(),
        teams: BTreeMap::new(),
        problems: vec!["api error".into()],
    };
    assert!(SlackSink::new(options()).render(&report).is_empty());
}
