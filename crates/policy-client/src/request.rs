//! Sans-IO request building: the `GET {endpoint}/api/v1/policy` request for one region, with its
//! authentication headers. Pure apart from reading credentials through the caller's env lookup.
//!
//! Every header that carries a credential is marked sensitive, so `Debug` output of the request
//! never shows it; errors name the missing variable, never a value.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use http::header::{ACCEPT, AUTHORIZATION, HOST, HeaderValue, USER_AGENT};
use http::{Method, Request, Uri};

use crate::regions::{Auth, Region};

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
    /// A credential holds characters that cannot be sent in an HTTP header.
    #[error("invalid credentials: {var} is not a valid header value")]
    InvalidCredential {
        /// The variable's name (never its value).
        var: String,
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
            let token = required(env, token_env)?;
            let value = sensitive(&format!("Bearer {token}"), token_env)?;
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        Auth::Header { name, value_env } => {
            let value = sensitive(&required(env, value_env)?, value_env)?;
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
    let access_key = required(env, "AWS_ACCESS_KEY_ID")?;
    let secret_key = required(env, "AWS_SECRET_ACCESS_KEY")?;
    let session_token = env("AWS_SESSION_TOKEN").filter(|t| !t.is_empty());
    let identity: Identity =
        Credentials::new(access_key, secret_key, session_token, None, "environment").into();
    let signing_region = region.signing_region();
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

fn required(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<String, RequestError> {
    env(var)
        .filter(|value| !value.trim().is_empty())
        .ok_or_else(|| RequestError::MissingCredential {
            var: var.to_string(),
        })
}

fn sensitive(value: &str, var: &str) -> Result<HeaderValue, RequestError> {
    let mut value =
        HeaderValue::from_str(value.trim()).map_err(|_| RequestError::InvalidCredential {
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
