//! The redactor's promises: every encoding of every secret goes, ordinary words stay, and no
//! text makes it panic (property tests with bounded case counts).

use base64::Engine;
use proptest::prelude::*;

use super::*;

const HOOK: &str = "https://hooks.slack.example/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn";
const TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.sa-token-0123456789";

fn redactor() -> Redactor {
    let mut redactor = Redactor::new();
    redactor.add_url(HOOK);
    redactor.add_basic("loki-user", "pa/ss:w0rd+1");
    redactor.add_secret(TOKEN);
    redactor
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn every_echo_encoding_of_a_webhook_goes() {
    let path = "/services/T0001ABC/B0002XYZ/sEcReT7919tOkEn";
    let echoes = [
        HOOK.to_string(),
        path.to_string(),
        path.trim_start_matches('/').to_string(),
        path.replace('/', "\\/"),
        HOOK.replace('/', "\\/"),
        path.replace('/', "%2F"),
        path.replace('/', "%2f"),
        path.replace('/', "&#47;"),
        path.to_ascii_uppercase(),
        format!("{}\n{}", &path[..20], &path[20..]),
        format!("{}\\n  {}", &path[..30], &path[30..]),
        "T0001ABC/B0002XYZ/sEcReT7919tOkEn".to_string(),
        "token SECRET7919TOKEN.".to_string(),
    ];
    let redactor = redactor();
    for echo in echoes {
        let text = format!("HTTP 404: no_service: {echo} (retry)");
        let redacted = redactor.redact(&text);
        assert!(
            !redacted.to_ascii_lowercase().contains("secret7919token")
                && !redacted.contains("7919")
                && !redacted.contains("B0002XYZ"),
            "{echo:?} -> {redacted:?}"
        );
        assert!(redacted.starts_with("HTTP 404: no_service: "), "{redacted}");
        assert!(redacted.ends_with(" (retry)"), "{redacted}");
    }
}

#[test]
fn every_echo_encoding_of_a_basic_credential_goes() {
    let pair = "loki-user:pa/ss:w0rd+1";
    let echoes = [
        format!("Authorization: Basic {}", b64(pair)),
        b64(pair),
        b64(pair).trim_end_matches('=').to_string(),
        b64(pair).to_ascii_uppercase(),
        format!("{}\n{}", &b64(pair)[..10], &b64(pair)[10..]),
        "pa/ss:w0rd+1".to_string(),
        "pa\\/ss:w0rd+1".to_string(),
        "pa%2Fss%3Aw0rd%2B1".to_string(),
        "PA/SS:W0RD+1".to_string(),
        format!("{{\"password\":\"{}\"}}", "pa\\/ss:w0rd+1"),
    ];
    let redactor = redactor();
    for echo in echoes {
        let redacted = redactor.redact(&format!("loki said: {echo}"));
        let folded = redacted.to_ascii_lowercase();
        assert!(
            !folded.contains("w0rd") && !folded.contains(&b64(pair)[..12].to_ascii_lowercase()),
            "{echo:?} -> {redacted:?}"
        );
    }
}

#[test]
fn a_bearer_token_goes_in_any_encoding() {
    let redactor = redactor();
    for echo in [
        format!("Bearer {TOKEN}"),
        TOKEN.to_ascii_uppercase(),
        b64(TOKEN),
        format!("{}\r\n{}", &TOKEN[..12], &TOKEN[12..]),
        TOKEN.replace('-', "%2D"),
        TOKEN.replace('.', "\\u002e"),
    ] {
        let redacted = redactor.redact(&format!("401: invalid credential {echo}; retry"));
        let expected = if echo.starts_with("Bearer ") {
            "401: invalid credential Bearer [redacted]; retry"
        } else {
            "401: invalid credential [redacted]; retry"
        };
        assert_eq!(redacted, expected, "{echo:?}");
    }
}

#[test]
fn ordinary_words_stay_even_when_a_webhook_path_holds_them() {
    let mut redactor = Redactor::new();
    redactor.add_url("https://hooks.example/redirect/services/T0123ABCD/tok3n-value-99");
    for text in [
        "server answered HTTP 302 (redirects are not followed)",
        "redirect services to another host",
        "hooks.example answered HTTP 500",
        "team raster: slack post failed",
    ] {
        assert_eq!(redactor.redact(text), text);
    }
    assert_eq!(
        redactor.redact("echo: redirect/services/T0123ABCD/tok3n-value-99!"),
        "echo: [redacted]!"
    );
    assert_eq!(redactor.redact("id T0123ABCD."), "id [redacted].");
    assert_eq!(redactor.redact("id T0123ABCDE"), "id T0123ABCDE");
}

#[test]
fn short_secrets_match_whole_words_only_and_tiny_ones_not_at_all() {
    let mut redactor = Redactor::new();
    redactor.add_secret("abc12");
    redactor.add_secret("xy");
    assert_eq!(
        redactor.redact("abc123 abc12 xyz xy"),
        "abc123 [redacted] xyz xy"
    );
}

#[test]
fn an_empty_redactor_changes_nothing_and_debug_shows_no_secret() {
    assert_eq!(Redactor::new().redact("a secret"), "a secret");
    let debug = format!("{:?}", redactor());
    assert!(
        debug.starts_with("Redactor(") && !debug.contains("w0rd"),
        "{debug}"
    );
}

#[test]
fn url_credentials_only_take_the_user_info() {
    let mut redactor = Redactor::new();
    redactor.add_url_credentials("http://loki-gateway.monitoring:80");
    assert!(redactor.is_empty());
    redactor.add_url_credentials("https://tenant1:s3cr%2Ft-pass@loki.example/prefix");
    assert_eq!(
        redactor.redact("push to loki.example/prefix failed: s3cr/t-pass"),
        "push to loki.example/prefix failed: [redacted]"
    );
}

#[test]
fn multibyte_text_around_matches_stays_valid() {
    let mut redactor = Redactor::new();
    redactor.add_secret("ü-secret-1234");
    assert_eq!(
        redactor.redact("ä%C3%BC-SECRET-1234ö ü-secret-1234"),
        "ä[redacted]ö [redacted]"
    );
}

/// A credential as policy-client's clients send it: every character a header value may hold.
const CREDENTIAL: &str = "tok/SECRET+8f3a.Zq~x";

fn credential_redactor() -> Redactor {
    Redactor::for_credentials([CREDENTIAL])
}

#[test]
fn a_credential_goes_raw_and_case_folded() {
    let redactor = credential_redactor();
    assert_eq!(
        redactor.redact(&format!("invalid literal: 'Bearer {CREDENTIAL}'")),
        "invalid literal: 'Bearer [redacted]'"
    );
    assert_eq!(
        redactor.redact(&format!("AUTH {}", CREDENTIAL.to_uppercase())),
        "AUTH [redacted]"
    );
    assert_eq!(redactor.redact("nothing to see"), "nothing to see");
}

#[test]
fn a_credential_goes_in_every_encoding_a_header_echo_takes() {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let forms = [
        STANDARD.encode(CREDENTIAL),
        STANDARD.encode(format!("Bearer {CREDENTIAL}")),
        URL_SAFE_NO_PAD.encode(format!("user:{CREDENTIAL}")),
        utf8_percent_encode(CREDENTIAL, NON_ALPHANUMERIC).to_string(),
        CREDENTIAL.replace('/', "\\/"),
        hex::encode(CREDENTIAL).to_uppercase(),
    ];
    let redactor = credential_redactor();
    for form in forms {
        let redacted = redactor.redact(&format!("echo: {form}."));
        assert!(redacted.contains(REDACTED), "{form} -> {redacted}");
        assert!(
            !redacted.to_lowercase().contains(&form.to_lowercase()),
            "{form} -> {redacted}"
        );
    }
}

#[test]
fn a_credential_glued_to_text_or_behind_an_escape_start_still_goes() {
    let redactor = Redactor::for_credentials(["AB12cd34"]);
    assert_eq!(redactor.redact("xAB12cd34y"), "x[redacted]y");
    // `%` + `AB` decodes as one byte; the literal pass still finds the credential.
    assert_eq!(redactor.redact("100%AB12cd34"), "100%[redacted]");
}

#[test]
fn a_credential_wrapped_over_lines_goes_with_its_line_breaks() {
    let encoded = base64::engine::general_purpose::STANDARD.encode(CREDENTIAL);
    let wrapped = format!("{}\n  {}", &encoded[..10], &encoded[10..]);
    assert_eq!(
        credential_redactor().redact(&format!("a {wrapped} b")),
        "a [redacted] b"
    );
}

#[test]
fn values_are_redacted_in_strings_keys_and_numbers() {
    let redactor = Redactor::for_credentials([CREDENTIAL, "12345678"]);
    let value = redactor.redact_value(serde_json::json!({
        CREDENTIAL: [format!("x{CREDENTIAL}y"), 12345678, 7, "plain"],
    }));
    assert_eq!(
        value,
        serde_json::json!({"[redacted]": ["x[redacted]y", "[redacted]", 7, "plain"]})
    );
}

#[test]
fn short_and_empty_credentials_are_not_searched_for() {
    let redactor = Redactor::for_credentials(["", "  ", "abc", "abcde"]);
    assert!(redactor.is_empty());
    assert_eq!(redactor.redact("abc abcde"), "abc abcde");
    assert_eq!(format!("{redactor:?}"), "Redactor(0 fragments)");
}

#[test]
fn overlapping_credentials_are_removed_whole() {
    let redactor = Redactor::for_credentials(["abcdefgh", "efghijkl"]);
    assert_eq!(redactor.redact("xx abcdefghijkl yy"), "xx [redacted] yy");
    assert!(!format!("{redactor:?}").contains("abcdefgh"));
}

#[test]
fn an_error_text_holds_each_cause_once() {
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }
    let inner = Layer("connection refused", None);
    let middle = Layer("connect: connection refused", Some(Box::new(inner)));
    let outer = Layer("request failed", Some(Box::new(middle)));
    assert_eq!(
        error_text(&outer),
        "request failed: connect: connection refused"
    );
    assert_eq!(error_text(&Layer("alone", None)), "alone");
}

