//! `images` of a `message` (issue 44 item 1): a picture the user attached
//! (`@path`, `--image`) or `read_file` read, kept once in the content store
//! by the hash of the bytes sent, which the record names.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One image of a message, as it went out. The log holds its hash, media
/// type and size; the bytes are the content store's (`<state>/blobs`),
/// already scaled, so replay sends them as they were and never scales
/// again. `data`, their base64, is filled by the shell: when the image is
/// made, and when a log is read (from the content store); a request
/// writes it as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The content store's name of the bytes sent: `sha256:` and 64 hex
    /// digits.
    pub hash: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Its width as sent, in pixels.
    pub width: u32,
    /// Its height as sent, in pixels.
    pub height: u32,
    /// Where it came from: the path as the user or the model named it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The bytes sent, in base64 (never written to the log).
    #[serde(skip)]
    pub data: Arc<str>,
}

impl Image {
    /// The `data:` URL of the Chat Completions wire.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

impl super::Record {
    /// The images the record names (a message's, and those of the turns
    /// a `compacted` record keeps), for the shell to put their bytes back
    /// from the content store when it reads a log.
    pub fn images_mut(&mut self) -> Vec<&mut Image> {
        match self {
            super::Record::Message(m) => m.images.iter_mut().collect(),
            super::Record::Compacted(c) => c.kept.iter_mut().flat_map(|m| &mut m.images).collect(),
            _ => Vec::new(),
        }
    }
}
