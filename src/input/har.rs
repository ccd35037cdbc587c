//! The `har` input format: a HAR 1.2 file (browser developer tools,
//! Playwright, proxies), whose `log.entries[].request` are replayed in
//! order. The whole file is read into memory on the first read.

use std::io::{self, Read as _};

use bytes::Bytes;
use http::HeaderValue;
use serde::Deserialize;
use serde_json::Value;

use super::jsonl::{
    decode_base64, has_header, parse_method, parse_url, percent_encode, push_header,
};
use super::{Malformed, Next, ReadAhead, Request, Source};

/// Reads the requests of a HAR file.
pub struct HarSource {
    /// The input, until it has been read.
    reader: Option<Box<dyn ReadAhead>>,
    /// The entries not yet replayed.
    entries: std::vec::IntoIter<Value>,
    /// The 1-based number of the last entry taken.
    number: u64,
}

impl HarSource {
    /// A source replaying the HAR file in `reader`.
    pub fn new(reader: Box<dyn ReadAhead>) -> Self {
        HarSource {
            reader: Some(reader),
            entries: Vec::new().into_iter(),
            number: 0,
        }
    }
}

impl Source for HarSource {
    fn buffered(&self) -> bool {
        // Once the file is read, every entry is in memory.
        self.reader.is_none()
    }

    fn next(&mut self) -> io::Result<Next> {
        if let Some(mut reader) = self.reader.take() {
            let mut data = Vec::new();
            reader.read_to_end(&mut data)?;
            match parse_file(&data) {
                Ok(entries) => self.entries = entries.into_iter(),
                Err(reason) => {
                    return Ok(Next::Malformed(Malformed {
                        location: "file".into(),
                        reason: format!("not a HAR file: {reason}"),
                    }))
                }
            }
        }
        let Some(entry) = self.entries.next() else {
            return Ok(Next::End);
        };
        self.number += 1;
        Ok(match parse_entry(entry) {
            Ok(request) => Next::Request(request),
            Err(reason) => Next::Malformed(Malformed {
                location: format!("entry {}", self.number),
                reason,
            }),
        })
    }
}

/// The top of a HAR file; the entries are checked one by one.
#[derive(Deserialize)]
struct HarFile {
    log: HarLog,
}

#[derive(Deserialize)]
struct HarLog {
    entries: Vec<Value>,
}

/// The parts of a HAR request that are replayed.
#[derive(Deserialize)]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<HarHeader>,
    #[serde(rename = "postData")]
    post_data: Option<HarPostData>,
}

#[derive(Deserialize)]
struct HarHeader {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct HarPostData {
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    text: Option<String>,
    #[serde(default)]
    params: Vec<HarParam>,
    encoding: Option<String>,
}

#[derive(Deserialize)]
struct HarParam {
    name: String,
    #[serde(default)]
    value: String,
    #[serde(rename = "fileName")]
    file_name: Option<String>,
}

/// The entries of a HAR file, or why it is not one.
fn parse_file(data: &[u8]) -> Result<Vec<Value>, String> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let value: Value = serde_json::from_slice(data).map_err(|e| format!("invalid JSON: {e}"))?;
    let file: HarFile =
        serde_json::from_value(value).map_err(|e| format!("no log.entries ({e})"))?;
    Ok(file.log.entries)
}

/// Turns one entry into a request.
fn parse_entry(entry: Value) -> Result<Request, String> {
    let Value::Object(mut entry) = entry else {
        return Err("not an object".into());
    };
    let request = entry.remove("request").ok_or("no request")?;
    let request: HarRequest =
        serde_json::from_value(request).map_err(|e| format!("bad request: {e}"))?;
    let method = parse_method(&request.method)?;
    let target = parse_url(&request.url)?;
    let mut headers = Vec::new();
    for h in &request.headers {
        push_header(&mut headers, h.name.as_bytes(), h.value.as_bytes())?;
    }
    let body = match request.post_data {
        None => Bytes::new(),
        Some(post) => {
            let body = post_body(&post)?;
            if !body.is_empty()
                && !post.mime_type.is_empty()
                && !has_header(&headers, &http::header::CONTENT_TYPE)
            {
                let value = HeaderValue::from_str(&post.mime_type)
                    .map_err(|_| "invalid postData.mimeType".to_owned())?;
                headers.push((http::header::CONTENT_TYPE, value));
            }
            body
        }
    };
    Ok(Request {
        seq: 0,
        method: Some(method),
        target: Some(target),
        headers,
        body,
    })
}

