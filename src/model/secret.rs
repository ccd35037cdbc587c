//! Masking of secrets in what versus shows: API keys in URL paths and
//! queries, passwords in user info, and credential headers. Reports, logs
//! and saved files call these unless the user passed `--show-secrets`.

/// Query parameter names whose values are secrets.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "access_token",
    "auth",
    "secret",
    "password",
    "pass",
    "signature",
    "sig",
    "x-api-key",
];

/// Header names whose values are secrets.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
];

/// The mask that replaces a secret.
pub const MASK: &str = "...";

/// Mask the secrets of a URL: the password of the user info (all of it when
/// it is a bare token), path segments
/// that look like keys (long runs of letters and digits that include both),
/// and the values of query parameters named like keys or tokens.
pub fn mask_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let (authority, tail) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = match authority.rfind('@') {
        // `user:password@`: the password is the secret.
        Some(at) if authority[..at].contains(':') => {
            let user = authority[..at].split(':').next().unwrap_or("");
            format!("{user}:{MASK}@{}", &authority[at + 1..])
        }
        // `token@` (sent as a Basic credential too): all of it is.
        Some(at) => format!("{MASK}@{}", &authority[at + 1..]),
        None => authority.to_string(),
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let path: Vec<String> = path
        .split('/')
        .map(|seg| {
            if looks_like_key(seg) {
                MASK.to_string()
            } else {
                seg.to_string()
            }
        })
        .collect();
    let mut out = String::with_capacity(url.len());
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    }
    out.push_str(&authority);
    out.push_str(&path.join("/"));
    if let Some(q) = query {
        out.push('?');
        let parts: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if is_secret_param(k) || looks_like_key(v) => format!("{k}={MASK}"),
                _ => kv.to_string(),
            })
            .collect();
        out.push_str(&parts.join("&"));
    }
    out
}

/// True when a header's value must be masked.
pub fn is_secret_header(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// The value to show for a header: masked if it is a credential.
pub fn show_header<'a>(name: &str, value: &'a str, show_secrets: bool) -> &'a str {
    if !show_secrets && is_secret_header(name) {
        MASK
    } else {
        value
    }
}

fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// A URL segment that looks like an API key: 16 or more characters of
/// letters, digits, `-` and `_`, with at least one letter and one digit.
fn looks_like_key(seg: &str) -> bool {
    seg.len() >= 16
        && seg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && seg.bytes().any(|b| b.is_ascii_digit())
        && seg.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keys_in_paths_queries_and_user_info() {
        assert_eq!(
            mask_url("https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161"),
            "https://mainnet.infura.io/v3/..."
        );
        assert_eq!(
            mask_url("https://h/rpc?apikey=abc&chain=1"),
            "https://h/rpc?apikey=...&chain=1"
        );
        assert_eq!(mask_url("http://bob:hunter2@h:8/x"), "http://bob:...@h:8/x");
        // A bare token as user info is the credential itself.
        assert_eq!(mask_url("https://tok3nVALUE@h/x"), "https://...@h/x");
        assert_eq!(mask_url("http://127.0.0.1:8545/"), "http://127.0.0.1:8545/");
        assert_eq!(
            mask_url("http://h/users/12345/profile"),
            "http://h/users/12345/profile"
        );
    }

    #[test]
    fn masks_credential_headers_only() {
        assert_eq!(show_header("Authorization", "Bearer x", false), MASK);
        assert_eq!(show_header("authorization", "Bearer x", true), "Bearer x");
        assert_eq!(
            show_header("Content-Type", "application/json", false),
            "application/json"
        );
    }
}
