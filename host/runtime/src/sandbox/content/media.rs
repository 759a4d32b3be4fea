//! What a picture's or a sound's bytes are, read from their first bytes
//! (their magic numbers) and, for pictures, the width and height their
//! header declares, without decoding anything.
//!
//! Trusts nothing in the bytes: every read is bounds-checked, a header cut
//! short is "not of this type", and the only loop (over a JPEG's segments
//! up to its frame header) moves forward by at least two bytes per step, so
//! it ends within the bytes it was given.

/// The media types accepted for a picture, with the format their bytes
/// must be.
pub(crate) const IMAGE_TYPES: [(&str, Format); 4] = [
    ("image/png", Format::Png),
    ("image/jpeg", Format::Jpeg),
    ("image/gif", Format::Gif),
    ("image/webp", Format::Webp),
];

/// The media types accepted for a sound (with the other names in use for
/// WAV, MP3 and FLAC), with the format their bytes must be.
pub(crate) const AUDIO_TYPES: [(&str, Format); 8] = [
    ("audio/wav", Format::Wav),
    ("audio/x-wav", Format::Wav),
    ("audio/wave", Format::Wav),
    ("audio/mpeg", Format::Mp3),
    ("audio/mp3", Format::Mp3),
    ("audio/ogg", Format::Ogg),
    ("audio/flac", Format::Flac),
    ("audio/x-flac", Format::Flac),
];

/// A format the host recognises from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Png,
    Jpeg,
    Gif,
    Webp,
    Wav,
    Mp3,
    Ogg,
    Flac,
}

impl Format {
    /// The format's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::Gif => "GIF",
            Format::Webp => "WebP",
            Format::Wav => "WAV",
            Format::Mp3 => "MP3",
            Format::Ogg => "Ogg",
            Format::Flac => "FLAC",
        }
    }

    /// Every format, for naming what some bytes are instead.
    const ALL: [Format; 8] =
        [Format::Png, Format::Jpeg, Format::Gif, Format::Webp, Format::Wav, Format::Mp3, Format::Ogg, Format::Flac];
}

/// The format `mime_type` names among `accepted` (compared without case).
pub(crate) fn format_of(mime_type: &str, accepted: &[(&str, Format)]) -> Option<Format> {
    accepted.iter().find(|(name, _)| name.eq_ignore_ascii_case(mime_type)).map(|(_, format)| *format)
}

/// What the header of some bytes says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// They are of the format; a picture's declared width and height.
    Matches(Option<(u64, u64)>),
    /// They are not: what they look like instead, if the host knows.
    Differs(Option<Format>),
}

/// Whether `bytes` are of `format`, and a picture's declared dimensions.
pub(crate) fn sniff(format: Format, bytes: &[u8]) -> Sniffed {
    let found = match format {
        Format::Png => png(bytes).map(Some),
        Format::Jpeg => jpeg(bytes).map(Some),
        Format::Gif => gif(bytes).map(Some),
        Format::Webp => webp(bytes).map(Some),
        Format::Wav => riff(bytes, b"WAVE").then_some(None),
        Format::Mp3 => mp3(bytes).then_some(None),
        Format::Ogg => bytes.starts_with(b"OggS").then_some(None),
        Format::Flac => bytes.starts_with(b"fLaC").then_some(None),
    };
    match found {
        Some(dimensions) => Sniffed::Matches(dimensions),
        None => Sniffed::Differs(
            Format::ALL.into_iter().filter(|other| *other != format).find(|other| starts_like(*other, bytes)),
        ),
    }
}

/// Whether `bytes` start with the magic number of `format` (its header
/// may still be broken).
fn starts_like(format: Format, bytes: &[u8]) -> bool {
    match format {
        Format::Png => bytes.starts_with(PNG_SIGNATURE),
        Format::Jpeg => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        Format::Gif => bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        Format::Webp => riff(bytes, b"WEBP"),
        Format::Wav => riff(bytes, b"WAVE"),
        Format::Mp3 => mp3(bytes),
        Format::Ogg => bytes.starts_with(b"OggS"),
        Format::Flac => bytes.starts_with(b"fLaC"),
    }
}

const PNG_SIGNATURE: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// A big-endian `u32` at `at`.
fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([*b.first()?, *b.get(1)?, *b.get(2)?, *b.get(3)?]))
}

/// A big-endian `u16` at `at`.
fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at.checked_add(1)?)?]))
}

/// A little-endian `u16` at `at`.
fn le16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at.checked_add(1)?)?]))
}

/// A little-endian 24-bit number at `at`.
fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*bytes.get(at)?, *bytes.get(at.checked_add(1)?)?, *bytes.get(at.checked_add(2)?)?, 0]))
}

