//! Endpoint specifications: `NAME=URL` arguments parsed into the scheme,
//! address, base path and request style of one endpoint, with the label and
//! masked URL that reports show. No sockets here.

use std::fmt;

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::model::{secret, Style};

/// Transport security of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain TCP (`http://`, `ws://`).
    Http,
    /// TLS (rustls) (`https://`, `wss://`).
    Https,
}

/// One endpoint as the user named it, validated.
#[derive(Clone, Debug)]
pub struct EndpointSpec {
    /// The label used in every report: the given name, or the masked URL.
    pub label: String,
    /// True when the user gave the label (`NAME=URL`).
    pub named: bool,
    /// The URL as shown in reports (secrets masked unless asked otherwise).
    pub display_url: String,
    /// Plain TCP or TLS.
    pub scheme: Scheme,
    /// How input lines become requests.
    pub style: Style,
    /// Host name or IP literal (without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The `Host` header value (`host` or `host:port`).
    pub authority: String,
    /// Path and query of the URL, at least `/`.
    pub base_path: String,
    /// Headers sent with every request to this endpoint (global, then own):
    /// a gRPC endpoint's metadata.
    pub headers: HeaderMap,
    /// A gRPC endpoint's schema and methods, resolved before the run
    /// (`None` until then, and for every other endpoint).
    pub grpc: Option<std::sync::Arc<crate::grpc::Service>>,
    /// How this endpoint makes its request of each record of a stream
    /// (`--template`), instead of taking the record as its style says.
    pub template: Option<std::sync::Arc<crate::scenario::LineTemplate>>,
    /// This endpoint's own TLS client configuration, with its own client
    /// certificate (`--endpoint-cert`), instead of the run's.
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

/// A bad endpoint argument; the message names the argument and the fix.
#[derive(Debug, thiserror::Error)]
#[error("endpoint {arg:?}: {problem}")]
pub struct SpecError {
    arg: String,
    problem: String,
}

impl EndpointSpec {
    /// Parse `URL` or `NAME=URL`. `index` numbers unnamed endpoints.
    ///
    /// # Errors
    /// When the URL has an unknown scheme, no host, a bad port, or the name
    /// is empty.
    pub fn parse(arg: &str, show_secrets: bool) -> Result<EndpointSpec, SpecError> {
        let fail = |problem: &str| SpecError {
            arg: secret::mask_url(arg),
            problem: problem.to_string(),
        };
        let (name, url) = match arg.find("://") {
            Some(scheme_at) => match arg[..scheme_at].find('=') {
                Some(eq) => (Some(&arg[..eq]), &arg[eq + 1..]),
                None => (None, arg),
            },
            None => return Err(fail("not a URL: expected http://, https://, http+get://, https+get://, http+post://, https+post://, ws://, wss://, grpc:// or grpcs://")),
        };
        if let Some(n) = name {
            if n.is_empty() || n.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(fail(
                    "the name before '=' must be non-empty, without spaces",
                ));
            }
        }
        let (scheme_str, rest) = url.split_once("://").ok_or_else(|| fail("not a URL"))?;
        let (scheme, style) = match scheme_str.to_ascii_lowercase().as_str() {
            "http" | "http+post" => (Scheme::Http, Style::Post),
            "https" | "https+post" => (Scheme::Https, Style::Post),
            "http+get" => (Scheme::Http, Style::Get),
            "https+get" => (Scheme::Https, Style::Get),
            "ws" => (Scheme::Http, Style::WebSocket),
            "wss" => (Scheme::Https, Style::WebSocket),
            "grpc" => (Scheme::Http, Style::Grpc),
            "grpcs" => (Scheme::Https, Style::Grpc),
            other => {
                return Err(fail(&format!(
                    "unknown scheme {other:?}: use http, https, http+get, https+get, http+post, https+post, ws, wss, grpc or grpcs"
                )))
            }
        };
        let (authority_part, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        // Drop user info; credentials belong in headers.
        let hostport = match authority_part.rfind('@') {
            Some(at) => &authority_part[at + 1..],
            None => authority_part,
        };
        let default_port = match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        let (host, port) = split_host_port(hostport, default_port).map_err(|p| fail(&p))?;
        if host.is_empty() {
            return Err(fail("the URL has no host"));
        }
        let base_path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        if http::uri::PathAndQuery::try_from(base_path.as_str()).is_err() {
            return Err(fail(
                "the path has characters that are not allowed in a URL",
            ));
        }
        let authority = if port == default_port {
            bracket(&host)
        } else {
            format!("{}:{port}", bracket(&host))
        };
        let display_url = if show_secrets {
            url.to_string()
        } else {
            secret::mask_url(url)
        };
        let (label, named) = match name {
            Some(n) => (n.to_string(), true),
            None => (display_url.clone(), false),
        };
        let mut headers = HeaderMap::new();
        if let Some(at) = authority_part.rfind('@') {
            // user:password@ becomes Basic authorization, as curl does.
            let userinfo = &authority_part[..at];
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(userinfo.as_bytes());
            let value = format!("Basic {encoded}");
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(http::header::AUTHORIZATION, v);
            }
        }
        Ok(EndpointSpec {
            label,
            named,
            display_url,
            scheme,
            style,
            host,
            port,
            authority,
            base_path,
            headers,
            grpc: None,
            template: None,
            tls: None,
        })
    }

