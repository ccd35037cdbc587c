//! gRPC without generated code: the schema (a `.proto` compiled in pure
//! Rust by `protox`, or the descriptors a server's reflection service
//! gives), the methods an endpoint calls, requests turned from the proto3
//! JSON mapping into length-prefixed protobuf messages, answers turned
//! back into JSON for comparison (with the options that line them up with
//! a REST API), and the names of the status codes.
//!
//! This module knows nothing about connections: the calls go over
//! versus's own HTTP/2 codec (`endpoint::grpc`), and the reflection
//! client is there too. What a gRPC call is for a flow step (request JSON
//! in, answer JSON and status out) is [`crate::flow::Call::grpc`] and
//! [`crate::flow::Reply::grpc`].

pub mod reflection;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{BufMut, Bytes};
use prost_reflect::{
    DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions,
};

pub use crate::model::GrpcStatus;

/// The names of the status codes, by code (gRPC's `statuscodes.md`).
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The name of a status code as reports show it (`NOT_FOUND`); a code
/// outside the 17 defined ones is `UNKNOWN`, as gRPC clients treat it.
pub fn code_name(code: u32) -> &'static str {
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// The code named `name` (`NOT_FOUND`, `not_found`), or a number.
pub fn code_by_name(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse::<u32>() {
        return Some(n);
    }
    NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u32)
}

/// How an error answer of a gRPC endpoint is named in the reports'
/// error lists (`gRPC NOT_FOUND`).
pub fn error_name(code: u32) -> String {
    format!("gRPC {}", code_name(code))
}

/// The code a gRPC client gives an answer without `grpc-status`, from its
/// HTTP status (gRPC's `http-grpc-status-mapping.md`).
pub fn code_of_http(status: u16) -> u32 {
    match status {
        400 => 13,             // INTERNAL
        401 => 16,             // UNAUTHENTICATED
        403 => 7,              // PERMISSION_DENIED
        404 => 12,             // UNIMPLEMENTED
        429 | 502..=504 => 14, // UNAVAILABLE
        _ => 2,                // UNKNOWN
    }
}

/// The HTTP status a REST API answers for gRPC status `code`, as gRPC's
/// HTTP mapping has it (`google/rpc/code.proto`; grpc-gateway's
/// `HTTPStatusFromCode`): `NOT_FOUND` is 404, `INVALID_ARGUMENT`,
/// `FAILED_PRECONDITION` and `OUT_OF_RANGE` are 400, and so on; `OK` is
/// 200 (any 2xx answer means it, see [`same_meaning`]).
pub fn http_status_of(code: u32) -> u16 {
    match code {
        0 => 200,          // OK
        1 => 499,          // CANCELLED
        3 | 9 | 11 => 400, // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
        4 => 504,          // DEADLINE_EXCEEDED
        5 => 404,          // NOT_FOUND
        6 | 10 => 409,     // ALREADY_EXISTS, ABORTED
        7 => 403,          // PERMISSION_DENIED
        8 => 429,          // RESOURCE_EXHAUSTED
        12 => 501,         // UNIMPLEMENTED
        14 => 503,         // UNAVAILABLE
        16 => 401,         // UNAUTHENTICATED
        _ => 500,          // UNKNOWN, INTERNAL, DATA_LOSS and any other
    }
}

/// Whether a REST answer's HTTP `status` means what gRPC status `code`
/// means: the status [`http_status_of`] gives, or any 2xx for `OK`.
pub fn same_meaning(status: u16, code: u32) -> bool {
    match code {
        0 => (200..300).contains(&status),
        _ => status == http_status_of(code),
    }
}

