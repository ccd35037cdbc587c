//! The `vegeta` input format: vegeta's targets, in its "http" format
//! (`METHOD URL` line, `Name: value` header lines, an optional `@body-file`
//! line, targets separated by blank lines, `#` comments) and its JSON format
//! (one object per line: `method`, `url`, `header` of name to string
//! arrays, `body` in base64), told apart target by target.

use std::io;

use bytes::Bytes;
use http::Method;

use super::jsonl::{
    check_fields, decode_base64, headers_from_json, json_object, json_str, malformed_line,
    parse_method, parse_url, push_header, read_file, record, too_long, Line, LineReader,
};
use super::{Next, ReadAhead, Request, Source};

/// The fields of a JSON target.
const JSON_FIELDS: &[&str] = &["method", "url", "header", "body"];

/// Reads vegeta targets.
pub struct VegetaSource {
    lines: LineReader,
    /// A line read ahead that starts the next target.
    pending: Option<Line>,
    max_record: usize,
}

impl VegetaSource {
    /// A source reading `reader` line by line; a target longer than
    /// `max_record` bytes (all its lines) is reported as malformed and
    /// skipped. `@body` files are read relative to the current directory.
    pub fn new(reader: Box<dyn ReadAhead>, max_record: usize) -> Self {
        VegetaSource {
            lines: LineReader::new(reader),
            pending: None,
            max_record,
        }
    }

    fn read(&mut self) -> io::Result<Option<Line>> {
        match self.pending.take() {
            Some(line) => Ok(Some(line)),
            None => self.lines.read(self.max_record),
        }
    }

    /// Reads the rest of an http-format target whose first line is `first`
    /// (already trimmed). After an error the target's other lines are
    /// still read, so they are not taken for targets of their own.
    fn http_target(&mut self, first: &[u8]) -> io::Result<Result<Request, String>> {
        let request_line = request_line(first);
        let mut error = request_line.as_ref().err().cloned();
        let mut headers = Vec::new();
        let mut body = Bytes::new();
        let mut size = first.len();
        while let Some(line) = self.read()? {
            let Some(text) = line.text.as_deref().map(<[u8]>::trim_ascii) else {
                error.get_or_insert_with(|| too_long(self.max_record));
                continue;
            };
            if text.is_empty() {
                break;
            }
            // The next target: an http one, or a JSON one (whose lines
            // follow each other with no blank line between).
            if starts_with_method(text) || text.starts_with(b"{") {
                self.pending = Some(line);
                break;
            }
            if text.starts_with(b"#") {
                continue;
            }
            size += text.len();
            if size > self.max_record {
                error.get_or_insert_with(|| too_long(self.max_record));
            }
            if let Some(path) = text.strip_prefix(b"@") {
                if error.is_none() {
                    match std::str::from_utf8(path) {
                        Ok(path) => match read_file(path, self.max_record) {
                            Ok(content) => body = Bytes::from(content),
                            Err(e) => error = Some(e),
                        },
                        Err(_) => error = Some("body file name is not valid UTF-8".into()),
                    }
                }
                break;
            }
            if error.is_none() {
                let parsed = match text.iter().position(|&b| b == b':') {
                    Some(i) => push_header(&mut headers, text[..i].trim_ascii(), &text[i + 1..]),
                    None => Err(format!("bad header {:?}", String::from_utf8_lossy(text))),
                };
                error = parsed.err();
            }
        }
        Ok(match (error, request_line) {
            (None, Ok((method, target))) => Ok(Request {
                seq: 0,
                method: Some(method),
                target: Some(target),
                headers,
                body,
            }),
            (Some(e), _) | (None, Err(e)) => Err(e),
        })
    }
}

impl Source for VegetaSource {
    /// A target is whole once a line after its first ends it: a blank
    /// line, an `@body` line, or the next target; a JSON target is one line.
    fn buffered(&self) -> bool {
        let mut started = false;
        let pending = self.pending.as_ref().and_then(|l| l.text.as_deref());
        for text in pending.into_iter().chain(self.lines.ahead()) {
            let text = text.trim_ascii();
            if text.starts_with(b"{") {
                return true;
            }
            if starts_with_method(text) {
                if started {
                    return true;
                }
                started = true;
            } else if started && (text.is_empty() || text.starts_with(b"@")) {
                return true;
            }
        }
        false
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            let Some(line) = self.read()? else {
                return Ok(Next::End);
            };
            let Some(text) = &line.text else {
                // Skip the rest of the target too.
                let _ = self.http_target(b"")?;
                return Ok(malformed_line(line.number, too_long(self.max_record)));
            };
            let text = text.trim_ascii();
            if text.is_empty() || text.starts_with(b"#") {
                continue;
            }
            if text.starts_with(b"{") {
                return Ok(record(line.number, json_target(text)));
            }
            let target = self.http_target(text)?;
            return Ok(record(line.number, target));
        }
    }
}