/// A PNG: the signature, then the IHDR chunk (always first, 13 bytes)
/// whose width and height are each 1..2^31-1, whose bit depth and colour
/// type are a combination the format allows, and whose CRC is right: the
/// signature alone on other bytes is not a PNG.
fn png(bytes: &[u8]) -> Option<(u64, u64)> {
    if !bytes.starts_with(PNG_SIGNATURE) || be32(bytes, 8)? != 13 || bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let (width, height) = (be32(bytes, 16)?, be32(bytes, 20)?);
    let valid = |n: u32| n > 0 && n <= i32::MAX as u32;
    let (depth, colour) = (*bytes.get(24)?, *bytes.get(25)?);
    let allowed = match colour {
        0 => matches!(depth, 1 | 2 | 4 | 8 | 16),
        3 => matches!(depth, 1 | 2 | 4 | 8),
        2 | 4 | 6 => matches!(depth, 8 | 16),
        _ => false,
    };
    let crc_ok = crc32(bytes.get(12..29)?) == be32(bytes, 29)?;
    (valid(width) && valid(height) && allowed && crc_ok).then_some((u64::from(width), u64::from(height)))
}

/// The CRC-32 of PNG chunks (ISO 3309, reflected, polynomial 0xEDB88320),
/// bit by bit: the host checks one 17-byte chunk per picture.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A JPEG: the start-of-image marker, then segments up to the first frame
/// header (SOF0–SOF15 but DHT, JPG and DAC), whose height and width are
/// read. A scan or the end of the image before any frame header is not a
/// JPEG.
fn jpeg(bytes: &[u8]) -> Option<(u64, u64)> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut at = 2usize;
    loop {
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        // Fill bytes before a marker.
        while *bytes.get(at.checked_add(1)?)? == 0xFF {
            at = at.checked_add(1)?;
        }
        let marker = *bytes.get(at.checked_add(1)?)?;
        at = at.checked_add(2)?;
        match marker {
            // Markers without a length: TEM and the restart markers.
            0x01 | 0xD0..=0xD7 => continue,
            // A scan or the end of the image before any frame header.
            0xD8..=0xDA => return None,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let height = be16(bytes, at.checked_add(3)?)?;
                let width = be16(bytes, at.checked_add(5)?)?;
                return (width > 0 && height > 0).then_some((u64::from(width), u64::from(height)));
            }
            _ => {
                let length = usize::from(be16(bytes, at)?);
                if length < 2 {
                    return None;
                }
                at = at.checked_add(length)?;
            }
        }
    }
}

/// A GIF: `GIF87a` or `GIF89a`, then the logical screen's width and height.
fn gif(bytes: &[u8]) -> Option<(u64, u64)> {
    if !(bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")) {
        return None;
    }
    let (width, height) = (le16(bytes, 6)?, le16(bytes, 8)?);
    (width > 0 && height > 0).then_some((u64::from(width), u64::from(height)))
}

/// A RIFF file of `form` (`WAVE`, `WEBP`).
fn riff(bytes: &[u8], form: &[u8; 4]) -> bool {
    bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(form.as_slice())
}