/// `grpc-message` percent-decoded (gRPC's PROTOCOL-HTTP2: "%" followed by
/// two hex digits; anything else is kept as it came).
pub fn decode_message(raw: &[u8]) -> Box<str> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match raw[i] {
            b'%' if i + 2 < raw.len() => match (hex(raw[i + 1]), hex(raw[i + 2])) {
                (Some(a), Some(b)) => {
                    out.push((a * 16 + b) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into()
}

/// How answers are written as JSON, to line them up with a REST API's
/// (`--grpc-json`). The defaults are the proto3 JSON mapping's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// Field names as the `.proto` writes them (`page_token`), not the
    /// JSON names (`pageToken`).
    pub proto_names: bool,
    /// 64-bit integers as JSON numbers, not strings.
    pub int64_numbers: bool,
    /// Fields at their default value (0, "", false, empty lists) written
    /// out, not left away.
    pub defaults: bool,
    /// Enum values as numbers, not names.
    pub enum_numbers: bool,
}

impl std::str::FromStr for JsonOptions {
    type Err = String;

    /// A comma-separated list of `proto-names`, `int64-numbers`,
    /// `defaults`, `enum-numbers` (or `rest`: the first three).
    fn from_str(s: &str) -> Result<JsonOptions, String> {
        let mut o = JsonOptions::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "proto-names" => o.proto_names = true,
                "int64-numbers" => o.int64_numbers = true,
                "defaults" => o.defaults = true,
                "enum-numbers" => o.enum_numbers = true,
                "rest" => {
                    o.proto_names = true;
                    o.int64_numbers = true;
                    o.defaults = true;
                }
                other => {
                    return Err(format!(
                        "unknown option {other:?}: give a comma-separated list of proto-names, int64-numbers, defaults, enum-numbers (or rest for the first three)"
                    ))
                }
            }
        }
        Ok(o)
    }
}

impl JsonOptions {
    fn serialize(self) -> SerializeOptions {
        SerializeOptions::new()
            .use_proto_field_name(self.proto_names)
            .stringify_64_bit_integers(!self.int64_numbers)
            .skip_default_fields(!self.defaults)
            .use_enum_numbers(self.enum_numbers)
    }
}

/// A schema problem found before the run: the message names what is
/// wrong (file, import, service, method) and the fix. Exit 2.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