fn secret_strategy() -> impl Strategy<Value = String> {
    "[A-Za-z0-9/+=:._-]{8,40}".prop_filter("has a digit", |s| s.chars().any(|c| c.is_ascii_digit()))
}

/// The ways a server could echo `secret`.
fn encode(secret: &str, style: u8, at: usize) -> String {
    let at = at % secret.len();
    match style % 9 {
        0 => secret.to_string(),
        1 => secret.to_ascii_uppercase(),
        2 => secret.replace('/', "\\/"),
        3 => secret
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect(),
        4 => format!("{}\n{}", &secret[..at], &secret[at..]),
        5 => format!("{}\\n {}", &secret[..at], &secret[at..]),
        6 => b64(secret),
        7 => secret.replace('/', "&#x2F;").replace(':', "&#58;"),
        _ => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn redact_never_panics_and_keeps_text_without_secrets(text in any::<String>(), secret in secret_strategy()) {
        let mut redactor = Redactor::new();
        redactor.add_secret(&secret);
        redactor.add_url(&format!("https://h.example/a/{secret}?k={secret}"));
        let redacted = redactor.redact(&text);
        if !redacted.contains(REDACTED) {
            prop_assert_eq!(redacted, text);
        }
    }

    #[test]
    fn no_encoding_of_a_secret_survives(
        secret in secret_strategy(),
        before in "[ -~]{0,30}",
        after in "[ -~]{0,30}",
        style in any::<u8>(),
        at in any::<usize>(),
    ) {
        let mut redactor = Redactor::new();
        redactor.add_secret(&secret);
        let echo = encode(&secret, style, at);
        let redacted = redactor.redact(&format!("{before} {echo} {after}"));
        let canonical_secret = canonical::bytes(&secret);
        let canonical_out = canonical::bytes(&redacted);
        let survived = canonical_out
            .windows(canonical_secret.len())
            .any(|w| w == canonical_secret.as_slice());
        prop_assert!(!survived, "{:?} survived as {:?} in {:?}", secret, echo, redacted);
        prop_assert!(!redacted.contains(&echo), "{:?} in {:?}", echo, redacted);
    }

    #[test]
    fn words_without_digits_never_match_a_token(words in proptest::collection::vec("[a-z]{1,12}", 0..30), secret in secret_strategy()) {
        let mut redactor = Redactor::new();
        redactor.add_url(&format!("https://hooks.example/services/redirect/{secret}"));
        let text = words.join(" ");
        prop_assert_eq!(redactor.redact(&text), text);
    }
}