/// The body of `postData`: its `text` (base64-decoded when so encoded), or
/// else its `params` form-encoded (spaces as `%20`).
fn post_body(post: &HarPostData) -> Result<Bytes, String> {
    match (&post.text, post.encoding.as_deref()) {
        (Some(text), Some("base64")) => decode_base64(text),
        (Some(_), Some(other)) => Err(format!("unsupported postData.encoding {other:?}")),
        (Some(text), None) => Ok(Bytes::copy_from_slice(text.as_bytes())),
        (None, _) if post.params.iter().any(|p| p.file_name.is_some()) => {
            Err("postData.params with files and no text".into())
        }
        (None, _) => {
            let pairs: Vec<String> = post
                .params
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        percent_encode(p.name.as_bytes()),
                        percent_encode(p.value.as_bytes())
                    )
                })
                .collect();
            Ok(Bytes::from(pairs.join("&")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::jsonl::tests::{drain, header_strs, reader};
    use super::*;
    use http::Method;

    fn har(text: &[u8]) -> Vec<Result<Request, Malformed>> {
        drain(HarSource::new(reader(text)))
    }

    fn entries(requests: &str) -> String {
        format!(r#"{{"log":{{"version":"1.2","entries":[{requests}]}}}}"#)
    }

    #[test]
    fn chromium_fixture() {
        // The server's port is fixed in the recorded file.
        let out = har(include_bytes!("../../tests/fixtures/chromium.har"));
        let [Ok(page), Ok(get), Ok(post)] = out.as_slice() else {
            panic!("expected three requests: {out:?}")
        };
        assert_eq!(page.target.as_deref(), Some("http://127.0.0.1:36707/"));

        assert_eq!(get.method, Some(Method::GET));
        assert_eq!(
            get.target.as_deref(),
            Some("http://127.0.0.1:36707/api/search?q=caf%C3%A9&n=2")
        );
        assert!(get.body.is_empty());

        assert_eq!(post.method, Some(Method::POST));
        assert_eq!(
            post.target.as_deref(),
            Some("http://127.0.0.1:36707/api/items")
        );
        assert_eq!(
            &post.body[..],
            br#"{"name":"widget","count":3,"tags":["a","b"]}"#
        );
        let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                  HeadlessChrome/156.0.0.0 Safari/537.36";
        let expected: Vec<(String, String)> = [
            ("accept", "*/*"),
            ("accept-encoding", "gzip, deflate, br, zstd"),
            ("accept-language", "en-US,en;q=0.9"),
            ("content-type", "application/json"),
            ("origin", "http://127.0.0.1:36707"),
            ("referer", "http://127.0.0.1:36707/"),
            ("sec-fetch-dest", "empty"),
            ("sec-fetch-mode", "cors"),
            ("sec-fetch-site", "same-origin"),
            ("user-agent", ua),
            ("x-versus-test", "fixture-1"),
            ("sec-ch-ua", r#""Not:A-Brand";v="8", "Chromium";v="156""#),
            ("sec-ch-ua-mobile", "?0"),
            ("sec-ch-ua-platform", r#""Linux""#),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(header_strs(post), expected);
    }

    #[test]
    fn entries_in_order_with_filtered_headers() {
        let text = entries(
            r#"{"request":{"method":"GET","url":"https://h/a?x=1","headers":[
                {"name":":authority","value":"h"},{"name":":method","value":"GET"},
                {"name":"accept","value":"*/*"},{"name":"Host","value":"h"},
                {"name":"Cookie","value":"a=1"}]}},
               {"request":{"method":"POST","url":"https://h/b","headers":[],
                "postData":{"mimeType":"text/plain","text":"hello"}}}"#,
        );
        let out = har(text.as_bytes());
        let [Ok(a), Ok(b)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(a.target.as_deref(), Some("https://h/a?x=1"));
        assert_eq!(
            header_strs(a),
            [
                ("accept".into(), "*/*".into()),
                ("cookie".into(), "a=1".into())
            ]
        );
        assert_eq!(b.method, Some(Method::POST));
        assert_eq!(&b.body[..], b"hello");
        assert_eq!(
            header_strs(b),
            [("content-type".into(), "text/plain".into())]
        );
    }

    #[test]
    fn base64_and_params_bodies() {
        let text = entries(
            r#"{"request":{"method":"PUT","url":"http://h/","postData":
                {"mimeType":"application/octet-stream","text":"AAE=","encoding":"base64"}}},
               {"request":{"method":"POST","url":"http://h/f","headers":[
                {"name":"Content-Type","value":"application/x-www-form-urlencoded"}],
                "postData":{"mimeType":"application/x-www-form-urlencoded",
                "params":[{"name":"a b","value":"1&2"},{"name":"c"}]}}}"#,
        );
        let out = har(text.as_bytes());
        let [Ok(a), Ok(b)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(&a.body[..], &[0u8, 1]);
        assert_eq!(&b.body[..], b"a%20b=1%262&c=");
        assert_eq!(b.headers.len(), 1);
    }

    #[test]
    fn bad_entries_are_skipped() {
        let text = entries(
            r#"{"request":{"method":"GET","url":"http://h/1"}},
               {"request":{"method":"GET"}},
               42,
               {"response":{}},
               {"request":{"method":"GET","url":"not a url"}},
               {"request":{"method":"POST","url":"http://h/x","postData":{"text":"%%","encoding":"base64"}}},
               {"request":{"method":"POST","url":"http://h/x","postData":{"params":[{"name":"f","fileName":"a.txt"}]}}},
               {"request":{"method":"GET","url":"http://h/2","headers":[{"name":"X","value":"a\u0000"}]}},
               {"request":{"method":"GET","url":"http://h/3"}}"#,
        );
        let out = har(text.as_bytes());
        let locations: Vec<String> = out
            .iter()
            .map(|r| match r {
                Ok(r) => r.target.clone().unwrap_or_default(),
                Err(m) => format!("{}: {}", m.location, m.reason),
            })
            .collect();
        assert_eq!(locations.len(), 9);
        assert_eq!(locations[0], "http://h/1");
        assert!(locations[1].starts_with("entry 2: bad request: missing field `url`"));
        assert_eq!(locations[2], "entry 3: not an object");
        assert_eq!(locations[3], "entry 4: no request");
        assert!(locations[4].starts_with("entry 5: invalid URL"));
        assert!(locations[5].starts_with("entry 6: invalid base64"));
        assert_eq!(
            locations[6],
            "entry 7: postData.params with files and no text"
        );
        assert_eq!(locations[7], "entry 8: invalid value for header x");
        assert_eq!(locations[8], "http://h/3");
    }

    #[test]
    fn not_a_har_file() {
        for (text, reason) in [
            (&b"GET / HTTP/1.1"[..], "not a HAR file: invalid JSON"),
            (b"{\"log\":{}}", "not a HAR file: no log.entries"),
            (b"[1,2]", "not a HAR file: no log.entries"),
            (b"\xff\xfe{", "not a HAR file: invalid JSON"),
            (b"", "not a HAR file: invalid JSON"),
        ] {
            let out = har(text);
            assert_eq!(out.len(), 1, "{out:?}");
            let m = out[0].as_ref().expect_err("malformed");
            assert_eq!(m.location, "file");
            assert!(m.reason.starts_with(reason), "{}", m.reason);
        }
    }

    #[test]
    fn bom_and_empty_entries() {
        let out = har(b"\xEF\xBB\xBF{\"log\":{\"entries\":[]}}");
        assert!(out.is_empty());
    }
}