/// Compile `.proto` files (`--proto`) with import paths (`--proto-path`)
/// into a descriptor pool, in pure Rust. Each file's own folder is
/// searched for imports after the given paths (as if given last), so a
/// lone file with imports beside it needs no `--proto-path`.
///
/// # Errors
/// A file or an import that is not found, or a `.proto` that does not
/// compile, with the fix.
pub fn compile(files: &[PathBuf], paths: &[PathBuf]) -> Result<DescriptorPool, SchemaError> {
    let mut includes: Vec<PathBuf> = paths.to_vec();
    for f in files {
        if !f.is_file() {
            return Err(SchemaError(format!(
                "--proto {}: file not found: give the path of a .proto file (relative to the current directory)",
                f.display()
            )));
        }
        let dir = f
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !includes.iter().any(|i| same_dir(i, dir)) {
            includes.push(dir.to_path_buf());
        }
    }
    for p in paths {
        if !p.is_dir() {
            return Err(SchemaError(format!(
                "--proto-path {}: not a folder: give the folder that imports are relative to",
                p.display()
            )));
        }
    }
    let mut compiler =
        protox::Compiler::new(&includes).map_err(|e| SchemaError(format!("--proto-path: {e}")))?;
    compiler.include_imports(true);
    for f in files {
        // protox opens a file by its place under an include path: the
        // first path that holds it.
        let name = includes
            .iter()
            .find_map(|i| relative_to(f, i))
            .unwrap_or_else(|| f.clone());
        compiler.open_file(&name).map_err(|e| {
            let text = e.to_string();
            let fix = if text.contains("import") && text.contains("not found") {
                "add the folder the import is relative to with --proto-path DIR"
            } else if text.contains("not found") || text.contains("not in any include path") {
                "check the path, or give the folder it is relative to with --proto-path DIR"
            } else {
                "fix the .proto file (protoc would report the same)"
            };
            let at = e.file().map(|f| format!(" (in {f})")).unwrap_or_default();
            SchemaError(format!("--proto {}: {text}{at}: {fix}", f.display()))
        })?;
    }
    Ok(compiler.descriptor_pool())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// `file` relative to the folder `dir`, when it is under it.
fn relative_to(file: &Path, dir: &Path) -> Option<PathBuf> {
    let f = file.canonicalize().ok()?;
    let d = dir.canonicalize().ok()?;
    f.strip_prefix(&d).ok().map(Path::to_path_buf)
}

/// One method an endpoint calls, resolved in its schema.
#[derive(Clone, Debug)]
pub struct Method {
    /// The HTTP/2 `:path`: `/package.Service/Method`.
    pub path: String,
    /// The request message type.
    pub input: MessageDescriptor,
    /// The answer message type.
    pub output: MessageDescriptor,
    /// Whether the server answers with a stream of messages.
    pub server_streaming: bool,
}

/// `package.Service/Method` (with or without a leading `/`, or with a dot
/// before the method as grpcurl writes it) split into service and method.
pub fn split_method(name: &str) -> Option<(&str, &str)> {
    let name = name.trim_start_matches('/');
    let (service, method) = match name.rsplit_once('/') {
        Some(p) => p,
        None => name.rsplit_once('.')?,
    };
    (!service.is_empty() && !method.is_empty() && !method.contains('/'))
        .then_some((service, method))
}

/// Whether `path` has a gRPC method's shape, `/package.Service/Method`:
/// two segments, the first a dotted service name.
pub fn is_method_path(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or(path);
    match path.strip_prefix('/').and_then(|p| p.split_once('/')) {
        Some((service, method)) => {
            service.contains('.') && !method.is_empty() && !method.contains('/')
        }
        None => false,
    }
}

/// The method `name` (`package.Service/Method`) in `pool`.
///
/// # Errors
/// The service or method is not in the schema (naming what is), or it is
/// a client-streaming method, which versus does not call.
pub fn find_method(pool: &DescriptorPool, name: &str) -> Result<Method, SchemaError> {
    let (service, method) = split_method(name).ok_or_else(|| {
        SchemaError(format!(
            "{name:?} is not a method name: write package.Service/Method"
        ))
    })?;
    let Some(s) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(SchemaError(format!(
            "service {service} is not in the schema{}",
            if known.is_empty() {
                " (it has no service at all)".to_string()
            } else {
                format!(": it has {}", known.join(", "))
            }
        )));
    };
    let Some(m) = s.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = s.methods().map(|m| m.name().to_string()).collect();
        return Err(SchemaError(format!(
            "method {method} is not in service {service}: it has {}",
            known.join(", ")
        )));
    };
    if m.is_client_streaming() {
        return Err(SchemaError(format!(
            "{service}/{method} is a client-streaming method: versus calls unary and server-streaming methods"
        )));
    }
    Ok(Method {
        path: format!("/{service}/{method}"),
        input: m.input(),
        output: m.output(),
        server_streaming: m.is_server_streaming(),
    })
}

/// The schema of one gRPC endpoint and the methods it calls, resolved
/// before the run; shared by every core.
#[derive(Debug)]
pub struct Service {
    /// Every method it calls: the endpoint's own (its URL path) first,
    /// then those of scenario steps.
    pub methods: Vec<Method>,
    /// Whether `methods[0]` is the endpoint's own method (from its URL).
    pub has_default: bool,
    /// The schema, for methods named only at run time.
    pub pool: DescriptorPool,
    /// How answers are written as JSON.
    pub json: JsonOptions,
}

impl Service {
    /// The method a request calls: the one its `path` names
    /// (`/package.Service/Method`, looked up in the schema when it was not
    /// resolved before the run), else the endpoint's own (its URL's). Any
    /// other path is a REST API's (a record meant for a REST endpoint
    /// beside this one) and calls the endpoint's own method too. `None`
    /// when neither names one, or the named one is not in the schema.
    pub fn method(&self, path: Option<&str>) -> Option<std::borrow::Cow<'_, Method>> {
        let own = || match self.has_default {
            true => self.methods.first().map(std::borrow::Cow::Borrowed),
            false => None,
        };
        let Some(p) = path else {
            return own();
        };
        let p = p.split('?').next().unwrap_or(p);
        if let Some(m) = self.methods.iter().find(|m| m.path == p) {
            return Some(std::borrow::Cow::Borrowed(m));
        }
        match is_method_path(p) {
            true => find_method(&self.pool, p).ok().map(std::borrow::Cow::Owned),
            false => own(),
        }
    }
}

