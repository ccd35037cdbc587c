//! The messages of gRPC server reflection (`grpc.reflection.v1` and
//! `v1alpha`, which have the same fields), and the schema put together
//! from the files a server sends. The calls themselves go over versus's
//! HTTP/2 codec (`endpoint::grpc::reflect`).

use prost_reflect::DescriptorPool;

use super::SchemaError;

/// The `:path` of the reflection call, newest version first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// `ServerReflectionRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    #[prost(string, tag = "1")]
    pub host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    pub ask: Option<Ask>,
}

/// What a reflection request asks.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ask {
    /// A file by its name (an import).
    #[prost(string, tag = "3")]
    FileByFilename(String),
    /// The file that defines a symbol (a service).
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    /// Every service's name.
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// `ServerReflectionResponse`, the parts versus reads.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerReflectionResponse {
    #[prost(oneof = "MessageResponse", tags = "4, 6, 7")]
    pub answer: Option<MessageResponse>,
}

/// What a reflection response holds.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum MessageResponse {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "6")]
    Services(ListServiceResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

/// `FileDescriptorResponse`: serialized `FileDescriptorProto`s.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub file_descriptor_proto: Vec<Vec<u8>>,
}

/// `ListServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    pub service: Vec<ServiceResponse>,
}

/// `ServiceResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceResponse {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `ErrorResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ErrorResponse {
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// The files a server sent, gathered until every import is there, then
/// made into a pool.
#[derive(Default)]
pub struct Files {
    /// Serialized `FileDescriptorProto`s by name.
    files: Vec<(String, prost_types::FileDescriptorProto)>,
}

impl Files {
    /// Add the files of one answer.
    ///
    /// # Errors
    /// A file that is not a `FileDescriptorProto`.
    pub fn add(&mut self, raw: &[Vec<u8>]) -> Result<(), String> {
        use prost::Message as _;
        for bytes in raw {
            let f = prost_types::FileDescriptorProto::decode(bytes.as_slice()).map_err(|e| {
                format!("the server sent a file descriptor that does not decode: {e}")
            })?;
            let name = f.name().to_string();
            if !self.files.iter().any(|(n, _)| *n == name) {
                self.files.push((name, f));
            }
        }
        Ok(())
    }

    /// An import named by a file held but not held itself.
    pub fn missing(&self) -> Option<String> {
        self.files
            .iter()
            .flat_map(|(_, f)| f.dependency.iter())
            .find(|d| !self.files.iter().any(|(n, _)| n == *d))
            .cloned()
    }

    /// The pool of the files held.
    ///
    /// # Errors
    /// Files that do not make a schema (a type that is not defined).
    pub fn pool(self) -> Result<DescriptorPool, SchemaError> {
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(self.files.into_iter().map(|(_, f)| f))
            .map_err(|e| {
                SchemaError(format!(
                    "the schema the server's reflection gave is not whole: {e}"
                ))
            })?;
        Ok(pool)
    }
}
