//! `show(data, mimeType)`: the global through which the submitted code hands
//! bytes it made to the host, as a content block beside the result.
//!
//! # Trust
//!
//! `data` and `mimeType` come from the submitted code. The bytes are copied
//! out of the JavaScript heap (which caps their size) and go through
//! `content::attach`, where the host checks them: its caps on content
//! blocks, an image's or a sound's bytes against the media type. This
//! module caps what it can see itself: [`MAX_SHOWN`] blocks per run and a
//! media type of at most [`MAX_MIME_TYPE_CHARS`] characters. A refusal is
//! an exception the code can read; the host fails the call either way.

use crate::internal;
use airlock_guest::ToolError;
use airlock_guest::content::{self, Content};
use rquickjs::function::Opt;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, TypedArray, Value};
use std::cell::Cell;
use std::rc::Rc;

/// Most blocks `show` attaches in one run.
pub const MAX_SHOWN: usize = 16;
/// Longest media type `show` accepts, in characters.
pub const MAX_MIME_TYPE_CHARS: usize = 255;
/// Media types attached as a picture.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Media types attached as a sound; any type that is neither is a file.
const AUDIO_TYPES: [&str; 4] = ["audio/wav", "audio/mpeg", "audio/ogg", "audio/flac"];

/// Define the global `show` in `ctx`; it counts its blocks in `shown`,
/// which the interpreter resets before every run.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, shown: &Rc<Cell<usize>>) -> Result<(), ToolError> {
    let shown = shown.clone();
    let show = Function::new(ctx.clone(), move |ctx: Ctx<'js>, data: Value<'js>, mime_type: Opt<String>| {
        show(&ctx, &shown, data, mime_type.0.unwrap_or_else(|| "image/png".to_owned()))
    })
    .map_err(internal)?;
    ctx.globals().set("show", show).map_err(internal)
}

/// The bytes of a Uint8Array or an ArrayBuffer, copied out of the heap.
fn bytes(value: &Value<'_>) -> Option<Vec<u8>> {
    let raw = if let Ok(array) = TypedArray::<u8>::from_value(value.clone()) {
        array.as_raw()?
    } else {
        ArrayBuffer::from_value(value.clone())?.as_raw()?
    };
    // SAFETY: the pointer is the live backing store of a buffer this
    // function holds a reference to, and no JavaScript runs while the
    // bytes are copied, so nothing can detach or resize it meanwhile.
    Some(unsafe { raw.as_ref() }.to_vec())
}

fn show<'js>(ctx: &Ctx<'js>, shown: &Cell<usize>, data: Value<'js>, mime_type: String) -> rquickjs::Result<()> {
    let count = mime_type.chars().count();
    if count == 0 || count > MAX_MIME_TYPE_CHARS {
        return Err(Exception::throw_type(
            ctx,
            &format!("show(): mimeType must be a media type such as 'image/png' (1-{MAX_MIME_TYPE_CHARS} characters)"),
        ));
    }
    let mime_type = mime_type.trim().to_ascii_lowercase();
    let kind = if IMAGE_TYPES.contains(&mime_type.as_str()) {
        Kind::Image
    } else if AUDIO_TYPES.contains(&mime_type.as_str()) {
        Kind::Audio
    } else {
        Kind::File
    };
    let text = if kind == Kind::File { data.as_string().map(|s| s.to_string()).transpose()? } else { None };
    let payload = match text {
        Some(text) => Payload::Text(text),
        None => match bytes(&data) {
            Some(bytes) => Payload::Bytes(bytes),
            None => {
                let accepted = if kind == Kind::File {
                    "a Uint8Array, an ArrayBuffer or a string"
                } else {
                    "a Uint8Array or an ArrayBuffer"
                };
                return Err(Exception::throw_type(
                    ctx,
                    &format!("show(): data for {mime_type} must be {accepted}, not {}", data.type_name()),
                ));
            }
        },
    };
    if shown.get() >= MAX_SHOWN {
        return Err(Exception::throw_range(ctx, &format!("show(): at most {MAX_SHOWN} blocks are shown per call")));
    }
    shown.set(shown.get() + 1);
    let uri = format!("airlock:run_js/shown-{}", shown.get());
    let block = match (kind, payload) {
        (Kind::Image, Payload::Bytes(bytes)) => Content::image(mime_type.as_str(), bytes),
        (Kind::Audio, Payload::Bytes(bytes)) => Content::audio(mime_type.as_str(), bytes),
        (_, Payload::Text(text)) => Content::embedded_text(uri, mime_type.as_str(), text),
        (_, Payload::Bytes(bytes)) => Content::embedded_blob(uri, mime_type.as_str(), bytes),
    };
    content::attach(block).map_err(|refused| {
        Exception::throw_message(ctx, &format!("the host refused the {mime_type} block: {}", refused.message))
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Image,
    Audio,
    File,
}

enum Payload {
    Bytes(Vec<u8>),
    Text(String),
}
