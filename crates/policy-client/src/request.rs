//! Sans-IO request building: the `GET {endpoint}/api/v1/policy` request for one region, with its
//! authentication headers. Pure apart from reading credentials through the caller's env lookup.
//!
//! Every header that carries a credential is marked sensitive, so `Debug` output of the request
//! never shows it; errors name the missing variable, never a value.
//!
//! Credentials are validated here, at the edge, before the SigV4 signer (which panics on a value
//! it cannot put in a header) or a header sees them: surrounding whitespace is trimmed — a Secret
//! made with `kubectl create secret --from-file` ends in a newline, and HTTP strips whitespace
//! around field values anyway, so it can never be part of a credential — and anything else that
//! is not printable ASCII is refused naming the variable.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use http::header::{ACCEPT, AUTHORIZATION, HOST, HeaderValue, USER_AGENT};
use http::{Method, Request, Uri};

use crate::regions::{Auth, Region, is_valid_region_name};

/// The AWS service name API Gateway requests are signed for.
pub const SIGV4_SERVICE: &str = "execute-api";

/// The user agent sent with every request.
pub const USER_AGENT_VALUE: &str = concat!("jobcheck-policy-client/", env!("CARGO_PKG_VERSION"));

/// Why a request could not be built (the region is then `error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A credential environment variable is unset or empty.
    #[error("missing credentials: {var} is not set")]
    MissingCredential {
        /// The variable's name (never its value).
        var: String,
    },
    /// A credential holds a control or non-ASCII character (after trimming surrounding
    /// whitespace).
    #[error("invalid credentials: {var} holds a control or non-ASCII character")]
    InvalidCredential {
        /// The variable's name (never its value).
        var: String,
    },
    /// The region to sign for is not a valid region name.
    #[error("invalid region name for signing: {region:?}")]
    InvalidRegion {
        /// The region's name (names are not secret; printed escaped).
        region: String,
    },
    /// The endpoint does not form a valid request URL.
    #[error("invalid endpoint URL")]
    InvalidUrl,
    /// SigV4 signing failed.
    #[error("could not sign the request with AWS Signature V4")]
    Signing,
}

/// Builds the policy request for `region`, authenticated per `auth`, reading credentials through
/// `env` (pass `|name| std::env::var(name).ok()` for the process environment) and signing at `now`.
pub fn build_policy_request(
    region: &Region,
    auth: &Auth,
    env: &dyn Fn(&str) -> Option<String>,
    now: SystemTime,
) -> Result<Request<()>, RequestError> {
    let url = region.policy_url();
    let uri: Uri = url.parse().map_err(|_| RequestError::InvalidUrl)?;
    let host = host_header(&uri).ok_or(RequestError::InvalidUrl)?;
    let mut request = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header(HOST, host)
        .header(ACCEPT, "application/json")
        .header(USER_AGENT, USER_AGENT_VALUE)
        .body(())
        .map_err(|_| RequestError::InvalidUrl)?;

    match auth {
        Auth::None => {}
        Auth::Bearer { token_env } => {
            let token = credential(env, token_env)?;
            let value = sensitive(&format!("Bearer {token}"), token_env)?;
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        Auth::Header { name, value_env } => {
            let value = sensitive(&credential(env, value_env)?, value_env)?;
            request.headers_mut().insert(name.clone(), value);
        }
        Auth::SigV4 => sign_sigv4(&mut request, region, env, now)?,
    }
    Ok(request)
}

fn sign_sigv4(
    request: &mut Request<()>,
    region: &Region,
    env: &dyn Fn(&str) -> Option<String>,
    now: SystemTime,
) -> Result<(), RequestError> {
    let access_key = credential(env, "AWS_ACCESS_KEY_ID")?;
    let secret_key = credential(env, "AWS_SECRET_ACCESS_KEY")?;
    let session_token = optional_credential(env, "AWS_SESSION_TOKEN")?;
    let identity: Identity =
        Credentials::new(access_key, secret_key, session_token, None, "environment").into();
    let signing_region = region.signing_region();
    if !is_valid_region_name(&signing_region) {
        return Err(RequestError::InvalidRegion {
            region: signing_region,
        });
    }
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&signing_region)
        .name(SIGV4_SERVICE)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|_| RequestError::Signing)?
        .into();
    let uri = request.uri().to_string();
    let headers: Vec<(&str, &str)> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let signable = SignableRequest::new(
        request.method().as_str(),
        &uri,
        headers.into_iter(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|_| RequestError::Signing)?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|_| RequestError::Signing)?
        .into_parts();
    instructions.apply_to_request_http1x(request);
    // Mark everything credential-bearing as sensitive (the signature and the session token).
    for name in ["authorization", "x-amz-security-token"] {
        if let Some(value) = request.headers_mut().get_mut(name) {
            value.set_sensitive(true);
        }
    }
    Ok(())
}

