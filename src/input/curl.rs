//! The `curl` input format: one curl command per line, as browsers' "Copy
//! as cURL" writes them (bash style with `\` continuations and `'...'`,
//! `"..."`, `$'...'` quoting, or Windows cmd style with `^` escapes and
//! continuations). The options that shape a request are understood; the
//! ones that only affect curl's own behaviour are ignored; any other option
//! makes the command malformed.

use std::io;

use base64::Engine as _;
use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Method};

use super::jsonl::{
    has_header, malformed_line, parse_method, parse_target, percent_encode, push_header, read_file,
    record, too_long, Line, LineReader,
};
use super::{Next, ReadAhead, Request, Source};

/// What curl sends for `--compressed`.
const COMPRESSED: &str = "deflate, gzip, br, zstd";

/// Reads curl commands, one per (possibly continued) line.
pub struct CurlSource {
    lines: LineReader,
    max_record: usize,
}

impl CurlSource {
    /// A source reading `reader` line by line; a command longer than
    /// `max_record` bytes (continuation lines included) is reported as
    /// malformed and skipped. `@file` arguments are read relative to the
    /// current directory.
    pub fn new(reader: Box<dyn ReadAhead>, max_record: usize) -> Self {
        CurlSource {
            lines: LineReader::new(reader),
            max_record,
        }
    }
}

impl Source for CurlSource {
    fn buffered(&self) -> bool {
        // A line that ends a command: not blank, not a comment, not
        // continued (`\`, or `^` in cmd style).
        self.lines.ahead().any(|line| {
            let t = line.trim_ascii();
            !t.is_empty() && !t.starts_with(b"#") && !t.ends_with(b"\\") && !t.ends_with(b"^")
        })
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            let Some(mut line) = self.lines.read(self.max_record)? else {
                return Ok(Next::End);
            };
            let start = line.number;
            if let Some(text) = &line.text {
                let text = text.trim_ascii_start();
                if text.is_empty() || text.starts_with(b"#") {
                    continue;
                }
            }
            let cmd = is_cmd_style(&line);
            // The command's text with its physical lines joined by `\n`, or
            // `None` once it is over the limit.
            let mut command = Some(Vec::new());
            let mut after_caret = false;
            loop {
                let continued = continues(&line, cmd, after_caret);
                command = match (command, line.text) {
                    (Some(mut joined), Some(text))
                        if joined.len() + usize::from(line.number != start) + text.len()
                            <= self.max_record =>
                    {
                        if line.number != start {
                            joined.push(b'\n');
                        }
                        joined.extend_from_slice(&text);
                        Some(joined)
                    }
                    _ => None,
                };
                after_caret = cmd && line.last == Some(b'^');
                if !continued {
                    break;
                }
                match self.lines.read(self.max_record)? {
                    Some(next) => line = next,
                    None => break,
                }
            }
            return Ok(match command {
                None => malformed_line(start, too_long(self.max_record)),
                Some(text) => {
                    let words = if cmd {
                        split_cmd(&text)
                    } else {
                        split_bash(&text)
                    };
                    record(
                        start,
                        words.and_then(|w| parse_command(&w, self.max_record)),
                    )
                }
            });
        }
    }
}

/// Whether a command is in Windows cmd style: `^`-continued, or its first
/// argument `^"`-quoted.
fn is_cmd_style(first: &Line) -> bool {
    let first_argument = |text: &Vec<u8>| {
        let text = text.trim_ascii_start();
        let program_end = text
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(text.len());
        text[program_end..].trim_ascii_start().starts_with(b"^\"")
    };
    first.last == Some(b'^') || first.text.as_ref().is_some_and(first_argument)
}

/// Whether the command goes on after `line`: it ends with an unescaped
/// continuation character, or (cmd style) it is the empty line that a `^`
/// escaped newline is made of.
fn continues(line: &Line, cmd: bool, after_caret: bool) -> bool {
    let mark = if cmd { b'^' } else { b'\\' };
    match &line.text {
        Some(text) if text.is_empty() => after_caret,
        Some(text) => text.iter().rev().take_while(|&&b| b == mark).count() % 2 == 1,
        None => line.last == Some(mark),
    }
}

