//! Kubernetes' URL library: `url()`, `isURL()` and the `URL` methods `getScheme`, `getHost`,
//! `getHostname`, `getPort`, `getEscapedPath`, `getQuery`.
//!
//! Kubernetes parses with Go's `url.ParseRequestURI` (an absolute URL or an absolute path, no
//! fragment handling) and keeps the text as written: `getHost` is `host:port` as given, the port
//! is not defaulted, the host is not lower-cased. A WHATWG parser (the `url` crate) normalizes all
//! of that, so this module splits the text the way Go does instead, with Go's checks for control
//! characters, the scheme, the port and the host characters. The `url` crate is used only for
//! percent-decoding the query.

use super::{Outcome, boolean, fail, opaque_val, string, string_arg, take, typed_arg};
use cel::common::types::{CelList, CelMap, CelMapKey, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env};
use std::collections::HashMap;

/// The CEL type of a URL, named as Kubernetes names it.
pub(crate) static URL_TYPE: Type = Type::new_unspecified_type("kubernetes.URL");

/// A URL split as Go's `net/url` splits it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    path: String,
    raw_query: String,
}

impl Url {
    /// Parses `raw` as `url.ParseRequestURI` accepts it; the error is worded after Go's.
    pub(crate) fn parse(raw: &str) -> Result<Url, String> {
        let error = |reason: &str| {
            format!("URL parse error during conversion from string: parse {raw:?}: {reason}")
        };
        if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(error("net/url: invalid control character in URL"));
        }
        if raw.is_empty() {
            return Err(error("empty url"));
        }
        let (scheme, rest) = split_scheme(raw).map_err(&error)?;
        let (rest, raw_query) = match rest.split_once('?') {
            Some((before, query)) => (before, query.to_owned()),
            None => (rest, String::new()),
        };
        if !rest.starts_with('/') {
            if scheme.is_empty() {
                return Err(error("invalid URI for request"));
            }
            // An opaque URL (`mailto:x`): no host, no path.
            return Ok(Url {
                scheme,
                host: String::new(),
                path: String::new(),
                raw_query,
            });
        }
        let (host, path) = match rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
            Some(after) => {
                let end = after.find('/').unwrap_or(after.len());
                let authority = &after[..end];
                let host = authority
                    .rsplit_once('@')
                    .map_or(authority, |(_, host)| host);
                check_host(host).map_err(|e| error(&e))?;
                (host.to_owned(), after[end..].to_owned())
            }
            None => (String::new(), rest.to_owned()),
        };
        check_escapes(&path).map_err(|e| error(&e))?;
        Ok(Url {
            scheme,
            host,
            path,
            raw_query,
        })
    }

    /// The host without the port or the IPv6 brackets (Go's `Hostname`).
    fn hostname(&self) -> &str {
        let (host, _) = split_port(&self.host);
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }

    /// The port, empty when there is none (Go's `Port`).
    fn port(&self) -> &str {
        split_port(&self.host).1
    }
}

/// `(scheme, rest)`: the scheme as Go's `getScheme` finds it.
fn split_scheme(raw: &str) -> Result<(String, &str), &'static str> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme"),
            ':' => return Ok((raw[..i].to_ascii_lowercase(), &raw[i + 1..])),
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

/// `(host, port)` of `host:port`, `[v6]:port` or a host without a port.
fn split_port(host: &str) -> (&str, &str) {
    let colon = match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => i,
        _ => return (host, ""),
    };
    (&host[..colon], &host[colon + 1..])
}

/// Go's host checks: a numeric port, and no character a host may not hold.
fn check_host(host: &str) -> Result<(), String> {
    let (name, port) = split_port(host);
    if host.contains(':') && !host.starts_with('[') && name.contains(':') {
        return Err(format!(
            "invalid port {:?} after host",
            &host[host.find(':').unwrap_or(0)..]
        ));
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("invalid port \":{port}\" after host"));
    }
    let allowed = |c: char| {
        c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:[]<>\"%".contains(c) || !c.is_ascii()
    };
    if let Some(bad) = name.chars().find(|c| !allowed(*c)) {
        return Err(format!(
            "invalid character {:?} in host name",
            bad.to_string()
        ));
    }
    check_escapes(name)
}