/// The credentials `auth` reads, as they are sent (trimmed); unset or invalid ones are left out.
/// What a [`crate::Redactor`] for this mode's responses must know.
pub fn credentials_in_use(auth: &Auth, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let vars: Vec<&str> = match auth {
        Auth::None => Vec::new(),
        Auth::SigV4 => vec![
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
        ],
        Auth::Bearer { token_env } => vec![token_env],
        Auth::Header { value_env, .. } => vec![value_env],
    };
    vars.iter()
        .filter_map(|var| optional_credential(env, var).ok().flatten())
        .collect()
}

/// The values of `request`'s sensitive headers, and the signature inside a SigV4
/// `Authorization` (a replayable artefact of the secret key): what a server could echo back.
pub fn sensitive_header_values(request: &Request<()>) -> Vec<String> {
    let mut values = Vec::new();
    for value in request.headers().values().filter(|v| v.is_sensitive()) {
        let Ok(text) = value.to_str() else { continue };
        values.push(text.to_string());
        if let Some((_, signature)) = text.rsplit_once("Signature=") {
            values.push(signature.to_string());
        }
    }
    values
}

/// A required credential: trimmed, non-empty, printable ASCII.
fn credential(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<String, RequestError> {
    optional_credential(env, var)?.ok_or_else(|| RequestError::MissingCredential {
        var: var.to_string(),
    })
}

/// An optional credential: `None` when unset or blank, else trimmed printable ASCII.
fn optional_credential(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<String>, RequestError> {
    let Some(value) = env(var) else {
        return Ok(None);
    };
    let value = value.trim_matches(|c: char| c.is_ascii_whitespace());
    if value.is_empty() {
        return Ok(None);
    }
    if !value.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return Err(RequestError::InvalidCredential {
            var: var.to_string(),
        });
    }
    Ok(Some(value.to_string()))
}

fn sensitive(value: &str, var: &str) -> Result<HeaderValue, RequestError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| RequestError::InvalidCredential {
        var: var.to_string(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// `host[:port]`, omitting the port when it is the scheme's default (as SigV4 canonicalises it).
fn host_header(uri: &Uri) -> Option<String> {
    let host = uri.host()?;
    match uri.port_u16() {
        Some(port) if !(port == 443 && uri.scheme_str() == Some("https")) => {
            Some(format!("{host}:{port}"))
        }
        _ => Some(host.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn region() -> Region {
        Region::new(
            "us-east-1",
            "https://abc123.execute-api.us-east-1.amazonaws.com/prod",
        )
        .unwrap()
    }

    #[test]
    fn unauthenticated_request_targets_the_policy_path() {
        let request =
            build_policy_request(&region(), &Auth::None, &env_of(&[]), SystemTime::now()).unwrap();
        assert_eq!(request.method(), Method::GET);
        assert_eq!(
            request.uri().to_string(),
            "https://abc123.execute-api.us-east-1.amazonaws.com/prod/api/v1/policy"
        );
        assert_eq!(
            request.headers()[HOST],
            "abc123.execute-api.us-east-1.amazonaws.com"
        );
        assert!(request.headers().get(AUTHORIZATION).is_none());
    }

    #[test]
    fn bearer_token_is_sent_and_hidden_from_debug() {
        let auth = Auth::Bearer {
            token_env: "TOKEN".into(),
        };
        let env = env_of(&[("TOKEN", "s3cr3t-t0ken")]);
        let request = build_policy_request(&region(), &auth, &env, SystemTime::now()).unwrap();
        assert_eq!(request.headers()[AUTHORIZATION], "Bearer s3cr3t-t0ken");
        assert!(request.headers()[AUTHORIZATION].is_sensitive());
        assert!(!format!("{request:?}").contains("s3cr3t-t0ken"));
    }

    #[test]
    fn missing_token_names_the_variable() {
        let auth = Auth::Bearer {
            token_env: "TOKEN".into(),
        };
        let error =
            build_policy_request(&region(), &auth, &env_of(&[]), SystemTime::now()).unwrap_err();
        assert_eq!(error.to_string(), "missing credentials: TOKEN is not set");
    }

    #[test]
    fn sigv4_signs_for_execute_api_in_the_endpoint_region() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            (
                "AWS_SECRET_ACCESS_KEY",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            ),
            ("AWS_SESSION_TOKEN", "session-token-value"),
        ]);
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_788_000_000);
        let request = build_policy_request(&region(), &Auth::SigV4, &env, at).unwrap();
        let authorization = request.headers()[AUTHORIZATION].to_str().unwrap();
        assert!(authorization.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260829/us-east-1/execute-api/aws4_request, SignedHeaders="
        ), "{authorization}");
        assert!(authorization.contains("host"));
        assert!(authorization.contains("x-amz-date"));
        let signature = authorization.rsplit("Signature=").next().unwrap();
        assert_eq!(signature.len(), 64);
        assert!(signature.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(request.headers()["x-amz-date"], "20260829T104000Z");
        assert_eq!(
            request.headers()["x-amz-security-token"],
            "session-token-value"
        );
        let debug = format!("{request:?}");
        assert!(!debug.contains("wJalrXUtnFEMI"));
        assert!(!debug.contains("session-token-value"));
    }

    #[test]
    fn sigv4_refuses_a_region_name_it_cannot_sign_for() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
        ]);
        // The fields are public: a caller can build a region the regions file would refuse.
        let region = Region {
            name: "us-east-1\u{1}\n".into(),
            endpoint: "https://localhost:8443/prod".into(),
        };
        let error =
            build_policy_request(&region, &Auth::SigV4, &env, SystemTime::now()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid region name for signing: \"us-east-1\\u{1}\\n\""
        );
    }

    #[test]
    fn credentials_in_use_are_the_trimmed_values_of_the_mode() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", " AKIDEXAMPLE\n"),
            ("AWS_SECRET_ACCESS_KEY", "secret\u{1}"),
            ("TOKEN", "tok\r\n"),
        ]);
        assert_eq!(credentials_in_use(&Auth::SigV4, &env), ["AKIDEXAMPLE"]);
        let bearer = Auth::Bearer {
            token_env: "TOKEN".into(),
        };
        assert_eq!(credentials_in_use(&bearer, &env), ["tok"]);
        assert!(credentials_in_use(&Auth::None, &env).is_empty());
    }

    #[test]
    fn sensitive_values_include_the_sigv4_signature() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI"),
            ("AWS_SESSION_TOKEN", "session-token-value"),
        ]);
        let request =
            build_policy_request(&region(), &Auth::SigV4, &env, SystemTime::now()).unwrap();
        let values = sensitive_header_values(&request);
        assert!(
            values.contains(&"session-token-value".to_string()),
            "{values:?}"
        );
        assert!(
            values
                .iter()
                .any(|v| v.len() == 64 && v.chars().all(|c| c.is_ascii_hexdigit()))
        );
    }

    #[test]
    fn sigv4_without_secret_key_is_a_clear_error() {
        let env = env_of(&[("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")]);
        let error =
            build_policy_request(&region(), &Auth::SigV4, &env, SystemTime::now()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "missing credentials: AWS_SECRET_ACCESS_KEY is not set"
        );
    }
}
