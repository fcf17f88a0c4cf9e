//! Images a message carries (issue 44 item 1): what a file is, by its
//! first bytes; how large a picture may go out on each wire; whether the
//! model sees pictures at all. The shell decodes, scales and encodes (the
//! `image` crate, in `revolve-tools`); it asks here what to do.
//!
//! The limits are [`crate::policy`]'s, one pair per wire: Anthropic's
//! recommended long edge and its 5 MB per image, OpenAI's 2048 px fit and
//! its 20 MB. An image within both is sent as its file's bytes, untouched;
//! a larger one is scaled to fit the edge (aspect kept), then, while its
//! encoding is still over the byte limit, to three quarters again, at most
//! [`crate::policy::IMAGE_SHRINK_TRIES`] times.

use crate::models::Table;
use crate::policy::{
    IMAGE_BYTES_ANTHROPIC, IMAGE_BYTES_GEMINI, IMAGE_BYTES_OPENAI, IMAGE_EDGE_ANTHROPIC,
    IMAGE_EDGE_GEMINI, IMAGE_EDGE_OPENAI, IMAGE_SHRINK_TRIES,
};
use crate::request::Wire;

pub use crate::record::Image;

/// The media type of a file that starts with `head`, when it is one of
/// the pictures both wires take: PNG, JPEG, GIF or WebP, told by their
/// magic bytes, never by the name.
pub fn media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// How large one image may go out on a wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest edge, in pixels.
    pub edge: u32,
    /// The most bytes of the image (before base64).
    pub bytes: usize,
}

impl Limits {
    /// The limits of `wire`.
    pub fn of(wire: Wire) -> Limits {
        match wire {
            Wire::Anthropic => Limits {
                edge: IMAGE_EDGE_ANTHROPIC,
                bytes: IMAGE_BYTES_ANTHROPIC,
            },
            Wire::OpenAi | Wire::Responses => Limits {
                edge: IMAGE_EDGE_OPENAI,
                bytes: IMAGE_BYTES_OPENAI,
            },
            Wire::Gemini => Limits {
                edge: IMAGE_EDGE_GEMINI,
                bytes: IMAGE_BYTES_GEMINI,
            },
        }
    }

    /// The size a `width` × `height` picture of `bytes` bytes is sent at:
    /// `None` when it fits as it is (its file's bytes go out), else the
    /// size to scale it to, which keeps the aspect and fits the edge.
    pub fn fit(&self, width: u32, height: u32, bytes: usize) -> Option<(u32, u32)> {
        let long = width.max(height);
        if long <= self.edge && bytes <= self.bytes {
            return None;
        }
        Some(scaled(width, height, long.min(self.edge)))
    }

    /// The size to try next when the picture, encoded at `width` ×
    /// `height` on try `tries` (from 1), is still over the byte limit:
    /// three quarters of its edge, `None` once the tries are spent (the
    /// image is left out).
    pub fn shrink(&self, width: u32, height: u32, tries: u32) -> Option<(u32, u32)> {
        if tries >= IMAGE_SHRINK_TRIES {
            return None;
        }
        let long = width.max(height);
        let edge = (long * 3 / 4).max(1);
        (edge < long).then(|| scaled(width, height, edge))
    }
}

/// `width` × `height` scaled so its long edge is `edge`, the short one
/// rounded and at least 1.
fn scaled(width: u32, height: u32, edge: u32) -> (u32, u32) {
    let long = u64::from(width.max(height).max(1));
    let short = |side: u32| {
        let s = (u64::from(side) * u64::from(edge) + long / 2) / long;
        u32::try_from(s.max(1)).unwrap_or(edge)
    };
    if width >= height {
        (edge, short(height))
    } else {
        (short(width), edge)
    }
}

/// Whether `model` (as the `preset` provider serves it) is known to see
/// no pictures: the table marks it `"vision": false`. A model the table
/// does not know, or knows without saying, is let through (the server
/// answers if it cannot).
pub fn blind(table: &Table, preset: &str, model: &str) -> bool {
    table
        .find(preset, model)
        .is_some_and(|(_, m)| m.vision == Some(false))
}

/// The line a user is told when images are refused before anything is
/// sent: which model, and what to do.
pub fn refusal(model: &str, what: &str) -> String {
    format!(
        "{model} does not take images (the model table marks it without vision): {what} not sent; \
         switch to a model that does with /model NAME or --model, or set \"vision\": true for it \
         in config.json's models if the table is wrong"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_are_told_by_their_first_bytes() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(media_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a.."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(media_type(b"fn main() {}"), None);
        assert_eq!(media_type(b""), None);
    }

    #[test]
    fn a_picture_within_the_limits_goes_as_it_is() {
        let l = Limits::of(Wire::Anthropic);
        assert_eq!(l.fit(1568, 800, 1000), None);
        assert_eq!(l.fit(6000, 6000, 1000), Some((1568, 1568)));
        assert_eq!(l.fit(6000, 3000, 1000), Some((1568, 784)));
        assert_eq!(l.fit(10, 20000, 1000), Some((1, 1568)));
        // Small but heavy: scaled at its own size first, then shrunk.
        assert_eq!(l.fit(1000, 500, l.bytes + 1), Some((1000, 500)));
        let o = Limits::of(Wire::OpenAi);
        assert_eq!(o.fit(6000, 6000, 1000), Some((2048, 2048)));
        assert_eq!(o.fit(2048, 1000, 1000), None);
    }

    #[test]
    fn shrinking_ends() {
        let l = Limits::of(Wire::OpenAi);
        assert_eq!(l.shrink(2048, 1024, 1), Some((1536, 768)));
        assert_eq!(l.shrink(2048, 1024, IMAGE_SHRINK_TRIES), None);
        assert_eq!(l.shrink(1, 1, 1), None);
    }

    #[test]
    fn a_pictures_base64_weighs_as_its_tiles_not_its_text() {
        let at = time::macros::datetime!(2026-12-06 15:00 UTC);
        let text = crate::record::Message::user(at, "look");
        let with = crate::record::Message {
            images: vec![Image {
                hash: format!("sha256:{}", "0".repeat(64)),
                media_type: "image/png".into(),
                width: 1568,
                height: 1568,
                source: "a.png".into(),
                data: "A".repeat(4_000_000).into(),
            }],
            ..text.clone()
        };
        for wire in [Wire::OpenAi, Wire::Anthropic] {
            let plain =
                crate::request::Request::build(wire, "m", None, std::slice::from_ref(&text));
            assert_eq!(plain.body.weight(), plain.body.len());
            let r = crate::request::Request::build(wire, "m", None, std::slice::from_ref(&with));
            assert!(r.body.len() > 4_000_000);
            assert!(r.body.weight() < plain.body.len() + 300 + crate::policy::IMAGE_WEIGHT_BYTES);
            assert!(r.body.weight() >= crate::policy::IMAGE_WEIGHT_BYTES);
        }
    }

    #[test]
    fn only_a_model_marked_without_vision_is_refused() {
        let mut entries = std::collections::BTreeMap::new();
        let blind_entry: crate::models::Entry =
            serde_json::from_str(r#"{"vision": false}"#).unwrap();
        entries.insert("text-only".to_owned(), blind_entry);
        let table = Table::shipped().with(&entries);
        assert!(blind(&table, "openai", "text-only"));
        assert!(!blind(&table, "openai", "no-such-model"));
        assert!(!blind(&table, "anthropic", "claude-sonnet-4-5"));
        assert!(refusal("text-only", "image a.png").starts_with("text-only does not take images"));
    }
}