/// Splits a bash command line into words, with bash's quoting rules. Shell
/// operators and `#` comments end or reject the command as bash would
/// parse them; variables are not expanded.
fn split_bash(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut words = Vec::new();
    let mut word: Option<Vec<u8>> = None;
    let mut bytes = text.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => words.extend(word.take()),
            b'#' if word.is_none() => {
                for b in bytes.by_ref() {
                    if b == b'\n' {
                        break;
                    }
                }
            }
            b'\\' => match bytes.next() {
                Some(b'\n') => {}
                Some(escaped) => word.get_or_insert_with(Vec::new).push(escaped),
                None => word.get_or_insert_with(Vec::new).push(b'\\'),
            },
            b'\'' => {
                let w = word.get_or_insert_with(Vec::new);
                loop {
                    match bytes.next() {
                        Some(b'\'') => break,
                        Some(b) => w.push(b),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            b'$' if bytes.peek() == Some(&b'\'') => {
                bytes.next();
                ansi_c_quoted(&mut bytes, word.get_or_insert_with(Vec::new))?;
            }
            // `$"..."` is a translatable string: a plain double-quoted one here.
            b'$' if bytes.peek() == Some(&b'"') => {}
            b'"' => {
                let w = word.get_or_insert_with(Vec::new);
                loop {
                    match bytes.next() {
                        Some(b'"') => break,
                        Some(b'\\') => match bytes.next() {
                            Some(b'\n') => {}
                            Some(e @ (b'$' | b'`' | b'"' | b'\\')) => w.push(e),
                            Some(other) => w.extend_from_slice(&[b'\\', other]),
                            None => return Err("unterminated \"".into()),
                        },
                        Some(b) => w.push(b),
                        None => return Err("unterminated \"".into()),
                    }
                }
            }
            b'|' | b';' | b'&' | b'<' | b'>' | b'(' | b')' | b'`' => {
                return Err(format!(
                    "unquoted `{}`: shell operators are not supported",
                    char::from(b)
                ))
            }
            other => word.get_or_insert_with(Vec::new).push(other),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Reads the rest of a `$'...'` string (after the opening quote) into `out`,
/// decoding bash's ANSI-C escapes.
fn ansi_c_quoted(
    bytes: &mut std::iter::Peekable<impl Iterator<Item = u8>>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    // Reads up to `max` more digits of `radix` onto `value`.
    fn digits(
        bytes: &mut std::iter::Peekable<impl Iterator<Item = u8>>,
        radix: u32,
        max: usize,
        mut value: Option<u32>,
    ) -> Option<u32> {
        for _ in 0..max {
            let Some(d) = bytes.peek().and_then(|&b| char::from(b).to_digit(radix)) else {
                break;
            };
            bytes.next();
            value = Some(value.unwrap_or(0) * radix + d);
        }
        value
    }
    let unterminated = || "unterminated $'".to_owned();
    loop {
        let b = bytes.next().ok_or_else(unterminated)?;
        if b == b'\'' {
            return Ok(());
        }
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let e = bytes.next().ok_or_else(unterminated)?;
        let simple = match e {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' | b'\'' | b'"' | b'?' => Some(e),
            b'c' => Some(bytes.next().ok_or_else(unterminated)? & 0x1f),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            continue;
        }
        let (radix, max, unicode) = match e {
            b'0'..=b'7' => (8, 3, false),
            b'x' => (16, 2, false),
            b'u' => (16, 4, true),
            b'U' => (16, 8, true),
            _ => {
                out.extend_from_slice(&[b'\\', e]);
                continue;
            }
        };
        // An octal escape's first digit is `e` itself.
        let first = (radix == 8).then(|| u32::from(e - b'0'));
        let Some(value) = digits(bytes, radix, max - usize::from(radix == 8), first) else {
            out.extend_from_slice(&[b'\\', e]);
            continue;
        };
        if unicode {
            let c = char::from_u32(value).ok_or_else(|| format!("invalid \\u escape {value:X}"))?;
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        } else {
            // Octal escapes above \377 wrap to a byte, as in bash.
            out.push((value & 0xff) as u8);
        }
    }
}

/// Splits a Windows cmd command line into words: first cmd.exe's `^`
/// escapes (a `^` before a line break continues the line, and a blank line
/// after it is a literal line break), then the C runtime's quoting rules
/// (`"..."`, `\"`, backslashes before quotes).
fn split_cmd(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut unescaped = Vec::with_capacity(text.len());
    let mut quoted = false;
    let mut bytes = text.iter().copied();
    while let Some(b) = bytes.next() {
        match b {
            b'"' => {
                quoted = !quoted;
                unescaped.push(b);
            }
            b'^' if !quoted => match bytes.next() {
                Some(b'\n') => unescaped.extend(bytes.next()),
                Some(escaped) => unescaped.push(escaped),
                None => {}
            },
            b'&' | b'|' | b'<' | b'>' if !quoted => {
                return Err(format!(
                    "unescaped `{}`: shell operators are not supported",
                    char::from(b)
                ))
            }
            _ => unescaped.push(b),
        }
    }

    let mut words = Vec::new();
    let mut word: Option<Vec<u8>> = None;
    let mut quoted = false;
    let mut bytes = unescaped.into_iter().peekable();
    while let Some(b) = bytes.next() {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' if !quoted => words.extend(word.take()),
            b'\\' => {
                let mut count = 1;
                while bytes.next_if_eq(&b'\\').is_some() {
                    count += 1;
                }
                let w = word.get_or_insert_with(Vec::new);
                if bytes.peek() == Some(&b'"') {
                    w.extend(std::iter::repeat_n(b'\\', count / 2));
                    if count % 2 == 1 {
                        bytes.next();
                        w.push(b'"');
                    }
                } else {
                    w.extend(std::iter::repeat_n(b'\\', count));
                }
            }
            b'"' => {
                let w = word.get_or_insert_with(Vec::new);
                if quoted && bytes.next_if_eq(&b'"').is_some() {
                    w.push(b'"');
                } else {
                    quoted = !quoted;
                }
            }
            other => word.get_or_insert_with(Vec::new).push(other),
        }
    }
    words.extend(word);
    Ok(words)
}

/// What an option does to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opt {
    Request,
    Header,
    Data(Data),
    User,
    Cookie,
    UserAgent,
    Referer,
    Compressed,
    Get,
    Head,
    Url,
    Bearer,
    Range,
    /// Changes only curl's behaviour, not the request.
    Ignored,
    /// Like `Ignored`, with a value.
    IgnoredWithValue,
}

/// The kinds of request body options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Data {
    /// `-d`, `--data`, `--data-ascii`: `@file` is read without line breaks.
    Ascii,
    /// `--data-raw`: no `@file`.
    Raw,
    /// `--data-binary`: `@file` is read as is.
    Binary,
    /// `--data-urlencode`: `[name]=content` or `[name]@file`, encoded.
    UrlEncode,
    /// `--json`: like `--data-binary`, and JSON content type and accept.
    Json,
}

impl Opt {
    fn takes_value(self) -> bool {
        !matches!(self, Opt::Compressed | Opt::Get | Opt::Head | Opt::Ignored)
    }
}

/// The options understood: short name, long name, meaning.
const OPTIONS: &[(Option<u8>, &str, Opt)] = &[
    (Some(b'X'), "request", Opt::Request),
    (Some(b'H'), "header", Opt::Header),
    (Some(b'd'), "data", Opt::Data(Data::Ascii)),
    (None, "data-ascii", Opt::Data(Data::Ascii)),
    (None, "data-raw", Opt::Data(Data::Raw)),
    (None, "data-binary", Opt::Data(Data::Binary)),
    (None, "data-urlencode", Opt::Data(Data::UrlEncode)),
    (None, "json", Opt::Data(Data::Json)),
    (Some(b'u'), "user", Opt::User),
    (Some(b'b'), "cookie", Opt::Cookie),
    (Some(b'A'), "user-agent", Opt::UserAgent),
    (Some(b'e'), "referer", Opt::Referer),
    (None, "compressed", Opt::Compressed),
    (Some(b'G'), "get", Opt::Get),
    (Some(b'I'), "head", Opt::Head),
    (None, "url", Opt::Url),
    (None, "oauth2-bearer", Opt::Bearer),
    (Some(b'r'), "range", Opt::Range),
    (Some(b's'), "silent", Opt::Ignored),
    (Some(b'S'), "show-error", Opt::Ignored),
    (Some(b'k'), "insecure", Opt::Ignored),
    (Some(b'L'), "location", Opt::Ignored),
    (Some(b'v'), "verbose", Opt::Ignored),
    (Some(b'i'), "include", Opt::Ignored),
    (Some(b'f'), "fail", Opt::Ignored),
    (Some(b'g'), "globoff", Opt::Ignored),
    (Some(b'N'), "no-buffer", Opt::Ignored),
    (Some(b'#'), "progress-bar", Opt::Ignored),
    (Some(b'4'), "ipv4", Opt::Ignored),
    (Some(b'6'), "ipv6", Opt::Ignored),
    (Some(b'O'), "remote-name", Opt::Ignored),
    (Some(b'J'), "remote-header-name", Opt::Ignored),
    (Some(b'R'), "remote-time", Opt::Ignored),
    (None, "fail-with-body", Opt::Ignored),
    (None, "no-progress-meter", Opt::Ignored),
    (None, "location-trusted", Opt::Ignored),
    (None, "http1.0", Opt::Ignored),
    (None, "http1.1", Opt::Ignored),
    (None, "http2", Opt::Ignored),
    (None, "http2-prior-knowledge", Opt::Ignored),
    (None, "http3", Opt::Ignored),
    (None, "tcp-nodelay", Opt::Ignored),
    (None, "path-as-is", Opt::Ignored),
    (None, "raw", Opt::Ignored),
    (None, "no-keepalive", Opt::Ignored),
    (None, "no-sessionid", Opt::Ignored),
    (None, "ssl", Opt::Ignored),
    (None, "ssl-reqd", Opt::Ignored),
    (None, "ssl-no-revoke", Opt::Ignored),
    (None, "tlsv1", Opt::Ignored),
    (None, "tlsv1.0", Opt::Ignored),
    (None, "tlsv1.1", Opt::Ignored),
    (None, "tlsv1.2", Opt::Ignored),
    (None, "tlsv1.3", Opt::Ignored),
    (None, "no-alpn", Opt::Ignored),
    (None, "create-dirs", Opt::Ignored),
    (None, "styled-output", Opt::Ignored),
    (Some(b'o'), "output", Opt::IgnoredWithValue),
    (Some(b'm'), "max-time", Opt::IgnoredWithValue),
    (Some(b'w'), "write-out", Opt::IgnoredWithValue),
    (Some(b'x'), "proxy", Opt::IgnoredWithValue),
    (Some(b'U'), "proxy-user", Opt::IgnoredWithValue),
    (Some(b'E'), "cert", Opt::IgnoredWithValue),
    (Some(b'c'), "cookie-jar", Opt::IgnoredWithValue),
    (Some(b'D'), "dump-header", Opt::IgnoredWithValue),
    (Some(b'y'), "speed-time", Opt::IgnoredWithValue),
    (Some(b'Y'), "speed-limit", Opt::IgnoredWithValue),
    (None, "connect-timeout", Opt::IgnoredWithValue),
    (None, "retry", Opt::IgnoredWithValue),
    (None, "retry-delay", Opt::IgnoredWithValue),
    (None, "retry-max-time", Opt::IgnoredWithValue),
    (None, "resolve", Opt::IgnoredWithValue),
    (None, "connect-to", Opt::IgnoredWithValue),
    (None, "cacert", Opt::IgnoredWithValue),
    (None, "capath", Opt::IgnoredWithValue),
    (None, "cert-type", Opt::IgnoredWithValue),
    (None, "key", Opt::IgnoredWithValue),
    (None, "key-type", Opt::IgnoredWithValue),
    (None, "pass", Opt::IgnoredWithValue),
    (None, "limit-rate", Opt::IgnoredWithValue),
    (None, "max-redirs", Opt::IgnoredWithValue),
    (None, "max-filesize", Opt::IgnoredWithValue),
    (None, "interface", Opt::IgnoredWithValue),
    (None, "trace", Opt::IgnoredWithValue),
    (None, "trace-ascii", Opt::IgnoredWithValue),
    (None, "stderr", Opt::IgnoredWithValue),
    (None, "keepalive-time", Opt::IgnoredWithValue),
    (None, "expect100-timeout", Opt::IgnoredWithValue),
    (None, "ciphers", Opt::IgnoredWithValue),
    (None, "tls-max", Opt::IgnoredWithValue),
];

/// A curl command's request-shaping options, as given.
#[derive(Default)]
struct Command {
    method: Option<Vec<u8>>,
    urls: Vec<Vec<u8>>,
    /// `-H` headers: name and value (`None` for `Name:`, which removes it).
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Data pieces, and whether each is `--json`.
    data: Vec<(Vec<u8>, bool)>,
    user: Option<Vec<u8>>,
    bearer: Option<Vec<u8>>,
    cookies: Vec<Vec<u8>>,
    user_agent: Option<Vec<u8>>,
    referer: Option<Vec<u8>>,
    range: Option<Vec<u8>>,
    compressed: bool,
    get: bool,
    head: bool,
}

/// Turns a curl command's words into a request.
fn parse_command(words: &[Vec<u8>], limit: usize) -> Result<Request, String> {
    let (program, args) = words.split_first().ok_or("empty command")?;
    let name = program
        .rsplit(|&b| b == b'/' || b == b'\\')
        .next()
        .unwrap_or_default();
    if !name.eq_ignore_ascii_case(b"curl") && !name.eq_ignore_ascii_case(b"curl.exe") {
        return Err(format!(
            "not a curl command: {:?}",
            String::from_utf8_lossy(program)
        ));
    }
    let mut cmd = Command::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (opts, attached): Options<'_> = if let Some(long) = arg.strip_prefix(b"--") {
            let opt = OPTIONS
                .iter()
                .find(|(_, l, _)| l.as_bytes() == long)
                .ok_or_else(|| unknown(arg))?;
            (vec![(opt.2, format!("--{}", opt.1))], None)
        } else if let Some(shorts) = arg.strip_prefix(b"-").filter(|s| !s.is_empty()) {
            short_options(shorts)?
        } else {
            cmd.urls.push(arg.clone());
            continue;
        };
        for (opt, name) in opts {
            let value = if opt.takes_value() {
                match attached {
                    Some(v) if !v.is_empty() => v,
                    _ => args
                        .next()
                        .ok_or_else(|| format!("option {name} needs a value"))?,
                }
            } else {
                &[]
            };
            cmd.apply(opt, value, limit)?;
        }
    }
    cmd.into_request()
}

