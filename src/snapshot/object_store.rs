//! Snapshots published to S3-compatible object storage: `marks publish` uploads them, and
//! `marks serve --snapshot-from` pulls them into a local cache and swaps to them.
//!
//! The layout under `s3://BUCKET/PREFIX`: `snapshots/<sha256>.snap`, immutable objects named by
//! their content, and `CURRENT`, a small JSON [`Manifest`] naming the one to serve. Publishing
//! uploads the snapshot first and overwrites `CURRENT` last, so a replica never sees a manifest
//! whose snapshot is missing. Replicas poll `CURRENT` with `If-None-Match` (an unchanged
//! manifest costs a 304), download a new snapshot to a temporary file in the cache, check its
//! size and SHA-256 against the manifest, load it with every check the server makes (and the
//! publisher signature with `--publisher-key`), and only then rename it to `current.snap`, with
//! the manifest beside it as `CURRENT.json`. The server serves a private copy of what it loaded
//! (`marks_format::Snapshot`), so the file it replaces is deleted at once. A refused object or
//! manifest is not fetched again until `CURRENT` changes; an unreachable store is retried at the
//! next poll. Either way, the snapshot in force keeps serving, and `/readyz` and `/metrics` say
//! what happened.
//!
//! The endpoint and credentials come from the standard AWS environment variables
//! (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, and
//! `AWS_ALLOW_HTTP=true` for a store on plain HTTP), read by `object_store`.

use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use marks_format::{OpenOptions, Snapshot};
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as StorePath;
use object_store::{ClientConfigKey, GetOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::snapshot::background;
use crate::snapshot::in_force::SnapshotInForce;
use crate::snapshot::{epoch_seconds, with_causes, LoadError};

/// What `CURRENT` says: the snapshot to serve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Lowercase hex SHA-256 of the snapshot file; its object is `snapshots/<sha256>.snap`.
    pub sha256: String,
    pub size: u64,
    pub dataset_version: String,
    pub methodology_version: String,
    /// RFC 3339, UTC.
    pub published_at: String,
}

impl Manifest {
    fn parse(bytes: &[u8]) -> Result<Manifest> {
        let manifest: Manifest = serde_json::from_slice(bytes).context("CURRENT is not a manifest")?;
        let hex = manifest.sha256.as_bytes();
        if hex.len() != 64 || !hex.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
            bail!(
                "CURRENT names sha256 {:?}, not 64 lowercase hex digits",
                manifest.sha256
            );
        }
        Ok(manifest)
    }
}

/// `s3://BUCKET/PREFIX`, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub bucket: String,
    pub prefix: String,
}

impl Location {
    pub fn parse(url: &str) -> Result<Location> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| anyhow!("{url:?} is not an s3://BUCKET/PREFIX location"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            bail!("{url:?} names no bucket; expected s3://BUCKET/PREFIX");
        }
        Ok(Location {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        })
    }

    fn object(&self, name: &str) -> StorePath {
        if self.prefix.is_empty() {
            StorePath::from(name)
        } else {
            StorePath::from(format!("{}/{name}", self.prefix))
        }
    }

    fn manifest(&self) -> StorePath {
        self.object("CURRENT")
    }

    fn snapshot(&self, sha256: &str) -> StorePath {
        self.object(&format!("snapshots/{sha256}.snap"))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)
    }
}

/// How long a replica waits for the next bytes of an answer before it takes the download as
/// stalled.
const READ_TIMEOUT: &str = "30s";
/// How long `marks publish` waits for an answer: completing a multipart upload of many
/// gigabytes makes the store assemble it before it answers, silently on some stores (moto
/// took 31 s for a 2.9 GB snapshot, and the upload was taken for stalled and aborted).
const PUBLISH_READ_TIMEOUT: &str = "15m";

