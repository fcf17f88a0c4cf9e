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

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::record::{Image, Message};
    use time::macros::datetime;

    fn named(hash: &str) -> Record {
        Record::Message(Message {
            images: vec![Image {
                hash: hash.to_owned(),
                media_type: "image/png".into(),
                width: 1,
                height: 1,
                source: "a.png".into(),
                data: Arc::from(""),
            }],
            ..Message::user(datetime!(2026-12-06 15:00 UTC), "look")
        })
    }

    #[test]
    fn a_logs_pictures_come_back_from_the_store_beside_its_projects_folder() {
        let dir = tempfile::tempdir().unwrap();
        let hex = "ab".repeat(32);
        let blob = dir.path().join("blobs").join("ab").join(&hex);
        std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
        std::fs::write(&blob, b"\x89PNG").unwrap();
        let log = dir.path().join("projects/-w/sessions/s1.jsonl");
        let mut pictures = Pictures::of(&log);
        let mut record = named(&format!("sha256:{hex}"));
        pictures.fill(&mut record);
        assert_eq!(&*record.images_mut()[0].data, "iVBORw==");
        // Missing from the store (or no hash at all): left empty, no panic.
        let mut missing = named(&format!("sha256:{}", "cd".repeat(32)));
        pictures.fill(&mut missing);
        assert_eq!(&*missing.images_mut()[0].data, "");
        let mut bad = named("sha256:../../etc/passwd");
        pictures.fill(&mut bad);
        assert_eq!(&*bad.images_mut()[0].data, "");
    }
}
