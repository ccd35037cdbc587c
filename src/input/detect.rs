//! Input format names and detection: which [`Format`] a file is in, from
//! its name or its first bytes.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// An input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// One request body (or URL suffix) per line.
    Lines,
    /// One JSON request object per line.
    Jsonl,
    /// A HAR 1.2 file.
    Har,
    /// One curl command per line.
    Curl,
    /// vegeta targets, in its http or JSON format.
    Vegeta,
    /// A packet capture (pcap or pcapng).
    Pcap,
    /// A run saved with `--output`: its requests are replayed.
    Run,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 7] = [
        Format::Lines,
        Format::Jsonl,
        Format::Har,
        Format::Curl,
        Format::Vegeta,
        Format::Pcap,
        Format::Run,
    ];

    /// The format's name, as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Lines => "lines",
            Format::Jsonl => "jsonl",
            Format::Har => "har",
            Format::Curl => "curl",
            Format::Vegeta => "vegeta",
            Format::Pcap => "pcap",
            Format::Run => "run",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown input format {0:?} (expected lines, jsonl, har, curl, vegeta, pcap or run)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// Guesses the format of an input from its file name's extension, else
/// from `head`, its first bytes (a few KiB is plenty; a cut-off last line
/// is fine). `None` means plain lines.
///
/// By content: pcap and pcapng magic numbers; a JSON object whose first
/// key is `log`, holding an object (HAR); a first line starting `curl `; a `METHOD http://...`
/// line (vegeta); a JSON object with a `url` or `path` key (jsonl, or
/// vegeta's JSON format when it has a `header` key). Blank lines and `#`
/// comment lines before the first record are skipped. JSON objects without
/// those keys, such as JSON-RPC requests, are plain lines.
pub fn detect(head: &[u8], path: Option<&Path>) -> Option<Format> {
    // A saved run is JSON lines too: its header decides before the name.
    if head.starts_with(br#"{"format":"versus-run""#) {
        return Some(Format::Run);
    }
    let by_extension = path
        .and_then(Path::extension)
        .and_then(|e| e.to_str())
        .and_then(|e| match e.to_ascii_lowercase().as_str() {
            "har" => Some(Format::Har),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "pcap" | "pcapng" | "cap" => Some(Format::Pcap),
            "curl" | "sh" => Some(Format::Curl),
            _ => None,
        });
    by_extension.or_else(|| detect_content(head))
}