/// The store at `location`, configured from the AWS environment variables, waiting at most
/// `read_timeout` for the next bytes of an answer.
fn open_store(location: &Location, read_timeout: &str) -> Result<Arc<dyn ObjectStore>> {
    crate::use_ring_for_outbound_tls();
    // A poll that fails is retried at the next poll anyway: a few quick retries, not the
    // default ten over up to three minutes. A download may take long (a multi-GB snapshot),
    // so the whole request gets an hour, and a stalled one is caught by the read timeout.
    let retry = RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    };
    let client = |key| AmazonS3ConfigKey::Client(key);
    let store = AmazonS3Builder::from_env()
        .with_bucket_name(&location.bucket)
        .with_retry(retry)
        .with_config(client(ClientConfigKey::Timeout), "1h")
        .with_config(client(ClientConfigKey::ReadTimeout), read_timeout)
        .build()
        .with_context(|| format!("cannot configure the object store for {location}"))?;
    Ok(Arc::new(store))
}

/// `marks publish`: checks `file` as a server would, uploads it under its SHA-256, then points
/// `CURRENT` at it. Returns the manifest written.
pub async fn publish(file: &FsPath, location: &Location, options: OpenOptions) -> Result<Manifest> {
    let checked_file = file.to_owned();
    let (header, sha256, size) = tokio::task::spawn_blocking(move || -> Result<_> {
        let snapshot = Snapshot::open(&checked_file, &options)
            .with_context(|| format!("{} refused; nothing was published", checked_file.display()))?;
        let (sha256, size) = sha256_of_file(&checked_file)?;
        Ok((snapshot.header().clone(), sha256, size))
    })
    .await??;
    let store = open_store(location, PUBLISH_READ_TIMEOUT)?;
    let object = location.snapshot(&sha256);
    // Content-addressed: an object already there holds these very bytes.
    if store.head(&object).await.is_err() {
        upload(store.as_ref(), &object, file)
            .await
            .with_context(|| format!("cannot upload {} to {location}", file.display()))?;
    }
    let manifest = Manifest {
        sha256,
        size,
        dataset_version: header.dataset_version.to_string(),
        methodology_version: header.methodology_version.to_string(),
        published_at: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    };
    let body = serde_json::to_vec_pretty(&manifest)?;
    store
        .put(&location.manifest(), PutPayload::from(body))
        .await
        .with_context(|| format!("uploaded the snapshot but cannot write {location}/CURRENT"))?;
    Ok(manifest)
}

/// Streams a file to the store: one PUT when small, a multipart upload when large.
async fn upload(store: &dyn ObjectStore, object: &StorePath, file: &FsPath) -> Result<()> {
    const PART: usize = 16 * 1024 * 1024;
    let mut reader = tokio::fs::File::open(file).await?;
    let length = reader.metadata().await?.len();
    if length <= PART as u64 {
        let mut bytes = Vec::with_capacity(length as usize);
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut bytes).await?;
        store.put(object, PutPayload::from(bytes)).await?;
        return Ok(());
    }
    let upload = store.put_multipart(object).await?;
    let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, PART);
    let mut buffer = vec![0u8; PART];
    loop {
        let read = tokio::io::AsyncReadExt::read(&mut reader, &mut buffer).await?;
        if read == 0 {
            break;
        }
        writer.wait_for_capacity(4).await?;
        writer.write(&buffer[..read]);
    }
    writer.finish().await?;
    Ok(())
}

