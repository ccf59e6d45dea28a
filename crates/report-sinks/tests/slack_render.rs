//! Slack digests: content (snapshotted), who gets one, and Slack's limits.

mod common;

use std::collections::BTreeMap;

use report_sinks::slack::{MAX_BLOCKS, MAX_SECTION_CHARS, dashboard_link, team_message};
use report_sinks::{
    History, Report, RunStatus, SlackMessage, SlackOptions, SlackSink, TeamReport, problems_message,
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
fn plain_text_is_each_block_s_visible_text_on_its_own_line() {
    let digests = SlackSink::new(options()).render(&common::report());
    let message = &digests[1].message;
    let text = message.plain_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        message.blocks[0]["text"]["text"].as_str().unwrap()
    );
    assert!(
        text.contains(section_texts(&message.blocks)[1].as_str()),
        "{text}"
    );
    // Context blocks: their elements, two spaces apart.
    let context = message
        .blocks
        .iter()
        .find(|b| b["type"] == "context")
        .expect("a context block");
    let elements: Vec<&str> = context["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    // … with each link `<url|label>` written `label (url)`.
    let last = text.lines().last().unwrap();
    assert_eq!(last.split("  ").count(), elements.len(), "{text}");
    for (shown, element) in last.split("  ").zip(&elements) {
        let (url, label) = element
            .trim_start_matches('<')
            .trim_end_matches('>')
            .split_once('|')
            .unwrap();
        assert_eq!(shown, format!("{label} ({url})"));
    }
    // Without blocks, the fallback text.
    let bare = SlackMessage {
        text: "fallback".into(),
        blocks: Vec::new(),
    };
    assert_eq!(bare.plain_text(), "fallback");
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
    let message = problems_message(&run, &problems, &[], &options());
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
        &[],
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
        &History::Unavailable,
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
        &History::Unavailable,
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
        &History::Unavailable,
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
    let message = team_message(
        "raster",
        &team,
        &common::run(),
        &History::Unavailable,
        &options(),
    );
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
        policy_errors: vec![],
        problems: vec!["api error".into()],
        history: History::Unavailable,
        categories: vec!["other".into()],
    };
    assert!(SlackSink::new(options()).render(&report).is_empty());
}

#[test]
fn policy_errors_are_counted_apart_from_violations_in_the_digest() {
    let digests = SlackSink::new(options()).render(&common::report_with_errors());
    let teams: Vec<&str> = digests.iter().map(|d| d.team.as_str()).collect();
    // 3d has policy errors only: nothing it can fix, so it stays clean and gets no digest
    assert_eq!(teams, ["infra", "raster"]);
    let raster = &digests[1].message;
    insta::assert_snapshot!("raster_digest_with_errors", raster.to_json());
    let sections = section_texts(&raster.blocks);
    // violations and namespaces count only violations; the errors are said apart, once
    assert!(
        sections[0].starts_with("*6* policy violations in *2* namespaces")
            && sections[0].contains("\n*3* policy errors: a policy could not be evaluated"),
        "{}",
        sections[0]
    );
    let raster_dev = sections
        .iter()
        .find(|s| s.starts_with("*raster-dev*"))
        .unwrap();
    assert!(
        raster_dev.starts_with("*raster-dev* — 3; 1 policy error\n")
            && raster_dev
                .contains("• *K8sRequiredProbes*: 2 — `api`, `statefulset/api`; 1 policy error"),
        "{raster_dev}"
    );
    // a rule that only erred lists no workload and no category
    let stage = sections
        .iter()
        .find(|s| s.starts_with("*raster-stage*"))
        .unwrap();
    assert_eq!(
        stage,
        "*raster-stage* — 2 policy errors\n• *K8sRequiredProbes*: 2 policy errors"
    );
    assert!(
        raster
            .text
            .contains("raster-stage: K8sRequiredProbes 2 policy errors"),
        "{}",
        raster.text
    );
    // with postWhenClean the errors-only team hears of its errors, as errors
    let sink = SlackSink::new(SlackOptions {
        post_when_clean: true,
        ..options()
    });
    let digests = sink.render(&common::report_with_errors());
    let clean = section_texts(&digests[0].message.blocks);
    assert_eq!(digests[0].team, "3d");
    assert!(
        clean[0].starts_with("No policy violations in your namespaces")
            && clean[0].contains("*1* policy error:"),
        "{}",
        clean[0]
    );
}

#[test]
fn problems_digest_names_every_erring_constraint_for_an_ok_run() {
    let errors = vec![
        common::policy_error(
            "K8sOwner",
            "owner-required",
            4,
            "payments-dev",
            "worker",
            "template:3: eval_conflict_error: complete rules must not produce multiple outputs",
        ),
        common::policy_error(
            "K8sOwner",
            "owner-required-prod",
            1,
            "payments-prod",
            "checkout",
            "bad <input> & more",
        ),
    ];
    let message = problems_message(&common::run(), &[], &errors, &options());
    insta::assert_snapshot!("problems_digest_policy_errors", message.to_json());
    let sections = section_texts(&message.blocks);
    assert!(sections[0].contains("is *ok*"), "{}", sections[0]);
    assert!(
        sections[1].starts_with("*Policy errors*"),
        "{}",
        sections[1]
    );
    assert_eq!(
        sections[2],
        "• *K8sOwner* `owner-required`: 4 objects, first `Deployment payments-dev/worker`: \
         template:3: eval_conflict_error: complete rules must not produce multiple outputs\n\
         • *K8sOwner* `owner-required-prod`: 1 object, first `Deployment payments-prod/checkout`: \
         bad &lt;input&gt; &amp; more"
    );
    assert!(
        message.text.ends_with(
            ": ok; policy errors: K8sOwner/owner-required (4 objects), \
             K8sOwner/owner-required-prod (1 object)"
        ),
        "{}",
        message.text
    );
}

