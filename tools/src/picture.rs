//! Pictures, made ready to send (issue 44 item 1): a file's bytes checked
//! by decoding them whole (a corrupt or truncated file is refused with
//! one line), scaled down when [`revolve_core::images::Limits`] says so
//! (the `image` crate), stored once in the content store by the hash of
//! the bytes that go out, and carried as base64. Core decides what is an
//! image and how large it may be; this only does it.

use std::io::Cursor;
use std::sync::Arc;

use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader};

use revolve_core::images::{media_type, Limits};
use revolve_core::policy::IMAGE_DECODE_PIXELS;
use revolve_core::record::Image;
use revolve_core::request::Wire;

use crate::edit::Blobs;

/// The quality a scaled JPEG is encoded at.
const JPEG_QUALITY: u8 = 85; // not policy: an encoder setting, as image-rs suggests

/// Whether `bytes` (a file's first bytes, or all of them) are a picture
/// the wires take.
pub fn is_picture(bytes: &[u8]) -> bool {
    media_type(bytes).is_some()
}

/// The image part of the picture `bytes` (named `source` in messages) for
/// `wire`: decoded to check it, scaled when it is over the wire's limits,
/// its bytes as sent stored in `blobs`. The error is the one line the
/// user (or the model) is told: `image SOURCE: why, left out`.
pub fn prepare(bytes: &[u8], source: &str, wire: Wire, blobs: &Blobs) -> Result<Image, String> {
    let left_out = |why: String| format!("image {source}: {why}, left out");
    let Some(media) = media_type(bytes) else {
        return Err(left_out("not a PNG, JPEG, GIF or WebP picture".to_owned()));
    };
    let decoded = decode(bytes).map_err(left_out)?;
    let limits = Limits::of(wire);
    let (width, height) = (decoded.width(), decoded.height());
    let (out, media, width, height) = match limits.fit(width, height, bytes.len()) {
        None => (bytes.to_vec(), media, width, height),
        Some(size) => {
            let scaled = scale(&decoded, media, size, &limits).map_err(left_out)?;
            (scaled.bytes, scaled.media, scaled.size.0, scaled.size.1)
        }
    };
    let hash = blobs
        .put(&out)
        .map_err(|e| left_out(format!("cannot store it: {e}")))?;
    Ok(Image {
        hash,
        media_type: media.to_owned(),
        width,
        height,
        source: source.to_owned(),
        data: Arc::from(base64::engine::general_purpose::STANDARD.encode(&out)),
    })
}

/// The one line a tool result (and the user) reads about a picture sent.
pub fn described(image: &Image, original: Option<(u32, u32)>) -> String {
    let scaled = match original {
        Some((w, h)) if (w, h) != (image.width, image.height) => {
            format!(", scaled down from {w}×{h}")
        }
        _ => String::new(),
    };
    format!(
        "[image {}: {}, {}×{}{scaled}; attached]",
        image.source, image.media_type, image.width, image.height
    )
}

/// The size of the picture `bytes`, read from its header only.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

/// The picture decoded whole, within [`IMAGE_DECODE_PIXELS`].
fn decode(bytes: &[u8]) -> Result<DynamicImage, String> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read it: {e}"))?;
    let (w, h) = reader
        .into_dimensions()
        .map_err(|e| format!("cannot decode it: {e}"))?;
    if u64::from(w) * u64::from(h) > IMAGE_DECODE_PIXELS {
        return Err(format!("{w}×{h} is too many pixels to read"));
    }
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read it: {e}"))?;
    reader.no_limits();
    reader
        .decode()
        .map_err(|e| format!("cannot decode it: {e}"))
}

/// A picture scaled and encoded again.
struct Scaled {
    bytes: Vec<u8>,
    media: &'static str,
    size: (u32, u32),
}

/// `decoded` brought near `size` cheaply: a picture over twice as wide
/// and as high is first reduced to twice `size` by averaging the pixels
/// each new pixel covers (`thumbnail_exact`, one pass in integers, and at
/// such ratios the same averaging `Triangle` does, which weighs several
/// times more pixels for each); any other is taken as it is. `Triangle`
/// then scales from there. A 6,000 px square took about a second a try
/// scaled in one step.
fn near(decoded: &DynamicImage, size: (u32, u32)) -> std::borrow::Cow<'_, DynamicImage> {
    let twice = (size.0.saturating_mul(2), size.1.saturating_mul(2));
    if decoded.width() > twice.0 && decoded.height() > twice.1 {
        std::borrow::Cow::Owned(decoded.thumbnail_exact(twice.0, twice.1))
    } else {
        std::borrow::Cow::Borrowed(decoded)
    }
}