/// The format by content alone.
fn detect_content(head: &[u8]) -> Option<Format> {
    const PCAP_MAGICS: [[u8; 4]; 5] = [
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    if PCAP_MAGICS.iter().any(|m| head.starts_with(m)) {
        return Some(Format::Pcap);
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    // The first line that is not blank or a comment, and what follows.
    let mut rest = text;
    let first = loop {
        let (line, after) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        let line = line.trim_ascii();
        if !line.is_empty() && !line.starts_with(b"#") {
            break line;
        }
        if after.is_empty() {
            return None;
        }
        rest = after;
    };
    if first.starts_with(b"{") {
        // The object may span lines (HAR) or be cut off: read its keys up
        // to wherever it ends.
        let object = rest.trim_ascii_start();
        let keys = top_level_keys(object);
        let has = |k: &str| keys.iter().any(|key| key == k);
        return if keys.first().is_some_and(|k| k == "log") && log_is_an_object(object) {
            Some(Format::Har)
        } else if has("header") && has("url") {
            Some(Format::Vegeta)
        } else if has("url") || has("path") {
            Some(Format::Jsonl)
        } else {
            None
        };
    }
    let program_end = first
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(first.len());
    let (word, after) = first.split_at(program_end);
    let after = after.trim_ascii_start();
    if (word == b"curl" || word == b"curl.exe") && !after.is_empty() {
        return Some(Format::Curl);
    }
    let vegeta_method = !word.is_empty() && word.iter().all(u8::is_ascii_uppercase);
    if vegeta_method && (after.starts_with(b"http://") || after.starts_with(b"https://")) {
        return Some(Format::Vegeta);
    }
    None
}

/// Whether the first key's value in `object` (whose first key is `log`)
/// is itself an object, as HAR's is: a JSON line like `{"log":"x"}` is a
/// request body, not a HAR file.
fn log_is_an_object(object: &[u8]) -> bool {
    object
        .iter()
        .position(|&b| b == b':')
        .is_some_and(|colon| object[colon + 1..].trim_ascii_start().starts_with(b"{"))
}

/// The keys of the JSON object `text` starts with, as far as they can be
/// read (the text may be cut off or not JSON at all).
fn top_level_keys(text: &[u8]) -> Vec<String> {
    /// Collects keys into the vector it holds, skipping values.
    struct Keys<'a>(&'a mut Vec<String>);

    impl<'de> DeserializeSeed<'de> for Keys<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                self.0.push(key);
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    let mut keys = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(text);
    // An error only means the keys end here.
    let _ = Keys(&mut keys).deserialize(&mut de);
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(text: &[u8]) -> Option<Format> {
        detect(text, None)
    }

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("JSONL".parse::<Format>(), Ok(Format::Jsonl));
        let err = "xml".parse::<Format>().expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown input format \"xml\" (expected lines, jsonl, har, curl, vegeta, pcap or run)"
        );
    }

    #[test]
    fn by_extension() {
        let cases = [
            ("a.har", Some(Format::Har)),
            ("dir/A.HAR", Some(Format::Har)),
            ("a.jsonl", Some(Format::Jsonl)),
            ("a.ndjson", Some(Format::Jsonl)),
            ("a.pcap", Some(Format::Pcap)),
            ("a.pcapng", Some(Format::Pcap)),
            ("a.cap", Some(Format::Pcap)),
            ("a.curl", Some(Format::Curl)),
            ("a.sh", Some(Format::Curl)),
            ("a.txt", None),
            ("noext", None),
        ];
        for (name, expected) in cases {
            assert_eq!(detect(b"hello", Some(Path::new(name))), expected, "{name}");
        }
        // The extension wins over the content; unknown ones fall back to it.
        assert_eq!(
            detect(b"curl http://h/", Some(Path::new("x.har"))),
            Some(Format::Har)
        );
        assert_eq!(
            detect(b"curl http://h/", Some(Path::new("x.txt"))),
            Some(Format::Curl)
        );
    }

    #[test]
    fn pcap_magics() {
        for magic in [
            &[0xa1, 0xb2, 0xc3, 0xd4][..],
            &[0xd4, 0xc3, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0x3c, 0x4d],
            &[0x4d, 0x3c, 0xb2, 0xa1],
            &[0x0a, 0x0d, 0x0d, 0x0a],
        ] {
            let mut head = magic.to_vec();
            head.extend_from_slice(&[0, 2, 0, 4, 0xff, 0xfe]);
            assert_eq!(content(&head), Some(Format::Pcap));
        }
    }

    #[test]
    fn har_by_content() {
        assert_eq!(
            content(b"\xEF\xBB\xBF{\n  \"log\": {\n    \"version\": \"1.2\",\n    \"entries\": ["),
            Some(Format::Har)
        );
        assert_eq!(
            content(include_bytes!("../../tests/fixtures/chromium.har")),
            Some(Format::Har)
        );
        // `log` that is not the first key is not HAR, nor is a `log` that
        // is not an object (a JSON line sent as a body).
        assert_eq!(content(br#"{"path":"/","log":1}"#), Some(Format::Jsonl));
        assert_eq!(content(br#"{"log":"started"}"#), None);
        assert_eq!(content(b"{ \"log\" :\n {\"version\""), Some(Format::Har));
    }

    #[test]
    fn curl_by_content() {
        assert_eq!(
            content(b"# saved\n\ncurl 'http://h/' \\\n -H 'a: b'"),
            Some(Format::Curl)
        );
        assert_eq!(content(b"curl.exe ^\"http://h/^\""), Some(Format::Curl));
        assert_eq!(content(b"curl\n"), None);
        assert_eq!(content(b"curly fries\n"), None);
    }

    #[test]
    fn vegeta_by_content() {
        assert_eq!(content(b"GET http://h/a\nX: 1\n"), Some(Format::Vegeta));
        assert_eq!(content(b"POST https://h/a"), Some(Format::Vegeta));
        assert_eq!(
            content(br#"{"method":"GET","url":"http://h/","header":{"A":["1"]}}"#),
            Some(Format::Vegeta)
        );
        assert_eq!(content(b"GET /a\n"), None);
        assert_eq!(content(b"Get http://h/\n"), None);
    }

    #[test]
    fn jsonl_versus_plain_json_lines() {
        assert_eq!(
            content(b"{\"method\":\"POST\",\"url\":\"http://h/\",\"json\":{}}\n"),
            Some(Format::Jsonl)
        );
        assert_eq!(content(b"{\"path\":\"/a\"}"), Some(Format::Jsonl));
        // Cut off inside a value after the `path` key: still jsonl.
        assert_eq!(
            content(b"{\"path\":\"/a\",\"body\":\"aaaaaaaaaaaa"),
            Some(Format::Jsonl)
        );
        // JSON-RPC is the plain lines format, even with `url` in its params.
        assert_eq!(
            content(b"{\"jsonrpc\":\"2.0\",\"method\":\"eth_call\",\"params\":{\"url\":\"x\"},\"id\":1}\n"),
            None
        );
        assert_eq!(content(b"{\"method\":\"x\",\"id\":1}"), None);
        assert_eq!(content(b"{not json"), None);
    }

    #[test]
    fn plain_and_empty() {
        assert_eq!(content(b""), None);
        assert_eq!(content(b"\n\n# only comments\n"), None);
        assert_eq!(content(b"hello world\n"), None);
        assert_eq!(content(b"\xff\xfe\x00garbage"), None);
        assert_eq!(content(b"/api/users?id=1\n"), None);
    }
}