/// Options with the names they were given as, and a value attached to the
/// last one.
type Options<'a> = (Vec<(Opt, String)>, Option<&'a [u8]>);

/// The options of a short-option cluster (`-sSL`, `-XPOST`) and the value
/// attached to its last one, if it takes one.
fn short_options(shorts: &[u8]) -> Result<Options<'_>, String> {
    let mut opts = Vec::new();
    for (i, &c) in shorts.iter().enumerate() {
        let opt = OPTIONS
            .iter()
            .find(|(s, _, _)| *s == Some(c))
            .ok_or_else(|| unknown(&[b'-', c]))?;
        opts.push((opt.2, format!("-{}", char::from(c))));
        if opt.2.takes_value() {
            return Ok((opts, Some(&shorts[i + 1..])));
        }
    }
    Ok((opts, None))
}

/// The reason for an option this format does not support.
fn unknown(option: &[u8]) -> String {
    format!("unsupported option {}", String::from_utf8_lossy(option))
}

impl Command {
    /// Records one option and its value (`@file` data of at most `limit`
    /// bytes).
    fn apply(&mut self, opt: Opt, value: &[u8], limit: usize) -> Result<(), String> {
        let value = value.to_vec();
        match opt {
            Opt::Request => self.method = Some(value),
            Opt::Header => self.headers.push(parse_header(&value)?),
            Opt::Data(kind) => self
                .data
                .push((data_piece(kind, &value, limit)?, kind == Data::Json)),
            Opt::User => self.user = Some(value),
            Opt::Bearer => self.bearer = Some(value),
            Opt::Cookie if value.contains(&b'=') => self.cookies.push(value),
            Opt::Cookie => return Err("cookie files (-b FILE) are not supported".into()),
            Opt::UserAgent => self.user_agent = Some(value),
            Opt::Referer => {
                let value = value.strip_suffix(b";auto").unwrap_or(&value);
                self.referer = Some(value.to_vec());
            }
            Opt::Range => self.range = Some(value),
            Opt::Url => self.urls.push(value),
            Opt::Compressed => self.compressed = true,
            Opt::Get => self.get = true,
            Opt::Head => self.head = true,
            Opt::Ignored | Opt::IgnoredWithValue => {}
        }
        Ok(())
    }