fn sha256_of_file(path: &FsPath) -> Result<(String, u64)> {
    let mut file =
        marks_format::file::regular_file::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hasher = Sha256::new();
    let size = std::io::copy(&mut file, &mut hasher)?;
    Ok((hex(&hasher.finalize()), size))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the last poll found, for `/readyz`.
#[derive(Clone, Debug, Default)]
pub struct SourceStatus {
    pub last_poll_at: Option<SystemTime>,
    /// The manifest of the snapshot in force.
    pub serving: Option<Manifest>,
    /// The last failure: an unreachable store, or a refused manifest or object.
    pub last_error: Option<(SystemTime, String)>,
}

/// What `/metrics` counts of the source.
#[derive(Debug, Default)]
pub struct SourceCounters {
    pub polls: AtomicU64,
    /// Polls or downloads that failed to reach the store (retried at the next poll).
    pub errors: AtomicU64,
    /// Snapshots downloaded.
    pub downloads: AtomicU64,
    /// Manifests or snapshots refused (a wrong hash or size, a snapshot failing its checks).
    pub refusals: AtomicU64,
}

/// A replica's view of the published snapshots.
pub struct SnapshotSource {
    store: Arc<dyn ObjectStore>,
    pub location: Location,
    cache: PathBuf,
    pub poll_interval: Duration,
    /// `CURRENT`'s ETag when it was last dealt with (loaded or refused).
    handled_etag: Mutex<Option<String>>,
    status: Mutex<SourceStatus>,
    pub counters: SourceCounters,
}

impl std::fmt::Debug for SnapshotSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotSource")
            .field("location", &self.location)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

/// What one poll did.
#[derive(Debug, PartialEq, Eq)]
pub enum Poll {
    /// `CURRENT` unchanged, or naming the snapshot already in force.
    Unchanged,
    /// A new snapshot was downloaded, checked and put in force.
    Loaded,
}

impl SnapshotSource {
    pub fn new(location: Location, cache: PathBuf, poll_interval: Duration) -> Result<SnapshotSource> {
        std::fs::create_dir_all(&cache)
            .with_context(|| format!("cannot create the snapshot cache {}", cache.display()))?;
        Ok(SnapshotSource {
            store: open_store(&location, READ_TIMEOUT)?,
            location,
            cache,
            poll_interval,
            handled_etag: Mutex::new(None),
            status: Mutex::new(SourceStatus::default()),
            counters: SourceCounters::default(),
        })
    }

    /// The file the server serves from (and finds again after a restart).
    pub fn current_file(cache: &FsPath) -> PathBuf {
        cache.join("current.snap")
    }

    fn cached_manifest_file(&self) -> PathBuf {
        self.cache.join("CURRENT.json")
    }

    pub fn status(&self) -> SourceStatus {
        self.status.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The manifest of the cached snapshot, after a restart.
    pub fn remember_cached(&self) {
        let manifest = marks_format::file::regular_file::read(&self.cached_manifest_file())
            .ok()
            .and_then(|bytes| Manifest::parse(&bytes).ok());
        if let Ok(mut status) = self.status.lock() {
            status.serving = manifest;
        }
    }

    /// Looks at `CURRENT` once and, if it names a new snapshot, fetches, checks and loads it.
    /// An error means the store could not be reached (or the download broke off): retried at
    /// the next poll. A refused manifest or snapshot is not an error of the poll: it is
    /// recorded and not fetched again until `CURRENT` changes.
    pub async fn poll(&self, server: &Arc<SnapshotInForce>) -> Result<Poll> {
        self.counters.polls.fetch_add(1, Relaxed);
        let result = self.poll_inner(server).await;
        if let Ok(mut status) = self.status.lock() {
            status.last_poll_at = Some(SystemTime::now());
            if let Err(error) = &result {
                status.last_error = Some((SystemTime::now(), format!("{error:#}")));
            }
        }
        if result.is_err() {
            self.counters.errors.fetch_add(1, Relaxed);
        }
        result
    }

    async fn poll_inner(&self, server: &Arc<SnapshotInForce>) -> Result<Poll> {
        let options = GetOptions {
            if_none_match: self.handled_etag.lock().ok().and_then(|e| e.clone()),
            ..GetOptions::default()
        };
        let got = match self.store.get_opts(&self.location.manifest(), options).await {
            Ok(got) => got,
            Err(object_store::Error::NotModified { .. }) => return Ok(Poll::Unchanged),
            Err(object_store::Error::NotFound { .. }) => {
                bail!("nothing is published at {} (no CURRENT manifest)", self.location)
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}/CURRENT", self.location));
            }
        };
        let etag = got.meta.e_tag.clone();
        let bytes = got
            .bytes()
            .await
            .with_context(|| format!("cannot read {}/CURRENT", self.location))?;
        let manifest = match Manifest::parse(&bytes) {
            Ok(manifest) => manifest,
            Err(error) => {
                self.refuse(etag, format!("{}/CURRENT refused: {error:#}", self.location));
                return Ok(Poll::Unchanged);
            }
        };
        let serving = self.status().serving;
        if serving.as_ref().is_some_and(|s| s.sha256 == manifest.sha256) && server.current().is_some() {
            self.handled(etag);
            return Ok(Poll::Unchanged);
        }
        let started = Instant::now();
        let part = self.cache.join(format!("{}.snap.part", manifest.sha256));
        let downloaded = self.download(&manifest, &part).await;
        let (sha256, size) = match downloaded {
            Ok(found) => found,
            Err(error) => {
                let _ = std::fs::remove_file(&part);
                return Err(error);
            }
        };
        self.counters.downloads.fetch_add(1, Relaxed);
        if sha256 != manifest.sha256 || size != manifest.size {
            let _ = std::fs::remove_file(&part);
            self.refuse(
                etag,
                format!(
                    "snapshot {} refused: CURRENT says sha256 {} and {} bytes, the object has sha256 {sha256} and {size} bytes",
                    manifest.sha256, manifest.sha256, manifest.size
                ),
            );
            return Ok(Poll::Unchanged);
        }
        let download_ms = started.elapsed().as_millis() as u64;
        // Loaded and renamed under the reload lock: the file watcher must not see the old
        // `current.snap` after the new snapshot is in force, and load that again.
        let reloading = server.one_load_at_a_time().await;
        if let Err(reason) = load(server, &part).await {
            let _ = std::fs::remove_file(&part);
            self.refuse(
                etag,
                format!("snapshot {} refused: {}", manifest.sha256, with_causes(&reason)),
            );
            return Ok(Poll::Unchanged);
        }
        // In force: now it becomes the cached current snapshot (the file it replaces is no
        // longer read by anything: requests use the server's private copy).
        let current = Self::current_file(&self.cache);
        std::fs::rename(&part, &current)
            .with_context(|| format!("cannot rename {} to {}", part.display(), current.display()))?;
        drop(reloading);
        marks_format::file::atomic_file::write(&self.cached_manifest_file(), &serde_json::to_vec_pretty(&manifest)?)
            .with_context(|| format!("cannot write {}", self.cached_manifest_file().display()))?;
        tracing::info!(
            source = %self.location,
            sha256 = %manifest.sha256,
            dataset_version = %manifest.dataset_version,
            bytes = manifest.size,
            download_ms,
            "published snapshot downloaded, checked and in force"
        );
        if let Ok(mut status) = self.status.lock() {
            status.serving = Some(manifest);
        }
        self.handled(etag);
        Ok(Poll::Loaded)
    }

    /// Streams the snapshot object to `part`, hashing it on the way.
    async fn download(&self, manifest: &Manifest, part: &FsPath) -> Result<(String, u64)> {
        let object = self.location.snapshot(&manifest.sha256);
        let got = self
            .store
            .get(&object)
            .await
            .with_context(|| format!("cannot fetch {}/snapshots/{}.snap", self.location, manifest.sha256))?;
        let mut stream = got.into_stream();
        let mut file = tokio::fs::File::create(part)
            .await
            .with_context(|| format!("cannot write {}", part.display()))?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("download of {} broke off", manifest.sha256))?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            // A manifest cannot make a replica fill its disk: stop at the size it announced.
            if size > manifest.size {
                break;
            }
            file.write_all(&chunk).await?;
        }
        file.sync_all().await?;
        Ok((hex(&hasher.finalize()), size))
    }

    fn handled(&self, etag: Option<String>) {
        if let Ok(mut handled) = self.handled_etag.lock() {
            *handled = etag;
        }
    }

    fn refuse(&self, etag: Option<String>, reason: String) {
        tracing::error!(source = %self.location, "{reason}; still serving the previous snapshot");
        if let Ok(mut status) = self.status.lock() {
            status.last_error = Some((SystemTime::now(), reason));
        }
        self.handled(etag);
        // Counted last: whoever sees the count go up finds the reason in `/readyz` already.
        self.counters.refusals.fetch_add(1, Relaxed);
    }

    /// `/readyz`'s `source` object.
    pub fn readiness(&self) -> serde_json::Value {
        let status = self.status();
        serde_json::json!({
            "location": self.location.to_string(),
            "last_poll_at": status.last_poll_at.map(epoch_seconds),
            "sha256": status.serving.as_ref().map(|m| m.sha256.clone()),
            "published_at": status.serving.as_ref().map(|m| m.published_at.clone()),
            "last_error": status.last_error.map(|(at, reason)| serde_json::json!({
                "at": epoch_seconds(at),
                "reason": reason,
            })),
        })
    }
}