/// Parse one request (proto3 JSON) as a message of type `input`.
///
/// # Errors
/// Not JSON, or JSON that does not fit the message (an unknown field, a
/// value of the wrong type): the message says where.
pub fn parse_request(input: &MessageDescriptor, json: &[u8]) -> Result<DynamicMessage, String> {
    let text = std::str::from_utf8(json).map_err(|_| "not valid UTF-8".to_string())?;
    let text = text.trim();
    let text = if text.is_empty() { "{}" } else { text };
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    fix_numbers(&mut value);
    DynamicMessage::deserialize_with_options(input.clone(), value, &DeserializeOptions::new())
        .map_err(|e| format!("does not fit {}: {e}", input.full_name()))
}

/// Numbers that the JSON parser (with serde_json's arbitrary precision)
/// keeps as text for want of an exact u64, i64 or f64 (`1e3`) become
/// strings, which the proto3 JSON mapping reads as numbers too.
fn fix_numbers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.as_u64().is_none() && n.as_i64().is_none() => {
            let text = n.to_string();
            let exact = n
                .as_f64()
                .is_some_and(|f| f.to_string() == text || format!("{f:?}") == text);
            if !exact {
                *v = Value::String(text);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(fix_numbers),
        Value::Object(o) => o.values_mut().for_each(fix_numbers),
        _ => {}
    }
}

/// One request (proto3 JSON) as a length-prefixed gRPC message, appended
/// to `out`.
///
/// # Errors
/// As [`parse_request`].
pub fn encode_request(
    input: &MessageDescriptor,
    json: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let message = parse_request(input, json)?;
    frame(&message, out);
    Ok(())
}

/// A message as a length-prefixed gRPC message (not compressed),
/// appended to `out`.
pub fn frame(message: &impl prost::Message, out: &mut Vec<u8>) {
    let len = message.encoded_len();
    out.reserve(5 + len);
    out.put_u8(0);
    out.put_u32(len as u32);
    // Reserved above: encoding into a Vec cannot run out of room.
    let _ = message.encode(out);
}

/// The messages of a gRPC body (length-prefixed), in order.
///
/// # Errors
/// A compressed message (versus asks for none), or a body cut short.
pub fn messages(mut body: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 5 {
            return Err("a message cut short".into());
        }
        if body[0] != 0 {
            return Err("a compressed message (versus asks for none)".into());
        }
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        let rest = &body[5..];
        if rest.len() < len {
            return Err("a message cut short".into());
        }
        out.push(&rest[..len]);
        body = &rest[len..];
    }
    Ok(out)
}

/// One answer message as JSON under `opts`.
///
/// # Errors
/// The bytes are not a message of type `output`.
pub fn message_json(
    output: &MessageDescriptor,
    bytes: &[u8],
    opts: JsonOptions,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let m = DynamicMessage::decode(output.clone(), bytes)
        .map_err(|e| format!("not a {} message: {e}", output.full_name()))?;
    let mut ser = serde_json::Serializer::new(out);
    m.serialize_with_options(&mut ser, &opts.serialize())
        .map_err(|e| e.to_string())
}