    /// Builds the request curl would send.
    fn into_request(self) -> Result<Request, String> {
        let url = match self.urls.as_slice() {
            [url] => std::str::from_utf8(url).map_err(|_| "URL is not valid UTF-8".to_owned())?,
            [] => return Err("no URL".into()),
            _ => return Err("more than one URL".into()),
        };
        let mut url = url.split('#').next().unwrap_or_default().to_owned();
        if !url.contains("://") {
            url.insert_str(0, "http://");
        }
        let json = self.data.iter().any(|(_, json)| *json);
        let mut body = Vec::new();
        for (i, (piece, json)) in self.data.iter().enumerate() {
            if i > 0 && !json {
                body.push(b'&');
            }
            body.extend_from_slice(piece);
        }
        let has_data = !self.data.is_empty();
        if self.get && has_data {
            let query =
                std::str::from_utf8(&body).map_err(|_| "-G data is not valid UTF-8".to_owned())?;
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(query);
            body.clear();
        }
        let target = parse_target(&url)?;
        let method = match &self.method {
            Some(m) => parse_method(
                std::str::from_utf8(m).map_err(|_| "method is not valid UTF-8".to_owned())?,
            )?,
            None if self.head => Method::HEAD,
            None if has_data && !self.get => Method::POST,
            None => Method::GET,
        };

        let mut headers = Vec::new();
        let mut removed = Vec::new();
        for (name, value) in &self.headers {
            match value {
                Some(value) => push_header(&mut headers, name, value)?,
                None => removed.push(name.to_ascii_lowercase()),
            }
        }
        let mut derived: Vec<(HeaderName, Vec<u8>)> = Vec::new();
        if let Some(user) = &self.user {
            if !user.contains(&b':') {
                return Err("-u without a password (curl would prompt for it)".into());
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(user);
            derived.push((
                header::AUTHORIZATION,
                format!("Basic {encoded}").into_bytes(),
            ));
        }
        if let Some(token) = &self.bearer {
            derived.push((header::AUTHORIZATION, [b"Bearer ", &token[..]].concat()));
        }
        derived.extend(self.user_agent.map(|v| (header::USER_AGENT, v)));
        derived.extend(self.referer.map(|v| (header::REFERER, v)));
        if !self.cookies.is_empty() {
            derived.push((header::COOKIE, self.cookies.join(&b"; "[..])));
        }
        derived.extend(
            self.range
                .map(|r| (header::RANGE, [b"bytes=", &r[..]].concat())),
        );
        if self.compressed {
            derived.push((header::ACCEPT_ENCODING, COMPRESSED.into()));
        }
        if json {
            derived.push((header::CONTENT_TYPE, b"application/json".to_vec()));
            derived.push((header::ACCEPT, b"application/json".to_vec()));
        } else if has_data && !self.get {
            derived.push((
                header::CONTENT_TYPE,
                b"application/x-www-form-urlencoded".to_vec(),
            ));
        }
        for (name, value) in derived {
            if !has_header(&headers, &name)
                && !removed.iter().any(|r| r == name.as_str().as_bytes())
            {
                let value = HeaderValue::from_bytes(&value)
                    .map_err(|_| format!("invalid value for header {name}"))?;
                headers.push((name, value));
            }
        }
        Ok(Request {
            seq: 0,
            method: Some(method),
            target: Some(target),
            headers,
            body: Bytes::from(body),
        })
    }
}

/// Parses a `-H` value: `Name: value`, `Name;` (empty value) or `Name:`
/// (removes the header).
fn parse_header(text: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), String> {
    if text.starts_with(b"@") {
        return Err("header files (-H @file) are not supported".into());
    }
    if let Some(i) = text.iter().position(|&b| b == b':') {
        let (name, value) = (&text[..i], text[i + 1..].trim_ascii());
        return Ok((name.to_vec(), (!value.is_empty()).then(|| value.to_vec())));
    }
    match text.trim_ascii_end().strip_suffix(b";") {
        Some(name) => Ok((name.to_vec(), Some(Vec::new()))),
        None => Err(format!(
            "invalid header {:?}",
            String::from_utf8_lossy(text)
        )),
    }
}

/// The bytes one data option adds to the body.
fn data_piece(kind: Data, value: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    match kind {
        Data::Raw => Ok(value.to_vec()),
        Data::Ascii | Data::Binary | Data::Json => match value.strip_prefix(b"@") {
            None => Ok(value.to_vec()),
            Some(path) => {
                let mut content = read_data_file(path, limit)?;
                if kind == Data::Ascii {
                    content.retain(|&b| b != b'\r' && b != b'\n');
                }
                Ok(content)
            }
        },
        Data::UrlEncode => {
            let split = value.iter().position(|&b| b == b'=' || b == b'@');
            Ok(match split {
                None => percent_encode(value).into_bytes(),
                Some(i) => {
                    let (name, rest) = (&value[..i], &value[i + 1..]);
                    let content = if value[i] == b'@' {
                        read_data_file(rest, limit)?
                    } else {
                        rest.to_vec()
                    };
                    let mut piece = name.to_vec();
                    if !name.is_empty() {
                        piece.push(b'=');
                    }
                    piece.extend_from_slice(percent_encode(&content).as_bytes());
                    piece
                }
            })
        }
    }
}

/// Reads an `@file` argument, relative to the current directory, of at
/// most `limit` bytes.
fn read_data_file(path: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    if path == b"-" {
        return Err("reading data from standard input (@-) is not supported".into());
    }
    let path = std::str::from_utf8(path).map_err(|_| "file name is not valid UTF-8".to_owned())?;
    read_file(path, limit)
}

#[cfg(test)]
mod tests {
    use super::super::jsonl::tests::{drain, header_strs, reader};
    use super::super::Malformed;
    use super::*;