/// `decoded` scaled to `size` and encoded (a JPEG stays one, any other
/// picture becomes a PNG), smaller again while over the byte limit.
fn scale(
    decoded: &DynamicImage,
    media: &'static str,
    mut size: (u32, u32),
    limits: &Limits,
) -> Result<Scaled, String> {
    let (format, media) = match media {
        "image/jpeg" => (ImageFormat::Jpeg, "image/jpeg"),
        _ => (ImageFormat::Png, "image/png"),
    };
    let near = near(decoded, size);
    let mut tries = 1;
    loop {
        let small = near.resize_exact(size.0, size.1, image::imageops::FilterType::Triangle);
        let out = encode(&small, format)?;
        if out.len() <= limits.bytes {
            return Ok(Scaled {
                bytes: out,
                media,
                size,
            });
        }
        match limits.shrink(size.0, size.1, tries) {
            Some(next) => size = next,
            None => {
                return Err(format!(
                    "still {} bytes at {}×{}, over the {} the model takes",
                    out.len(),
                    size.0,
                    size.1,
                    limits.bytes
                ))
            }
        }
        tries += 1;
    }
}

fn encode(picture: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let written = match format {
        ImageFormat::Jpeg => {
            let rgb = DynamicImage::ImageRgb8(picture.to_rgb8());
            let encoder =
                image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
            rgb.write_with_encoder(encoder)
        }
        _ => picture.write_to(&mut Cursor::new(&mut out), format),
    };
    written.map_err(|e| format!("cannot encode it scaled: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let picture = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(picture)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_small_picture_goes_as_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path());
        let bytes = png(40, 30);
        let image = prepare(&bytes, "a.png", Wire::OpenAi, &blobs).unwrap();
        assert_eq!((image.width, image.height), (40, 30));
        assert_eq!(blobs.get(&image.hash).unwrap(), bytes);
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(image.data.as_bytes())
                .unwrap(),
            bytes
        );
    }

    #[test]
    fn a_large_picture_is_scaled_to_the_wires_edge() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = Blobs::new(dir.path());
        let image = prepare(&png(3000, 1500), "big.png", Wire::Anthropic, &blobs).unwrap();
        assert_eq!((image.width, image.height), (1568, 784));
        let sent = blobs.get(&image.hash).unwrap();
        assert_eq!(dimensions(&sent), Some((1568, 784)));
    }

    #[test]
    fn a_picture_over_twice_the_size_is_averaged_down_first_to_about_the_same_pixels() {
        let big = DynamicImage::ImageRgb8(image::RgbImage::from_fn(3000, 2400, |x, y| {
            image::Rgb([(x / 12) as u8, (y / 10) as u8, ((x + y) / 22) as u8])
        }));
        let halfway = near(&big, (500, 400));
        assert_eq!((halfway.width(), halfway.height()), (1000, 800));
        let filter = image::imageops::FilterType::Triangle;
        let (two_steps, one_step) = (
            halfway.resize_exact(500, 400, filter).to_rgb8(),
            big.resize_exact(500, 400, filter).to_rgb8(),
        );
        let worst = two_steps
            .as_raw()
            .iter()
            .zip(one_step.as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .max();
        assert!(worst <= Some(2), "{worst:?}");

        // Not over twice the size in both sides: taken as it is.
        let wide = DynamicImage::ImageRgb8(image::RgbImage::new(3000, 700));
        assert!(matches!(
            near(&wide, (500, 400)),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_truncated_picture_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = png(200, 200);
        let err = prepare(
            &bytes[..bytes.len() / 2],
            "cut.png",
            Wire::OpenAi,
            &Blobs::new(dir.path()),
        )
        .unwrap_err();
        assert!(err.starts_with("image cut.png: cannot decode it"), "{err}");
        assert!(err.ends_with(", left out"), "{err}");
        assert!(!err.contains('\n'));
    }
}