/// The JSON a gRPC answer is compared as: a unary call's message; a
/// server-streaming call's messages as an array; an error status as
/// `{"code": "NOT_FOUND", "message": "..."}` (whatever came before it).
///
/// # Errors
/// A body that is not messages of the answer's type.
pub fn answer_json(
    method: &Method,
    body: &[u8],
    status: &GrpcStatus,
    opts: JsonOptions,
) -> Result<Bytes, String> {
    if status.is_error() {
        // What came before the error (a stream's first messages, a
        // proxy's HTML page) is not the answer: the status is.
        let v = serde_json::json!({
            "code": code_name(status.code),
            "message": status.message.as_deref().unwrap_or(""),
        });
        return Ok(Bytes::from(v.to_string()));
    }
    let mut out = Vec::with_capacity(body.len() * 2 + 16);
    let messages = messages(body)?;
    if method.server_streaming {
        out.push(b'[');
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            message_json(&method.output, m, opts, &mut out)?;
        }
        out.push(b']');
    } else {
        match messages.as_slice() {
            [m] => message_json(&method.output, m, opts, &mut out)?,
            [] => return Err("a unary call answered no message".into()),
            _ => return Err("a unary call answered more than one message".into()),
        }
    }
    Ok(Bytes::from(out))
}

/// The `grpc-timeout` value for `timeout` (at most 8 digits and a unit,
/// rounded up so the server's deadline is never the earlier one).
pub fn timeout_header(timeout: std::time::Duration) -> String {
    let units: [(u128, char); 4] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
    ];
    let nanos = timeout.as_nanos();
    for (per, unit) in units {
        let n = nanos.div_ceil(per);
        if n < 100_000_000 {
            return format!("{n}{unit}");
        }
    }
    let minutes = nanos.div_ceil(60_000_000_000);
    if minutes < 100_000_000 {
        return format!("{minutes}M");
    }
    format!("{}H", nanos.div_ceil(3_600_000_000_000).min(99_999_999))
}

/// The schema as given: `.proto` files, or the server's reflection.
#[derive(Clone, Debug)]
pub enum SchemaSource {
    /// Compiled from `--proto` files.
    Files(DescriptorPool),
    /// Asked of each endpoint's reflection service before the run.
    Reflection,
}

/// The resolved gRPC set-up of a run: per endpoint (by position), its
/// service when it is a gRPC endpoint.
pub type Services = Vec<Option<Arc<Service>>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_fit_in_eight_digits_and_round_up() {
        use std::time::Duration;
        assert_eq!(timeout_header(Duration::from_millis(1500)), "1500000u");
        assert_eq!(timeout_header(Duration::from_secs(30)), "30000000u");
        assert_eq!(timeout_header(Duration::from_secs(300)), "300000m");
        assert_eq!(timeout_header(Duration::from_nanos(1)), "1n");
        assert_eq!(timeout_header(Duration::from_secs(100_000_000)), "1666667M");
    }

    #[test]
    fn status_messages_are_percent_decoded() {
        assert_eq!(&*decode_message(b"no item %22x%22"), "no item \"x\"");
        assert_eq!(&*decode_message(b"100%"), "100%");
        assert_eq!(&*decode_message(b"%zz"), "%zz");
        assert_eq!(&*decode_message(b"caf%C3%A9"), "café");
    }

    #[test]
    fn method_names_split_in_every_spelling() {
        assert_eq!(split_method("/a.B/C"), Some(("a.B", "C")));
        assert_eq!(split_method("a.B/C"), Some(("a.B", "C")));
        assert_eq!(split_method("a.B.C"), Some(("a.B", "C")));
        assert_eq!(split_method("/"), None);
        assert_eq!(split_method("a.B/"), None);
    }

    #[test]
    fn json_options_parse_and_refuse_unknown_ones() {
        let o: JsonOptions = "proto-names, defaults".parse().unwrap();
        assert!(o.proto_names && o.defaults && !o.int64_numbers);
        let o: JsonOptions = "rest".parse().unwrap();
        assert!(o.proto_names && o.defaults && o.int64_numbers);
        assert!("snake"
            .parse::<JsonOptions>()
            .unwrap_err()
            .contains("proto-names"));
    }

    #[test]
    fn codes_have_names_and_http_statuses_map_to_codes() {
        assert_eq!(code_name(5), "NOT_FOUND");
        assert_eq!(code_name(99), "UNKNOWN");
        assert_eq!(code_by_name("deadline_exceeded"), Some(4));
        assert_eq!(code_of_http(503), 14);
        assert_eq!(code_of_http(404), 12);
    }
}