#[test]
fn problems_digest_caps_problems_and_policy_errors_honestly() {
    let problems: Vec<String> = (0..300)
        .map(|i| format!("problem number {i:03} with some explanatory text to take room"))
        .collect();
    let errors: Vec<report_sinks::PolicyError> = (0..2000)
        .map(|i| {
            common::policy_error(
                "K8sOwner",
                &format!("owner-{i:04}"),
                i + 1,
                "ns",
                "w",
                "eval_conflict_error: complete rules must not produce multiple outputs",
            )
        })
        .collect();
    for (max_message_chars, problems, errors) in [
        // the character budget cuts
        (3_000, &problems[..0], &errors[..300]),
        (3_000, &problems[..], &errors[..300]),
        // Slack's block limit cuts
        (1_000_000, &problems[..], &errors[..]),
    ] {
        let message = problems_message(
            &common::run(),
            problems,
            errors,
            &SlackOptions {
                max_message_chars,
                ..options()
            },
        );
        assert!(
            message.blocks.len() <= MAX_BLOCKS,
            "{}",
            message.blocks.len()
        );
        assert!(all_text(&message.blocks) <= max_message_chars);
        let sections = section_texts(&message.blocks);
        let shown: usize = sections
            .iter()
            .map(|s| s.matches("• *K8sOwner*").count())
            .sum();
        assert!(shown < errors.len(), "{max_message_chars}: {shown}");
        let note = sections.last().unwrap();
        assert_eq!(
            note,
            &format!(
                "…and {} more Constraints with policy errors (see the `policy_error` lines in Loki).",
                errors.len() - shown
            )
        );
    }
}

/// The run compared with, finished 2026-11-29 07:31 UTC.
fn compared() -> History {
    History::Compared(report_sinks::PreviousRunRef {
        run_id: "20261129T073000Z".into(),
        finished_at: "2026-11-29T07:31:05Z".parse().unwrap(),
        failed: Default::default(),
    })
}

#[test]
fn fixed_workloads_are_counted_and_named_up_to_the_cap() {
    let fixed: Vec<report_sinks::FixedWorkload> = (0..15)
        .map(|i| report_sinks::FixedWorkload {
            name: format!("app-{i:02}"),
            kind: "Deployment".into(),
        })
        .collect();
    let mut team = TeamReport::default();
    team.namespaces
        .entry("web".into())
        .or_default()
        .rules
        .insert(
            "K8sRequiredLabels".into(),
            report_sinks::RuleReport::default().with_change(|_| false, fixed, 10),
        );
    let options = SlackOptions {
        max_fixed_names: 4,
        ..options()
    };
    let message = team_message("web", &team, &common::run(), &compared(), &options);
    let sections = section_texts(&message.blocks);
    let fixed = sections
        .iter()
        .find(|s| s.contains("fixed*"))
        .unwrap_or_else(|| panic!("no fixed section in {sections:?}"));
    assert_eq!(
        fixed,
        ":white_check_mark: *15 fixed* since 2026-11-29 07:31 UTC: `web/app-00` (K8sRequiredLabels), \
         `web/app-01` (K8sRequiredLabels), `web/app-02` (K8sRequiredLabels), \
         `web/app-03` (K8sRequiredLabels) +11 more"
    );
    // a namespace whose workloads were all fixed has no section of its own
    assert!(
        !sections.iter().any(|s| s.starts_with("*web*")),
        "{sections:?}"
    );
    assert_eq!(
        message.blocks[0]["text"]["text"],
        "Workload policy report: web — 0 new, 15 fixed since 2026-11-29 07:31 UTC"
    );
}

#[test]
fn plain_text_undoes_slack_escapes_and_writes_links_out() {
    let message = SlackMessage {
        text: "fallback".into(),
        blocks: vec![
            serde_json::json!({"type": "section", "text": {"type": "mrkdwn",
                "text": "replicas &gt; 3 &amp; &lt;none&gt; in `a&amp;b`"}}),
            serde_json::json!({"type": "context", "elements": [
                {"type": "mrkdwn", "text": "<https://grafana.example.com/d/x?a=1&amp;b=2|Open &amp; see>"},
                {"type": "mrkdwn", "text": "<https://git.example.com>"}]}),
        ],
    };
    assert_eq!(
        message.plain_text(),
        "replicas > 3 & <none> in `a&b`\nOpen & see (https://grafana.example.com/d/x?a=1&b=2)  https://git.example.com"
    );
}
