//! Regions-file parsing, validation (errors name the key) and `-r` region selection.

use std::path::Path;
use std::time::Duration;

use policy_client::{Auth, RegionsConfig, SelectError};

fn parse(yaml: &str) -> Result<RegionsConfig, String> {
    RegionsConfig::parse(yaml, Path::new("/etc/jobcheck")).map_err(|e| e.to_string())
}

const TWO_REGIONS: &str = "
regions:
  - name: us-east-1
    endpoint: https://abc123.execute-api.us-east-1.amazonaws.com/prod
  - name: eu-west-1
    endpoint: https://def456.execute-api.eu-west-1.amazonaws.com/prod/
";

#[test]
fn a_minimal_file_gets_the_defaults() {
    let config = parse(TWO_REGIONS).unwrap();
    assert_eq!(config.auth, Auth::SigV4);
    assert_eq!(config.timeout, Duration::from_secs(30));
    assert_eq!(config.deadline, Duration::from_secs(45));
    assert_eq!(config.ca_file, None);
    let names: Vec<&str> = config.regions.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["us-east-1", "eu-west-1"]);
    assert_eq!(
        config.regions[1].endpoint,
        "https://def456.execute-api.eu-west-1.amazonaws.com/prod"
    );
}

#[test]
fn every_key_is_read() {
    let config = parse(&format!(
        "{TWO_REGIONS}auth: {{type: header, name: X-Api-Key, valueEnv: API_KEY}}\n\
         timeoutSeconds: 5\ndeadlineSeconds: 7.5\ncaFile: ./corp-ca.pem\n"
    ))
    .unwrap();
    assert_eq!(
        config.auth,
        Auth::Header {
            name: http::HeaderName::from_static("x-api-key"),
            value_env: "API_KEY".into()
        }
    );
    assert_eq!(config.timeout, Duration::from_secs(5));
    assert_eq!(config.deadline, Duration::from_millis(7500));
    assert_eq!(
        config.ca_file.as_deref(),
        Some(Path::new("/etc/jobcheck/./corp-ca.pem"))
    );
    let bearer = parse(&format!(
        "{TWO_REGIONS}auth: {{type: bearer, tokenEnv: GCO_TOKEN}}\n"
    ))
    .unwrap();
    assert_eq!(
        bearer.auth,
        Auth::Bearer {
            token_env: "GCO_TOKEN".into()
        }
    );
    let none = parse(&format!("{TWO_REGIONS}auth: {{type: none}}\n")).unwrap();
    assert_eq!(none.auth, Auth::None);
}

#[test]
fn validation_errors_name_the_key() {
    let cases: &[(&str, &str)] = &[
        (
            "auth: {type: none}\n",
            "regions file is not valid: regions: is required",
        ),
        (
            "regions: []\n",
            "regions file is not valid: regions: must list at least one region",
        ),
        (
            "regions:\n  - name: a\n    endpoint: http://example.com/prod\n",
            "regions file is not valid: regions[0].endpoint: must be an https:// URL",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\n  - name: a\n    endpoint: https://example.org\n",
            "regions file is not valid: regions[1].name: duplicate region \"a\"",
        ),
        (
            "regions:\n  - name: ' '\n    endpoint: https://example.com\n",
            "regions file is not valid: regions[0].name: must not be empty",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://user:pw@example.com/prod\n",
            "regions file is not valid: regions[0].endpoint: must not carry credentials (user:password@)",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com/prod?x=1\n",
            "regions file is not valid: regions[0].endpoint: must not have a query or fragment",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\ntimeoutSeconds: 0\n",
            "regions file is not valid: timeoutSeconds: must be a number of seconds greater than 0 and at most 86400",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\ndeadlineSeconds: -3\n",
            "regions file is not valid: deadlineSeconds: must be a number of seconds greater than 0 and at most 86400",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\nauth: {type: bearer, tokenEnv: 'not a name'}\n",
            "regions file is not valid: auth.tokenEnv: must be an environment variable name (letters, digits, '_')",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\nauth: {type: header, name: 'bad header', valueEnv: KEY}\n",
            "regions file is not valid: auth.name: is not a valid HTTP header name",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\ncaFile: ''\n",
            "regions file is not valid: caFile: must not be empty",
        ),
    ];
    for (yaml, expected) in cases {
        assert_eq!(parse(yaml).unwrap_err(), *expected, "for {yaml:?}");
    }
}

#[test]
fn shape_errors_name_the_key_and_position() {
    let missing = parse("regions:\n  - name: a\n").unwrap_err();
    assert!(missing.contains("regions[0]"), "{missing}");
    assert!(missing.contains("missing field `endpoint`"), "{missing}");

    let unknown = parse("regions:\n  - name: a\n    endpoint: https://e.com\ntimeout_seconds: 3\n")
        .unwrap_err();
    assert!(
        unknown.contains("unknown field `timeout_seconds`"),
        "{unknown}"
    );

    let auth =
        parse("regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: kerberos}\n")
            .unwrap_err();
    assert!(
        auth.starts_with("regions file is not valid: auth"),
        "{auth}"
    );
    assert!(auth.contains("kerberos"), "{auth}");

    let bearer =
        parse("regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: bearer}\n")
            .unwrap_err();
    assert!(bearer.contains("tokenEnv"), "{bearer}");

    let timeout =
        parse("regions:\n  - name: a\n    endpoint: https://e.com\ntimeoutSeconds: soon\n")
            .unwrap_err();
    assert!(timeout.contains("timeoutSeconds"), "{timeout}");
}

#[test]
fn load_reports_an_unreadable_file_and_resolves_ca_file_next_to_it() {
    let missing = RegionsConfig::load(Path::new("/nonexistent/jobcheck.yaml")).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "cannot read regions file /nonexistent/jobcheck.yaml"
    );
    assert!(std::error::Error::source(&missing).is_some());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobcheck.yaml");
    std::fs::write(&path, format!("{TWO_REGIONS}caFile: corp-ca.pem\n")).unwrap();
    let config = RegionsConfig::load(&path).unwrap();
    assert_eq!(config.ca_file, Some(dir.path().join("corp-ca.pem")));
}

#[test]
fn selection_dedups_keeping_the_first_and_defaults_to_file_order() {
    let config = parse(&format!(
        "{TWO_REGIONS}  - name: ap-south-1\n    endpoint: https://ghi.execute-api.ap-south-1.amazonaws.com/prod\n"
    ))
    .unwrap();
    let names = |regions: Vec<policy_client::Region>| -> Vec<String> {
        regions.into_iter().map(|r| r.name).collect()
    };
    assert_eq!(
        names(config.select(&[]).unwrap()),
        ["us-east-1", "eu-west-1", "ap-south-1"]
    );
    let requested: Vec<String> = ["ap-south-1", "us-east-1", "ap-south-1"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        names(config.select(&requested).unwrap()),
        ["ap-south-1", "us-east-1"]
    );
    let unknown = config.select(&["mars-1".to_string()]).unwrap_err();
    assert_eq!(
        unknown,
        SelectError::UnknownRegion {
            region: "mars-1".into(),
            known: "us-east-1, eu-west-1, ap-south-1".into()
        }
    );
    assert_eq!(
        unknown.to_string(),
        "region \"mars-1\" is not in the regions file (known: us-east-1, eu-west-1, ap-south-1)"
    );
}