/// Whether a line starts a target, as vegeta decides it: upper-case
/// letters then white space.
fn starts_with_method(text: &[u8]) -> bool {
    let letters = text.iter().take_while(|b| b.is_ascii_uppercase()).count();
    letters > 0 && text.get(letters).is_some_and(u8::is_ascii_whitespace)
}

/// Parses a `METHOD URL` line.
fn request_line(text: &[u8]) -> Result<(Method, String), String> {
    let text = std::str::from_utf8(text).map_err(|_| "not valid UTF-8".to_owned())?;
    if !starts_with_method(text.as_bytes()) {
        return Err(format!("bad target {text:?}: expected METHOD URL"));
    }
    let (method, url) = text
        .split_once(|c: char| c.is_ascii_whitespace())
        .ok_or_else(|| format!("bad target {text:?}"))?;
    Ok((parse_method(method)?, parse_url(url.trim())?))
}

/// Parses a JSON target line.
fn json_target(text: &[u8]) -> Result<Request, String> {
    let obj = json_object(text)?;
    check_fields(&obj, JSON_FIELDS)?;
    let method = json_str(&obj, "method")?.map_or(Ok(Method::GET), parse_method)?;
    let url = json_str(&obj, "url")?.ok_or("missing `url`")?;
    let mut headers = Vec::new();
    if let Some(value) = obj.get("header") {
        headers_from_json(value, &mut headers)?;
    }
    let body = json_str(&obj, "body")?
        .map(decode_base64)
        .transpose()?
        .unwrap_or_default();
    Ok(Request {
        seq: 0,
        method: Some(method),
        target: Some(parse_url(url)?),
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::super::jsonl::tests::{drain, header_strs, reader};
    use super::super::Malformed;
    use super::*;

    fn vegeta(text: &[u8], max: usize) -> Vec<Result<Request, Malformed>> {
        drain(VegetaSource::new(reader(text), max))
    }

    /// Each record as `target` or `location: reason`.
    fn summary(out: &[Result<Request, Malformed>]) -> Vec<String> {
        out.iter()
            .map(|r| match r {
                Ok(r) => r.target.clone().unwrap_or_default(),
                Err(m) => format!("{}: {}", m.location, m.reason),
            })
            .collect()
    }

    #[test]
    fn http_format() {
        let dir = std::env::temp_dir().join(format!("versus-vegeta-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let body = dir.join("body.json");
        std::fs::write(&body, b"{\"a\":1}\n").expect("write");
        let text = format!(
            "# targets\r\nGET http://h/a?x=1\r\nX-Account-ID: 8675309\r\n\r\n\
             POST https://h/b\nContent-Type: application/json\n# note\nX-A: 1\nX-A: 2\n@{}\n\n\
             DELETE http://h/c\nHEAD http://h/d\nHost: dropped\n",
            body.display()
        );
        let out = vegeta(text.as_bytes(), 4096);
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert_eq!(
            summary(&out),
            ["http://h/a?x=1", "https://h/b", "http://h/c", "http://h/d"]
        );
        let reqs: Vec<&Request> = out.iter().flatten().collect();
        assert_eq!(reqs[0].method, Some(Method::GET));
        assert_eq!(
            header_strs(reqs[0]),
            [("x-account-id".into(), "8675309".into())]
        );
        assert_eq!(reqs[1].method, Some(Method::POST));
        assert_eq!(&reqs[1].body[..], b"{\"a\":1}\n");
        assert_eq!(
            header_strs(reqs[1]),
            [
                ("content-type".into(), "application/json".into()),
                ("x-a".into(), "1".into()),
                ("x-a".into(), "2".into())
            ]
        );
        assert_eq!(reqs[2].method, Some(Method::DELETE));
        assert_eq!(reqs[3].method, Some(Method::HEAD));
        assert!(reqs[3].headers.is_empty());
    }

    #[test]
    fn json_format_mixed_per_target() {
        let text =
            br#"{"method":"POST","url":"http://h/j","header":{"X-A":["1","2"]},"body":"aGk="}
GET http://h/plain

{"url":"http://h/k"}
"#;
        let out = vegeta(text, 4096);
        assert_eq!(
            summary(&out),
            ["http://h/j", "http://h/plain", "http://h/k"]
        );
        let reqs: Vec<&Request> = out.iter().flatten().collect();
        assert_eq!(reqs[0].method, Some(Method::POST));
        assert_eq!(&reqs[0].body[..], b"hi");
        assert_eq!(
            header_strs(reqs[0]),
            [("x-a".into(), "1".into()), ("x-a".into(), "2".into())]
        );
        assert_eq!(reqs[2].method, Some(Method::GET));
    }

    #[test]
    fn bad_targets_are_skipped_whole() {
        let text = b"GET http://h/1\n\n\
            get http://h/2\nX-A: 1\n\n\
            GET /relative\n\n\
            POST http://h/3\nbad header line\nX-B: 2\n\n\
            PUT http://h/4\n@/nonexistent/versus/body\n\n\
            {\"url\":\"http://h/5\",\"headers\":{}}\n\
            {\"url\":\"http://h/6\",\"body\":\"*\"}\n\
            {\"method\":\"GET\"}\n\
            GET http://h/\xff\n\
            GET http://h/7\n";
        let out = vegeta(text, 4096);
        let s = summary(&out);
        assert_eq!(s.len(), 10, "{s:?}");
        assert_eq!(s[0], "http://h/1");
        assert_eq!(
            s[1],
            "line 3: bad target \"get http://h/2\": expected METHOD URL"
        );
        assert_eq!(s[2], "line 6: URL \"/relative\" is not absolute");
        assert_eq!(s[3], "line 8: bad header \"bad header line\"");
        assert!(
            s[4].starts_with("line 12: cannot read /nonexistent/versus/body"),
            "{}",
            s[4]
        );
        assert!(
            s[5].starts_with("line 15: unknown field `headers`"),
            "{}",
            s[5]
        );
        assert!(s[6].starts_with("line 16: invalid base64"), "{}", s[6]);
        assert_eq!(s[7], "line 17: missing `url`");
        assert_eq!(s[8], "line 18: not valid UTF-8");
        assert_eq!(s[9], "http://h/7");
    }

    /// An endless body file (`@/dev/zero`) is cut at the record limit, not
    /// read into all of memory.
    #[test]
    fn an_endless_body_file_is_too_long() {
        let out = vegeta(b"POST http://h/\n@/dev/zero\n\nGET http://h/2\n", 4096);
        let s = summary(&out);
        assert!(
            s[0].contains("/dev/zero is longer than 4096 bytes"),
            "{s:?}"
        );
        assert_eq!(s[1], "http://h/2");
    }

    #[test]
    fn oversized_targets() {
        let long = "v".repeat(80);
        let text = format!(
            "GET http://h/1\nX-Long: {long}\nX-B: 1\n\nGET http://h/{long}\nX-C: 1\n\nGET http://h/2\nX-A: {}\nX-B: {}\n\nGET http://h/3\n",
            "a".repeat(30),
            "b".repeat(30)
        );
        let out = vegeta(text.as_bytes(), 60);
        assert_eq!(
            summary(&out),
            [
                "line 1: record longer than 60 bytes",
                "line 5: record longer than 60 bytes",
                "line 8: record longer than 60 bytes",
                "http://h/3"
            ]
        );
        // An over-long JSON target costs itself only, not the ones after it.
        let text = format!(
            "{{\"method\":\"GET\",\"url\":\"http://h/{long}\"}}\n{{\"method\":\"GET\",\"url\":\"http://h/4\"}}\n{{\"method\":\"GET\",\"url\":\"http://h/5\"}}\n"
        );
        let out = vegeta(text.as_bytes(), 60);
        assert_eq!(
            summary(&out),
            [
                "line 1: record longer than 60 bytes",
                "http://h/4",
                "http://h/5"
            ]
        );
    }
}