    /// Add a header for this endpoint (replacing one of the same name that
    /// came from the URL or the global headers).
    pub fn set_header(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.insert(name, value);
    }
}

impl fmt::Display for EndpointSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.named {
            write!(f, "{} {:?}", self.label, self.display_url)
        } else {
            write!(f, "{:?}", self.display_url)
        }
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn split_host_port(hostport: &str, default_port: u16) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let end = rest.find(']').ok_or("unclosed '[' in IPv6 address")?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err("unexpected text after IPv6 address".into()),
        };
        (rest[..end].to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("bad port {p:?}: expected a number from 1 to 65535"))?,
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_schemes_and_ports() {
        let e = EndpointSpec::parse("infura=https://mainnet.example/v3/abc", false).unwrap();
        assert_eq!(e.label, "infura");
        assert!(e.named);
        assert_eq!((e.scheme, e.style), (Scheme::Https, Style::Post));
        assert_eq!((e.host.as_str(), e.port), ("mainnet.example", 443));
        assert_eq!(e.authority, "mainnet.example");
        assert_eq!(e.base_path, "/v3/abc");

        let e = EndpointSpec::parse("http+get://127.0.0.1:8080/api?x=1", false).unwrap();
        assert_eq!(
            (e.scheme, e.style, e.port),
            (Scheme::Http, Style::Get, 8080)
        );
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(e.base_path, "/api?x=1");
        assert!(!e.named);

        let e = EndpointSpec::parse("http://[::1]:9/", false).unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9));
        assert_eq!(e.authority, "[::1]:9");

        let e = EndpointSpec::parse("node=ws://127.0.0.1:8546", false).unwrap();
        assert_eq!(
            (e.scheme, e.style, e.port, e.base_path.as_str()),
            (Scheme::Http, Style::WebSocket, 8546, "/")
        );
        let e = EndpointSpec::parse("WSS://h/v3/key", false).unwrap();
        assert_eq!(
            (e.scheme, e.style, e.port, e.authority.as_str()),
            (Scheme::Https, Style::WebSocket, 443, "h")
        );

        let e = EndpointSpec::parse("g=grpc://127.0.0.1:50051/items.Items/GetItem", false).unwrap();
        assert_eq!(
            (e.scheme, e.style, e.port, e.base_path.as_str()),
            (Scheme::Http, Style::Grpc, 50051, "/items.Items/GetItem")
        );
        let e = EndpointSpec::parse("grpcs://h", false).unwrap();
        assert_eq!(
            (e.scheme, e.style, e.port),
            (Scheme::Https, Style::Grpc, 443)
        );

        let e = EndpointSpec::parse("a=http://h/x?k=v=w", false).unwrap();
        assert_eq!((e.label.as_str(), e.base_path.as_str()), ("a", "/x?k=v=w"));
    }

    #[test]
    fn user_info_becomes_basic_auth_and_is_masked() {
        let e = EndpointSpec::parse("http://user:pw@h:1/", false).unwrap();
        assert_eq!(e.headers[http::header::AUTHORIZATION], "Basic dXNlcjpwdw==");
        assert!(!e.display_url.contains("pw"), "{}", e.display_url);
    }

    #[test]
    fn rejects_bad_endpoints_with_a_reason() {
        for (arg, want) in [
            ("localhost:8080", "not a URL"),
            ("ftp://h/", "unknown scheme"),
            ("ftp://h/", "grpc or grpcs"),
            ("localhost:8546", "wss://, grpc:// or grpcs://"),
            ("http://h:99999/", "bad port"),
            ("http://:80/", "no host"),
            ("=http://h/", "name before"),
        ] {
            let err = EndpointSpec::parse(arg, false).unwrap_err().to_string();
            assert!(err.contains(want), "{arg}: {err}");
        }
    }
}
