"""Content blocks returned beside a call's JSON result: pictures, sounds,
files the tool made, and links (`airlock:tool/content`).

A block is attached while the call runs and goes with its result, in the
order attached. The host checks each one as it arrives (its size against
the operator's caps, an image's or a sound's bytes against its media type)
and says why it refused one; a refused block makes the call fail, so a tool
cannot quietly lose what it meant to show. A call that returns an error
returns no blocks.

    from airlock_tool import content
    from airlock_tool.content import Content

    content.attach(Content.image("image/png", png_bytes))
    content.attach(Content.link("https://example.com/report.pdf", "report.pdf", mime_type="application/pdf"))

Outside a component (a tool's unit tests with the host's CPython) nothing
reaches a host: attached blocks are kept, and `take_attached()` returns them.
"""

import dataclasses
import typing

__all__ = ["CONTENT_REFUSED", "Content", "Link", "attach", "take_attached"]

# The code of the ToolError `attach` raises for a block the host refused.
CONTENT_REFUSED = "content_refused"


@dataclasses.dataclass(frozen=True)
class Link:
    """A link to a resource the client may fetch or show (the host never
    fetches it)."""

    # The resource's URI.
    uri: str
    # A short name, e.g. the file name.
    name: str
    # A title for people, if it differs from the name.
    title: str | None = None
    # What the resource is, for a model choosing whether to read it.
    description: str | None = None
    # Its media type, when known.
    mime_type: str | None = None
    # Its size in bytes, when known.
    size: int | None = None


@dataclasses.dataclass(frozen=True)
class Content:
    """One content block; build it with the constructors below.

    `kind` is `text`, `image`, `audio`, `link` or `embedded`; `payload` is
    the text (a text block, an embedded text file), the bytes (an image, a
    sound, an embedded binary file) or the `Link`."""

    kind: typing.Literal["text", "image", "audio", "link", "embedded"]
    payload: str | bytes | Link
    # The media type: required for images and sounds, given for embedded files.
    mime_type: str | None = None
    # The URI of an embedded resource (a name for it; nothing is fetched).
    uri: str | None = None

    @staticmethod
    def text(text: str) -> "Content":
        """Text for the model, shown after the result."""
        return Content("text", _str("text", text))

    @staticmethod
    def image(mime_type: str, data: bytes) -> "Content":
        """A picture: `image/png`, `image/jpeg`, `image/gif` or `image/webp`;
        the host checks that the bytes are of that type."""
        return Content("image", _bytes("data", data), _str("mime_type", mime_type))

    @staticmethod
    def audio(mime_type: str, data: bytes) -> "Content":
        """A sound: `audio/wav`, `audio/mpeg`, `audio/ogg` or `audio/flac`;
        the host checks that the bytes are of that type."""
        return Content("audio", _bytes("data", data), _str("mime_type", mime_type))

    @staticmethod
    def link(
        uri: str,
        name: str,
        *,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
    ) -> "Content":
        """A link to `uri` named `name`, with optional details."""
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 64):
            raise TypeError("size must be a number of bytes from 0 to 2**64 - 1")
        link = Link(_str("uri", uri), _str("name", name), _opt("title", title), _opt("description", description),
                    _opt("mime_type", mime_type), size)
        return Content("link", link)

    @staticmethod
    def embedded_text(uri: str, mime_type: str, text: str) -> "Content":
        """An embedded text file, e.g. an SVG document."""
        return Content("embedded", _str("text", text), _str("mime_type", mime_type), _str("uri", uri))

    @staticmethod
    def embedded_blob(uri: str, mime_type: str, data: bytes) -> "Content":
        """An embedded binary file, e.g. a PDF."""
        return Content("embedded", _bytes("data", data), _str("mime_type", mime_type), _str("uri", uri))


def _str(name: str, value: typing.Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _opt(name: str, value: typing.Any) -> str | None:
    return None if value is None else _str(name, value)


def _bytes(name: str, value: typing.Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


# What a native build attached, for its tests to read.
_ATTACHED: list[Content] = []


def attach(block: Content) -> None:
    """Attach `block` to the current call's result.

    Raises `ToolError` with code `content_refused` and the host's reason
    (a cap and its value, a media type that does not match the bytes) when
    the host refuses the block; letting it propagate ends the call, which
    fails with the host's reason either way."""
    if not isinstance(block, Content):
        raise TypeError(f"attach() takes a Content block, not {type(block).__name__}")
    # Imported here: the package's __init__ imports this module.
    from . import ToolError

    try:
        from wit_world.imports import content as wit  # type: ignore[import-not-found]
    except ImportError:
        _ATTACHED.append(block)
        return
    from componentize_py_types import Err  # type: ignore[import-not-found]

    try:
        wit.attach(_to_wit(wit, block))
    except Err as e:
        raise ToolError(str(e.value), code=CONTENT_REFUSED) from None


def take_attached() -> list[Content]:
    """The blocks attached since the last call of this function, in order.
    Only outside a component (a tool's unit tests); a component's blocks go
    to the host."""
    taken = list(_ATTACHED)
    _ATTACHED.clear()
    return taken


def _to_wit(wit: typing.Any, block: Content) -> typing.Any:
    """The generated binding's value of `block`."""
    payload = block.payload
    if block.kind == "text":
        return wit.Block_Text(payload)
    if block.kind in ("image", "audio"):
        media = wit.Media(mime_type=block.mime_type, data=payload)
        return wit.Block_Image(media) if block.kind == "image" else wit.Block_Audio(media)
    if isinstance(payload, Link):
        return wit.Block_ResourceLink(
            wit.Link(uri=payload.uri, name=payload.name, title=payload.title, description=payload.description,
                     mime_type=payload.mime_type, size=payload.size)
        )
    body = wit.Body_Text(payload) if isinstance(payload, str) else wit.Body_Blob(payload)
    return wit.Block_Embedded(wit.Embedded(uri=block.uri, mime_type=block.mime_type, body=body))
