//! Test utilities, by job: the sample and snapshots built from it ([`sample`]), servers
//! started in this process and a raw HTTP/1.1 client ([`server`]), the real binary ([`binary`]),
//! and TLS material ([`tls`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use marks::api::state::State;
use marks::app::App;
use marks::settings::Settings;
use marks_builder::{BuildOptions, BuildReport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod binary;
mod sample;
mod server;
mod tls;

pub use binary::*;
pub use sample::*;
pub use server::*;
pub use tls::*;