/// Every `%` must start a two-digit hex escape.
fn check_escapes(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%' {
            let escape = bytes.get(i + 1..i + 3).unwrap_or(&bytes[i + 1..]);
            if escape.len() < 2 || !escape.iter().all(u8::is_ascii_hexdigit) {
                let shown =
                    String::from_utf8_lossy(&bytes[i..(i + 3).min(bytes.len())]).into_owned();
                return Err(format!("invalid URL escape {shown:?}"));
            }
        }
    }
    Ok(())
}

/// The path with the characters Go escapes in a path escaped (`EscapedPath`).
fn escaped_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        let keep = c.is_ascii_alphanumeric() || "-_.~$&+,/:;=@%!'()*".contains(c);
        if keep {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

opaque_val!(Url, URL_TYPE);

/// Registers the URL functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let u = || URL_TYPE.to_owned();
    env.add_type(u())?;
    env.add_overload("url", "k8s_string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "k8s_is_url", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "k8s_url_get_scheme", u(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "k8s_url_get_host", u(), vec![], get_host)?;
    env.add_member_overload(
        "getHostname",
        "k8s_url_get_hostname",
        u(),
        vec![],
        get_hostname,
    )?;
    env.add_member_overload("getPort", "k8s_url_get_port", u(), vec![], get_port)?;
    env.add_member_overload(
        "getEscapedPath",
        "k8s_url_get_escaped_path",
        u(),
        vec![],
        get_escaped_path,
    )?;
    env.add_member_overload("getQuery", "k8s_url_get_query", u(), vec![], get_query)
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("url", args)?;
    let url = Url::parse(string_arg("url", raw.as_ref())?).map_err(|e| fail("url", e))?;
    Ok(CowVal::owned(url))
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("isURL", args)?;
    boolean(Url::parse(string_arg("isURL", raw.as_ref())?).is_ok())
}

/// Applies a string accessor to the receiver URL.
fn accessor<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    get: fn(&Url) -> String,
) -> Outcome<'b, 'v> {
    let [url] = take(function, args)?;
    string(get(typed_arg::<Url>(function, url.as_ref())?))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    accessor("getScheme", args, |u| u.scheme.clone())
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    accessor("getHost", args, |u| u.host.clone())
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    accessor("getHostname", args, |u| u.hostname().to_owned())
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    accessor("getPort", args, |u| u.port().to_owned())
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    accessor("getEscapedPath", args, |u| escaped_path(&u.path))
}

/// The query as Go's `Query()` decodes it: `k=v` pairs split on `&`, `+` as space, pairs with a
/// `;` or a bad escape dropped, values of a repeated key kept in order.
fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [url] = take("getQuery", args)?;
    let url = typed_arg::<Url>("getQuery", url.as_ref())?;
    let mut query: Vec<(String, Vec<String>)> = Vec::new();
    for pair in url
        .raw_query
        .split('&')
        .filter(|p| !p.is_empty() && !p.contains(';'))
    {
        if check_escapes(pair).is_err() {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let (key, value) = (decode(key), decode(value));
        match query.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => query.push((key, vec![value])),
        }
    }
    let map: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = query
        .into_iter()
        .map(|(key, values)| {
            let values: Vec<Box<dyn Val + 'v>> = values
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>)
                .collect();
            (
                CelMapKey::from(key),
                Box::new(CelList::from(values)) as Box<dyn Val + 'v>,
            )
        })
        .collect();
    Ok(CowVal::owned(CelMap::from(map)))
}

#[cfg(test)]
mod tests {
    use super::Url;

    #[test]
    fn keeps_the_text_as_go_does() {
        let url = Url::parse("https://Example.com:80/p?q=1").unwrap();
        assert_eq!(
            (url.host.as_str(), url.hostname(), url.port()),
            ("Example.com:80", "Example.com", "80")
        );
        let v6 = Url::parse("https://[::1]:80/").unwrap();
        assert_eq!((v6.hostname(), v6.port()), ("::1", "80"));
        assert_eq!(Url::parse("/abs/path").unwrap().scheme, "");
    }

    #[test]
    fn refuses_what_parse_request_uri_refuses() {
        for raw in [
            "relative/path",
            "https://a b",
            "",
            ":x",
            "https://a:b/",
            "http://a/%zz",
            "a\u{7f}",
        ] {
            assert!(Url::parse(raw).is_err(), "{raw}");
        }
    }
}
