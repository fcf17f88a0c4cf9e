//! The pictures a log's messages name (issue 44), put back as they are
//! read: each `images` entry names its bytes by hash in the content store
//! (`<state>/blobs/<first two hex digits>/<hex>`, written by
//! `revolve-tools`' `Blobs`), and the request needs their base64. A log
//! lives under `<state>/projects/…`, so the store is found beside the
//! nearest `projects` folder above it. Each content is read once a read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;

use revolve_core::record::Record;

/// Fills in the images of one log's messages, remembering what it read.
#[derive(Debug, Default)]
pub(crate) struct Pictures {
    blobs: Option<PathBuf>,
    read: HashMap<String, Arc<str>>,
}

impl Pictures {
    /// For the log at `path`.
    pub(crate) fn of(path: &Path) -> Pictures {
        let blobs = path
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == "projects"))
            .and_then(Path::parent)
            .map(|state| state.join("blobs"));
        Pictures {
            blobs,
            read: HashMap::new(),
        }
    }

    /// `record`'s images with their data (a message's, or the kept turns'
    /// of a `compacted` record). An image whose content is not in the store keeps empty data
    /// (its request then differs from the one sent; `replay --check`
    /// says the content is missing).
    pub(crate) fn fill(&mut self, record: &mut Record) {
        for image in record.images_mut() {
            if let Some(data) = self.data(&image.hash) {
                image.data = data;
            }
        }
    }

    fn data(&mut self, hash: &str) -> Option<Arc<str>> {
        if let Some(data) = self.read.get(hash) {
            return Some(Arc::clone(data));
        }
        let hex = hash
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
        let path = self.blobs.as_ref()?.join(&hex[..2]).join(hex);
        let bytes = std::fs::read(path).ok()?;
        let data: Arc<str> = base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into();
        self.read.insert(hash.to_owned(), Arc::clone(&data));
        Some(data)
    }
}
