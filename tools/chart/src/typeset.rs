//! Text for plotters' backends from the font compiled into the component.
//!
//! plotters finds fonts on the system, or through its `ab_glyph` feature,
//! which it leaves out of every `wasm32` build; the sandbox has no fonts
//! anyway. [`Typeset`] wraps a backend and measures every text with the
//! embedded font, so that the PNG and the SVG are laid out alike; on a
//! bitmap it also draws the glyphs, pixel by pixel with their coverage as
//! alpha. The SVG keeps its text as `<text>` elements for the viewer's font.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use std::sync::OnceLock;

/// DejaVu Sans, cut down to Latin-1 and a few signs (`fonts/README.md`).
static FONT_BYTES: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

/// The font, parsed once per instance; `None` would mean the file compiled
/// in is broken, which the unit tests rule out.
fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok()).as_ref()
}

/// What plotters calls a text's size is its line height: its SVG backend
/// writes `font-size` as the size divided by this.
const SIZE_TO_EM: f64 = 1.24;

/// A text laid out: each glyph's outline placed on a line whose top left
/// is (0, 0), with the line's width and height in pixels.
struct Layout {
    glyphs: Vec<ab_glyph::OutlinedGlyph>,
    width: f32,
    height: f32,
}

fn layout(font: &FontRef<'static>, size: f64, text: &str) -> Layout {
    let em = (size / SIZE_TO_EM) as f32;
    // A PxScale is the height from descent to ascent; an em is
    // units-per-em of that.
    let scale = font.units_per_em().map_or(PxScale::from(em), |upem| PxScale::from(em * font.height_unscaled() / upem));
    let scaled = font.as_scaled(scale);
    let ascent = scaled.ascent();
    let mut x = 0.0f32;
    let mut previous = None;
    let mut glyphs = Vec::new();
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            x += scaled.kern(previous, id);
        }
        let glyph = id.with_scale_and_position(scale, point(x, ascent));
        if let Some(outlined) = font.outline_glyph(glyph) {
            glyphs.push(outlined);
        }
        x += scaled.h_advance(id);
        previous = Some(id);
    }
    Layout { glyphs, width: x, height: scaled.height() }
}

/// A backend whose texts are measured (and, with `draw_glyphs`, drawn)
/// with the embedded font.
pub struct Typeset<B> {
    inner: B,
    draw_glyphs: bool,
}

impl<B: DrawingBackend> Typeset<B> {
    /// Wrap a bitmap backend: texts are drawn as glyphs.
    pub fn bitmap(inner: B) -> Self {
        Self { inner, draw_glyphs: true }
    }

    /// Wrap a vector backend that writes texts as text: only measured here.
    pub fn vector(inner: B) -> Self {
        Self { inner, draw_glyphs: false }
    }
}

impl<B: DrawingBackend> DrawingBackend for Typeset<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let Some(font) = font() else { return self.inner.estimate_text_size(text, style) };
        let laid = layout(font, style.size(), text);
        Ok((laid.width.ceil() as u32, laid.height.ceil() as u32))
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        let font = match font() {
            Some(font) if self.draw_glyphs => font,
            _ => return self.inner.draw_text(text, style, pos),
        };
        if color.alpha == 0.0 {
            return Ok(());
        }
        let laid = layout(font, style.size(), text);
        // The anchor is a point of the text's box; the glyphs are placed
        // from the box's top left.
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -laid.width / 2.0,
            HPos::Right => -laid.width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -laid.height / 2.0,
            VPos::Bottom => -laid.height,
        };
        let transform = style.transform();
        let (width, height) = self.inner.get_size();
        let mut pixels = Vec::new();
        for glyph in &laid.glyphs {
            let bounds = glyph.px_bounds();
            glyph.draw(|x, y, coverage| {
                if coverage > 1.0 / 255.0 {
                    let gx = (bounds.min.x + x as f32 + dx).round() as i32;
                    let gy = (bounds.min.y + y as f32 + dy).round() as i32;
                    pixels.push((gx, gy, coverage));
                }
            });
        }
        for (gx, gy, coverage) in pixels {
            let (tx, ty) = transform.transform(gx, gy);
            let (x, y) = (pos.0 + tx, pos.1 + ty);
            if x >= 0 && y >= 0 && (x as u32) < width && (y as u32) < height {
                let alpha = color.alpha * f64::from(coverage.min(1.0));
                self.inner.draw_pixel((x, y), BackendColor { alpha, rgb: color.rgb })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_parses_and_has_the_glyphs_of_a_chart() {
        let font = font().expect("the embedded font parses");
        for c in "Sales (€) 0.5 −1 ≤ µ°".chars() {
            assert_ne!(font.glyph_id(c).0, 0, "{c:?} has no glyph");
        }
        let laid = layout(font, 20.0, "Revenue");
        assert!(laid.width > 40.0 && laid.width < 120.0, "{}", laid.width);
        assert!(laid.height > 10.0 && laid.height < 25.0, "{}", laid.height);
        assert_eq!(laid.glyphs.len(), 7);
    }
}