/// Loads and publishes `file` with every check the server makes (the caller holds the reload
/// lock); the reason when refused.
async fn load(server: &Arc<SnapshotInForce>, file: &FsPath) -> std::result::Result<(), LoadError> {
    let loader = server.clone();
    let path = file.to_owned();
    let loaded = background::run("marks-reload", move || loader.load(&path))
        .await
        .map_err(|source| LoadError::Open {
            path: file.to_owned(),
            error: source,
        })?;
    loaded.map(drop)
}

/// Polls the source every `poll_interval` until shutdown.
pub async fn poll_forever(
    source: Arc<SnapshotSource>,
    server: Arc<SnapshotInForce>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let interval = source.poll_interval;
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = shutdown.changed() => return,
        }
        match source.poll(&server).await {
            Ok(_) if failing => {
                failing = false;
                tracing::info!(source = %source.location, "snapshot source reachable again");
            }
            Ok(_) => {}
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(source = %source.location, error = %format!("{error:#}"), "snapshot source unreachable; still serving the snapshot in force, retrying");
            }
            Err(_) => {}
        }
    }
}

impl crate::metric::Report for SnapshotSource {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        let load = |counter: &AtomicU64| counter.load(Relaxed);
        let c = &self.counters;
        vec![
            Metric::counter(
                "marks_snapshot_source_polls_total",
                "Looks at the published manifest (CURRENT) in object storage.",
                load(&c.polls),
            ),
            Metric::counter(
                "marks_snapshot_source_errors_total",
                "Polls or downloads that could not reach the object store (retried at the next poll).",
                load(&c.errors),
            ),
            Metric::counter(
                "marks_snapshot_source_downloads_total",
                "Published snapshots downloaded.",
                load(&c.downloads),
            ),
            Metric::counter(
                "marks_snapshot_source_refusals_total",
                "Published manifests or snapshots refused (wrong hash or size, failed checks).",
                load(&c.refusals),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_split_into_bucket_and_prefix() {
        let location = Location::parse("s3://marks/prod/eu/").unwrap();
        assert_eq!(
            (location.bucket.as_str(), location.prefix.as_str()),
            ("marks", "prod/eu")
        );
        assert_eq!(location.manifest().as_ref(), "prod/eu/CURRENT");
        assert_eq!(
            location.snapshot(&"a".repeat(64)).as_ref(),
            format!("prod/eu/snapshots/{}.snap", "a".repeat(64))
        );
        assert_eq!(Location::parse("s3://marks").unwrap().manifest().as_ref(), "CURRENT");
        assert!(Location::parse("https://marks/prod").is_err());
        assert!(Location::parse("s3:///prod").is_err());
    }

    #[test]
    fn a_manifest_must_name_a_sha256() {
        let good = format!(
            r#"{{"sha256":"{}","size":1,"dataset_version":"d","methodology_version":"m","published_at":"t"}}"#,
            "0f".repeat(32)
        );
        assert!(Manifest::parse(good.as_bytes()).is_ok());
        let bad = good.replace("0f0f", "../");
        assert!(Manifest::parse(bad.as_bytes()).is_err());
        assert!(Manifest::parse(b"not json").is_err());
    }
}
