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
            "regions file is not valid: timeoutSeconds: must be a number of seconds from 0.1 to 86400",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://example.com\ndeadlineSeconds: -3\n",
            "regions file is not valid: deadlineSeconds: must be a number of seconds from 0.1 to 86400",
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
    let cases: &[(&str, &str)] = &[
        (
            "regions:\n  - name: a\n",
            "regions[0].endpoint: is required",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\ntimeout_seconds: 3\n",
            "timeout_seconds: is not a known key (known: regions, auth, timeoutSeconds, deadlineSeconds, caFile)",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\n    region: x\n",
            "regions[0].region: is not a known key (known: name, endpoint)",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: kerberos}\n",
            "auth.type: must be one of none, sigv4, bearer, header",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: bearer}\n",
            "auth.tokenEnv: is required",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: none, tokenEnv: X}\n",
            "auth.tokenEnv: is not a known key (known: type)",
        ),
        (
            "regions:\n  - name: a\n    endpoint: https://e.com\ntimeoutSeconds: soon\n",
            "timeoutSeconds: must be a number of seconds from 0.1 to 86400",
        ),
        (
            "regions:\n  - name: 7\n    endpoint: https://e.com\n",
            "regions[0].name: must be a string, not a number",
        ),
        (
            "regions: {a: b}\n",
            "regions: must be a list of {name, endpoint} mappings, not a mapping",
        ),
        ("- a\n", "(file): must be a mapping of keys, not a list"),
        ("", "regions: is required"),
    ];
    for (yaml, expected) in cases {
        assert_eq!(
            parse(yaml).unwrap_err(),
            format!("regions file is not valid: {expected}"),
            "for {yaml:?}"
        );
    }
    let syntax = parse("regions: [a\n").unwrap_err();
    assert!(
        syntax.starts_with("regions file is not valid: "),
        "{syntax}"
    );
    assert!(syntax.contains("line 2"), "{syntax}");
    let duplicate = parse("regions: []\nregions: [https://user:hunter2@x]\n").unwrap_err();
    assert_eq!(
        duplicate,
        "regions file is not valid: duplicate key in the mapping at line 1 column 1"
    );
}

#[test]
fn load_reports_an_unreadable_file_and_resolves_ca_file_next_to_it() {
    let missing = RegionsConfig::load(Path::new("/nonexistent/jobcheck.yaml")).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "cannot read regions file: /nonexistent/jobcheck.yaml: no such file"
    );

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

#[test]
fn a_bare_string_entry_never_echoes_its_url() {
    let error = parse("regions:\n  - https://user:hunter2@example.com/prod\n").unwrap_err();
    assert_eq!(
        error,
        "regions file is not valid: regions[0]: must be a mapping with name and endpoint, not a string"
    );
    // No value of the file reaches any error, whatever its place.
    for yaml in [
        "regions: https://user:hunter2@example.com\n",
        "regions:\n  - name: [https://user:hunter2@example.com]\n    endpoint: https://e.com\n",
        "regions:\n  - name: a\n    endpoint: {url: https://user:hunter2@example.com}\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\nauth: {type: 'https://user:hunter2@x'}\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\nauth: https://user:hunter2@x\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\n    https://user:hunter2@x: 1\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\ntimeoutSeconds: https://user:hunter2@x\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\ncaFile: [https://user:hunter2@x]\n",
        "regions:\n  - name: a\n    endpoint: https://e.com\n    endpoint: https://user:hunter2@x\n",
        "https://user:hunter2@x\n",
    ] {
        let error = parse(yaml).unwrap_err();
        assert!(!error.contains("hunter2"), "{yaml:?} echoed: {error}");
        assert!(error.starts_with("regions file is not valid: "), "{error}");
    }
}

#[test]
fn region_names_with_control_characters_are_refused() {
    for name in [
        "\"a\\x01b\"",
        "\"us-east-1\\u0000\"",
        "\"r\\u00e9gion\"",
        "\"a\\u001b[31m\"",
    ] {
        let error = parse(&format!(
            "regions:\n  - name: {name}\n    endpoint: https://e.com\n"
        ))
        .unwrap_err();
        assert_eq!(
            error,
            "regions file is not valid: regions[0].name: must be ASCII letters, digits, '-', '_' or '.'",
            "{name}"
        );
    }
    assert!(policy_client::Region::new("a\u{1}b", "https://e.com").is_err());
}

#[test]
fn timeouts_must_be_sane_numbers_of_seconds() {
    for (key, value) in [
        ("timeoutSeconds", "1e-300"),
        ("timeoutSeconds", "0.01"),
        ("deadlineSeconds", "1e300"),
        ("deadlineSeconds", ".nan"),
        ("timeoutSeconds", ".inf"),
        ("deadlineSeconds", "'30'"),
        ("timeoutSeconds", "true"),
    ] {
        let error = parse(&format!("{TWO_REGIONS}{key}: {value}\n")).unwrap_err();
        assert_eq!(
            error,
            format!(
                "regions file is not valid: {key}: must be a number of seconds from 0.1 to 86400"
            ),
            "{key}: {value}"
        );
    }
    let config = parse(&format!(
        "{TWO_REGIONS}timeoutSeconds: 0.1\ndeadlineSeconds: 86400\n"
    ))
    .unwrap();
    assert_eq!(config.timeout, Duration::from_millis(100));
    assert_eq!(config.deadline, Duration::from_secs(86400));
}

#[test]
fn yaml_nested_beyond_the_cap_is_refused_before_parsing() {
    let deep = format!("regions: {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let error = parse(&deep).unwrap_err();
    assert_eq!(
        error,
        "regions file is not valid: recursion limit exceeded: YAML nested deeper than 128 levels at line 1"
    );
}

#[test]
fn an_unknown_key_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobcheck.yaml");
    std::fs::write(&path, format!("{TWO_REGIONS}foo: 1\n")).unwrap();
    let error = RegionsConfig::load(&path).unwrap_err();
    let chain = format!("{:#}", anyhow::Error::new(error));
    assert_eq!(
        chain,
        "regions file is not valid: foo: is not a known key (known: regions, auth, timeoutSeconds, deadlineSeconds, caFile)"
    );
}

#[cfg(unix)]
#[test]
fn a_regions_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("jobcheck.yaml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = RegionsConfig::load(&fifo).unwrap_err();
    assert_eq!(
        format!("{:#}", anyhow::Error::new(error)),
        format!(
            "cannot read regions file: {}: is not a regular file (a FIFO)",
            fifo.display()
        )
    );
    let error = RegionsConfig::load(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read regions file: /dev/zero: is not a regular file (a character device)"
    );
}