/// A WebP: a RIFF `WEBP` file whose first chunk is `VP8 ` (lossy: the
/// frame's start code, then 14-bit width and height), `VP8L` (lossless:
/// its signature, then 14-bit width and height less one) or `VP8X`
/// (extended: 24-bit canvas width and height less one).
fn webp(bytes: &[u8]) -> Option<(u64, u64)> {
    if !riff(bytes, b"WEBP") {
        return None;
    }
    let (width, height) = match bytes.get(12..16)? {
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            (u32::from(le16(bytes, 26)? & 0x3FFF), u32::from(le16(bytes, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            if *bytes.get(20)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes([*bytes.get(21)?, *bytes.get(22)?, *bytes.get(23)?, *bytes.get(24)?]);
            ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        }
        b"VP8X" => (le24(bytes, 24)? + 1, le24(bytes, 27)? + 1),
        _ => return None,
    };
    (width > 0 && height > 0).then_some((u64::from(width), u64::from(height)))
}

/// An MP3: an ID3v2 tag, or an MPEG audio frame header (its sync word,
/// and a version, layer, bitrate and sample rate that are not reserved).
fn mp3(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"ID3") {
        return true;
    }
    let [0xFF, second, third, ..] = bytes else { return false };
    let (version, layer) = ((second >> 3) & 0b11, (second >> 1) & 0b11);
    let (bitrate, rate) = (third >> 4, (third >> 2) & 0b11);
    second & 0xE0 == 0xE0 && version != 0b01 && layer != 0 && bitrate != 0xF && rate != 0b11
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A PNG header (signature and IHDR) declaring `width` × `height`,
    /// followed by `rest`.
    pub(crate) fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = PNG_SIGNATURE.to_vec();
        bytes.extend_from_slice(&13u32.to_be_bytes());
        bytes.extend_from_slice(b"IHDR");
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.extend_from_slice(&[8, 6, 0, 0, 0]);
        let crc = crc32(&bytes[12..29]);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn the_crc_is_the_one_png_uses() {
        // The IHDR of a 1 × 1 RGBA picture, as every encoder writes it.
        let ihdr = [b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0];
        assert_eq!(crc32(&ihdr), 0x1F15_C489);
        assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    }

    #[test]
    fn a_png_is_read_from_its_ihdr() {
        assert_eq!(sniff(Format::Png, &png_header(1, 1)), Sniffed::Matches(Some((1, 1))));
        assert_eq!(sniff(Format::Png, &png_header(100_000, 100_000)), Sniffed::Matches(Some((100_000, 100_000))));
        // Zero pixels, an IHDR cut short or with a wrong CRC: not a PNG.
        assert_eq!(sniff(Format::Png, &png_header(0, 5)), Sniffed::Differs(None));
        assert_eq!(sniff(Format::Png, &png_header(5, 5)[..20]), Sniffed::Differs(None));
        let mut altered = png_header(5, 5);
        altered[17] = 9;
        assert_eq!(sniff(Format::Png, &altered), Sniffed::Differs(None));
        // The signature on random bytes: not a PNG.
        let mut fake = PNG_SIGNATURE.to_vec();
        fake.extend_from_slice(&[7; 64]);
        assert_eq!(sniff(Format::Png, &fake), Sniffed::Differs(None));
    }

    #[test]
    fn other_formats_are_named_when_the_bytes_are_not_what_was_declared() {
        let jpeg =
            [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x02, 0x00, 0x03];
        assert_eq!(sniff(Format::Jpeg, &jpeg), Sniffed::Matches(Some((3, 2))));
        assert_eq!(sniff(Format::Png, &jpeg), Sniffed::Differs(Some(Format::Jpeg)));
        assert_eq!(sniff(Format::Gif, b"GIF89a\x10\x00\x20\x00"), Sniffed::Matches(Some((16, 32))));
        assert_eq!(sniff(Format::Wav, b"RIFF\0\0\0\0WAVEfmt "), Sniffed::Matches(None));
        assert_eq!(sniff(Format::Webp, b"RIFF\0\0\0\0WAVEfmt "), Sniffed::Differs(Some(Format::Wav)));
        assert_eq!(sniff(Format::Ogg, b"OggS\0"), Sniffed::Matches(None));
        assert_eq!(sniff(Format::Flac, b"fLaC\0"), Sniffed::Matches(None));
        assert_eq!(sniff(Format::Mp3, b"ID3\x04"), Sniffed::Matches(None));
        assert_eq!(sniff(Format::Mp3, &[0xFF, 0xFB, 0x90]), Sniffed::Matches(None));
        assert_eq!(sniff(Format::Mp3, &[0xFF, 0xFF, 0xFF]), Sniffed::Differs(None), "a reserved bitrate");
        assert_eq!(sniff(Format::Mp3, b"<svg/>"), Sniffed::Differs(None));
        assert_eq!(sniff(Format::Wav, b""), Sniffed::Differs(None));
    }

    #[test]
    fn webp_dimensions_come_from_each_chunk_kind() {
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        vp8x.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0x01, 0x00, 0x00]);
        assert_eq!(sniff(Format::Webp, &vp8x), Sniffed::Matches(Some((1 << 24, 2))));
        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        // Width 10 and height 20, each less one, in 14 bits.
        let bits: u32 = 9 | (19 << 14);
        vp8l.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(sniff(Format::Webp, &vp8l), Sniffed::Matches(Some((10, 20))));
    }

    #[test]
    fn a_jpeg_without_a_frame_header_is_refused_and_the_walk_ends() {
        // A scan before any frame header.
        assert_eq!(sniff(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]), Sniffed::Differs(None));
        // A segment length pointing past the end.
        assert_eq!(sniff(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF]), Sniffed::Differs(None));
        // A zero length would not move forward: refused.
        assert_eq!(sniff(Format::Jpeg, &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0, 0xFF, 0xC0]), Sniffed::Differs(None));
        // Only fill bytes.
        assert_eq!(sniff(Format::Jpeg, &[0xFF; 4096]), Sniffed::Differs(None));
    }

    #[test]
    fn media_types_are_matched_without_case() {
        assert_eq!(format_of("IMAGE/PNG", &IMAGE_TYPES), Some(Format::Png));
        assert_eq!(format_of("image/svg+xml", &IMAGE_TYPES), None);
        assert_eq!(format_of("audio/x-wav", &AUDIO_TYPES), Some(Format::Wav));
    }
}