    fn curl(text: &str) -> Vec<Result<Request, Malformed>> {
        drain(CurlSource::new(reader(text.as_bytes()), 4096))
    }

    fn one(text: &str) -> Request {
        match curl(text).as_slice() {
            [Ok(r)] => r.clone(),
            other => panic!("expected one request, got {other:?}"),
        }
    }

    fn reason(text: &str) -> String {
        match curl(text).as_slice() {
            [Err(m)] => m.reason.clone(),
            other => panic!("expected one malformed, got {other:?}"),
        }
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn simple_get() {
        let r = one("curl http://h/a?b=1");
        assert_eq!(r.method, Some(Method::GET));
        assert_eq!(r.target.as_deref(), Some("http://h/a?b=1"));
        assert!(r.headers.is_empty() && r.body.is_empty());
        let r = one("curl -s -S -k -L -v -i --insecure --location -o /dev/null localhost:8080/x");
        assert_eq!(r.target.as_deref(), Some("http://localhost:8080/x"));
    }

    #[test]
    fn chrome_bash_copy() {
        let text = "curl 'https://h/api?x=1&y=2' \\\n  -H 'accept: */*' \\\n  -H 'content-type: application/json' \\\n  -b 'a=1; b=2' \\\n  -H $'x-note: it\\'s \\u00e9' \\\n  --data-raw $'{\"a\":\"x\\ny\"}'\n";
        let r = one(text);
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(r.target.as_deref(), Some("https://h/api?x=1&y=2"));
        assert_eq!(&r.body[..], b"{\"a\":\"x\ny\"}");
        assert_eq!(
            header_strs(&r),
            h(&[
                ("accept", "*/*"),
                ("content-type", "application/json"),
                ("x-note", "it's \u{e9}"),
                ("cookie", "a=1; b=2"),
            ])
        );
    }

    #[test]
    fn chrome_cmd_copy() {
        let text = "curl ^\"https://h/api?x=1^&y=2^\" ^\r\n  -H ^\"content-type: application/json^\" ^\r\n  --data-raw ^\"^{^\\^\"a^\\^\":^\\^\"x^\r\n\r\ny^\\^\"^}^\"\r\ncurl ^\"http://h/next^\"\r\n";
        let out = curl(text);
        assert_eq!(out.len(), 2, "{out:?}");
        let r = out[0].as_ref().expect("request");
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(r.target.as_deref(), Some("https://h/api?x=1&y=2"));
        assert_eq!(&r.body[..], b"{\"a\":\"x\ny\"}");
        assert_eq!(header_strs(r), h(&[("content-type", "application/json")]));
        let r = out[1].as_ref().expect("request");
        assert_eq!(r.target.as_deref(), Some("http://h/next"));
    }

    #[test]
    fn caret_quote_inside_bash_quotes_is_bash() {
        let r = one(r#"curl http://h/ -d '^"a'"#);
        assert_eq!(&r.body[..], br#"^"a"#);
    }

    #[test]
    fn cmd_backslashes_before_quotes() {
        let words = split_cmd(br#"curl "a\\\"b" c\\d "x""y" """#).expect("split");
        let words: Vec<String> = words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        assert_eq!(words, ["curl", r#"a\"b"#, r"c\\d", "x\"y", ""]);
        assert!(split_cmd(b"curl http://h/?a=1&b=2")
            .expect_err("operator")
            .starts_with("unescaped `&`"));
    }

    #[test]
    fn bash_quoting() {
        let words = split_bash(
            br#"curl a\ b "x \"y\" \$z \q" 'p\q' $'\x41\101\t\cA\e\?' $"t" 'multi
line' # comment"#,
        )
        .expect("split");
        let expected: Vec<&[u8]> = vec![
            b"curl",
            b"a b",
            br#"x "y" $z \q"#,
            br"p\q",
            b"AA\t\x01\x1b?",
            b"t",
            b"multi\nline",
        ];
        assert_eq!(words, expected);
        assert_eq!(split_bash(b"curl 'a").expect_err("open"), "unterminated '");
        assert_eq!(
            split_bash(b"curl \"a").expect_err("open"),
            "unterminated \""
        );
        assert_eq!(
            split_bash(b"curl $'a").expect_err("open"),
            "unterminated $'"
        );
        assert_eq!(
            split_bash(b"curl $'\\u{d800}'").expect("not a \\u escape: kept"),
            [&b"curl"[..], b"\\u{d800}"]
        );
        assert!(split_bash(b"curl $'\\ud800'").is_err());
    }

    #[test]
    fn data_options() {
        let r = one("curl -d a=1 -d 'b=2' --data-ascii c=3 http://h/");
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(&r.body[..], b"a=1&b=2&c=3");
        assert_eq!(
            header_strs(&r),
            h(&[("content-type", "application/x-www-form-urlencoded")])
        );
        let r = one(
            "curl --data-urlencode 'q=a b&c' --data-urlencode =x/y --data-urlencode 'é' http://h/",
        );
        assert_eq!(&r.body[..], b"q=a%20b%26c&x%2Fy&%C3%A9");
        let r = one("curl --data-raw @not-a-file http://h/");
        assert_eq!(&r.body[..], b"@not-a-file");
        let r = one(r#"curl --json '{"a":1}' http://h/"#);
        assert_eq!(&r.body[..], br#"{"a":1}"#);
        assert_eq!(
            header_strs(&r),
            h(&[
                ("content-type", "application/json"),
                ("accept", "application/json")
            ])
        );
        let r = one("curl -H 'Content-Type: text/plain' -XPUT -d x http://h/");
        assert_eq!(r.method, Some(Method::PUT));
        assert_eq!(header_strs(&r), h(&[("content-type", "text/plain")]));
    }

    #[test]
    fn data_from_files() {
        let dir = std::env::temp_dir().join(format!("versus-curl-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("body.txt");
        std::fs::write(&file, b"a=1\r\nb=2\n").expect("write");
        let path = file.display();
        let r = one(&format!("curl -d @{path} http://h/"));
        assert_eq!(&r.body[..], b"a=1b=2");
        let r = one(&format!("curl --data-binary @{path} http://h/"));
        assert_eq!(&r.body[..], b"a=1\r\nb=2\n");
        let r = one(&format!("curl --data-urlencode f@{path} http://h/"));
        assert_eq!(&r.body[..], b"f=a%3D1%0D%0Ab%3D2%0A");
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert!(reason(&format!("curl -d @{path} http://h/")).starts_with("cannot read"));
        assert!(reason("curl -d @- http://h/").contains("(@-) is not supported"));
        // An endless file is cut at the record limit, not read to the end.
        assert!(reason("curl -d @/dev/zero http://h/").contains("longer than 4096 bytes"));
    }

    #[test]
    fn get_and_head() {
        let r = one("curl -G -d a=1 --data-urlencode 'b=x y' 'http://h/p?z=0#top'");
        assert_eq!(r.method, Some(Method::GET));
        assert_eq!(r.target.as_deref(), Some("http://h/p?z=0&a=1&b=x%20y"));
        assert!(r.body.is_empty() && r.headers.is_empty());
        let r = one("curl --get -d a=1 http://h/p");
        assert_eq!(r.target.as_deref(), Some("http://h/p?a=1"));
        assert_eq!(one("curl -I http://h/").method, Some(Method::HEAD));
        assert_eq!(one("curl --head http://h/").method, Some(Method::HEAD));
        assert_eq!(one("curl -X DELETE http://h/").method, Some(Method::DELETE));
        assert_eq!(
            one("curl --request patch http://h/").method,
            Some(Method::PATCH)
        );
    }

    #[test]
    fn derived_headers() {
        let r = one("curl -u user:pa:ss -A 'agent/1' -e 'http://r/;auto' -b a=1 -b b=2 --compressed -r 0-99 http://h/");
        assert_eq!(
            header_strs(&r),
            h(&[
                ("authorization", "Basic dXNlcjpwYTpzcw=="),
                ("user-agent", "agent/1"),
                ("referer", "http://r/"),
                ("cookie", "a=1; b=2"),
                ("range", "bytes=0-99"),
                ("accept-encoding", COMPRESSED),
            ])
        );
        let r = one("curl --oauth2-bearer tok -H 'User-Agent: mine' -A other http://h/");
        assert_eq!(
            header_strs(&r),
            h(&[("user-agent", "mine"), ("authorization", "Bearer tok")])
        );
        let r = one("curl -H 'Content-Type:' -H 'X-Empty;' -H 'Host: x' -d a http://h/");
        assert_eq!(header_strs(&r), h(&[("x-empty", "")]));
    }

    #[test]
    fn url_anywhere_and_options_clustered() {
        let r = one("curl -sSLXPOST -HX-A:1 --url http://h/u -dq");
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(r.target.as_deref(), Some("http://h/u"));
        assert_eq!(&r.body[..], b"q");
        assert_eq!(
            header_strs(&r),
            h(&[
                ("x-a", "1"),
                ("content-type", "application/x-www-form-urlencoded")
            ])
        );
        let r = one("/usr/bin/curl -H 'a: b' https://h/ -k");
        assert_eq!(r.target.as_deref(), Some("https://h/"));
    }

    #[test]
    fn comments_blanks_and_line_numbers() {
        let text = "# a comment\n\n  curl http://h/1 # trailing\ncurl \\\n  -F a=b \\\n  http://h/2\n   \ncurl http://h/3\n";
        let out = curl(text);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(
            out[0].as_ref().map(|r| r.target.clone()),
            Ok(Some("http://h/1".into()))
        );
        assert_eq!(
            out[1],
            Err(Malformed {
                location: "line 4".into(),
                reason: "unsupported option -F".into()
            })
        );
        assert_eq!(
            out[2].as_ref().map(|r| r.target.clone()),
            Ok(Some("http://h/3".into()))
        );
    }

    #[test]
    fn bad_commands() {
        assert_eq!(reason("wget http://h/"), "not a curl command: \"wget\"");
        assert_eq!(
            reason("curl --form a=b http://h/"),
            "unsupported option --form"
        );
        assert_eq!(
            reason("curl --request=POST http://h/"),
            "unsupported option --request=POST"
        );
        assert_eq!(reason("curl -H"), "option -H needs a value");
        assert_eq!(reason("curl -s"), "no URL");
        assert_eq!(reason("curl http://a/ http://b/"), "more than one URL");
        assert_eq!(reason("curl -H 'bad' http://h/"), "invalid header \"bad\"");
        assert_eq!(
            reason("curl -H 'a b: c' http://h/"),
            "invalid header name \"a b\""
        );
        assert_eq!(
            reason("curl -b cookies.txt http://h/"),
            "cookie files (-b FILE) are not supported"
        );
        assert_eq!(
            reason("curl -u user http://h/"),
            "-u without a password (curl would prompt for it)"
        );
        assert!(reason("curl http://h/a?x=1&y=2").starts_with("unquoted `&`"));
        assert!(reason("curl http://h/ | jq").starts_with("unquoted `|`"));
        assert!(reason("curl 'http://h/a b'").starts_with("invalid URL"));
        assert!(reason("curl ftp://h/").starts_with("invalid URL"));
        assert_eq!(reason("curl 'http://h/"), "unterminated '");
    }

    #[test]
    fn invalid_utf8_and_oversized() {
        let out = drain(CurlSource::new(
            reader(b"curl 'http://h/\xff'\ncurl -d '\xff' http://h/\n"),
            4096,
        ));
        assert_eq!(
            out[0].as_ref().expect_err("bad url").reason,
            "URL is not valid UTF-8"
        );
        assert_eq!(&out[1].as_ref().expect("binary body ok").body[..], b"\xff");

        let long = "x".repeat(100);
        let text = format!("curl http://h/1\ncurl \\\n -d {long} \\\n http://h/2\ncurl http://h/{long}\\\n -s\ncurl http://h/3\n");
        let out = drain(CurlSource::new(reader(text.as_bytes()), 60));
        let summary: Vec<String> = out
            .iter()
            .map(|r| match r {
                Ok(r) => r.target.clone().unwrap_or_default(),
                Err(m) => format!("{}: {}", m.location, m.reason),
            })
            .collect();
        assert_eq!(
            summary,
            [
                "http://h/1",
                "line 2: record longer than 60 bytes",
                "line 5: record longer than 60 bytes",
                "http://h/3"
            ]
        );
    }
}
