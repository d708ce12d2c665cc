//! The report's figures as PNG images (`rtlab report --format png`), for places that take
//! no SVG: slides, chat, issue trackers.
//!
//! The figures are the same SVG the HTML report shows ([`crate::figures::all_figures`]),
//! rasterised by resvg at twice their size on a white background. The SVG leaves text
//! layout to its viewer, so here the system's fonts do it: without any font the images
//! would have no text at all, and [`PngRenderer::with_system_fonts`] refuses instead.

use crate::ReportError;
use resvg::tiny_skia::{Color, Pixmap, Transform};
use resvg::usvg::{self, fontdb};
use std::sync::Arc;

/// Pixels per SVG unit: a 960-unit-wide figure becomes 1920 pixels, readable when zoomed.
pub const SCALE: f32 = 2.0;

/// Sans-serif families preferred for the figures' text, in order; any other installed
/// family is the last resort.
const SANS_SERIF: [&str; 5] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica"];

const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

/// Rasterises figures with the fonts found on the system (loaded once).
pub struct PngRenderer {
    fonts: Arc<fontdb::Database>,
    /// The family that `sans-serif` (the figures' font) resolves to.
    family: String,
}

impl PngRenderer {
    /// Loads the system's fonts (/usr/share/fonts, ~/.fonts, fontconfig's directories).
    /// Fails when none is found, naming the package to install.
    pub fn with_system_fonts() -> Result<Self, ReportError> {
        let mut fonts = fontdb::Database::new();
        fonts.load_system_fonts();
        Self::with_fonts(fonts)
    }

    /// With the fonts of `fonts` only (tests, or fonts shipped elsewhere).
    pub fn with_fonts(mut fonts: fontdb::Database) -> Result<Self, ReportError> {
        let installed: Vec<&str> =
            fonts.faces().flat_map(|face| face.families.iter().map(|(name, _)| name.as_str())).collect();
        let family = SANS_SERIF
            .iter()
            .find(|wanted| installed.contains(wanted))
            .map(|f| f.to_string())
            .or_else(|| installed.first().map(|f| f.to_string()))
            .ok_or_else(|| {
                ReportError::Environment(
                    "no font found in the system's font directories (/usr/share/fonts, /usr/local/share/fonts, \
                     ~/.fonts): the PNG figures would have no text; install one (Debian/Ubuntu: apt-get install \
                     fonts-dejavu-core)"
                        .into(),
                )
            })?;
        fonts.set_sans_serif_family(family.clone());
        Ok(PngRenderer { fonts: Arc::new(fonts), family })
    }

    /// The font family the figures' text is set in.
    pub fn family(&self) -> &str {
        &self.family
    }

    /// One `<svg>` figure as a PNG file's bytes.
    pub fn render(&self, svg: &str) -> Result<Vec<u8>, ReportError> {
        let options = usvg::Options {
            font_family: self.family.clone(),
            fontdb: Arc::clone(&self.fonts),
            ..usvg::Options::default()
        };
        let tree = usvg::Tree::from_str(&with_namespace(svg), &options)
            .map_err(|e| ReportError::Encode(format!("figure SVG: {e}")))?;
        let size = tree.size().to_int_size().scale_by(SCALE).ok_or_else(|| {
            ReportError::Encode(format!("figure of {}x{} cannot be scaled", tree.size().width(), tree.size().height()))
        })?;
        let mut pixmap = Pixmap::new(size.width(), size.height())
            .ok_or_else(|| ReportError::Encode(format!("figure of {}x{} pixels", size.width(), size.height())))?;
        // A figure's own background may be transparent: PNG viewers would show it black.
        pixmap.fill(Color::WHITE);
        resvg::render(&tree, Transform::from_scale(SCALE, SCALE), &mut pixmap.as_mut());
        pixmap.encode_png().map_err(|e| ReportError::Encode(format!("PNG: {e}")))
    }
}

/// The figures are written for inline HTML, without the SVG namespace that a standalone
/// SVG parser needs to recognise the elements.
fn with_namespace(svg: &str) -> std::borrow::Cow<'_, str> {
    let opening = svg.find('>').map(|end| &svg[..end]).unwrap_or(svg);
    if opening.contains("xmlns=") {
        return svg.into();
    }
    svg.replacen("<svg", &format!("<svg xmlns=\"{SVG_NAMESPACE}\""), 1).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_is_added_once() {
        let inline = "<svg viewBox=\"0 0 10 10\"><rect width=\"10\" height=\"10\"/></svg>";
        let standalone = with_namespace(inline);
        assert!(standalone.starts_with(&format!("<svg xmlns=\"{SVG_NAMESPACE}\" viewBox")));
        assert_eq!(with_namespace(&standalone), standalone);
    }

    #[test]
    fn without_fonts_it_refuses_and_names_the_package() {
        let error = PngRenderer::with_fonts(fontdb::Database::new()).err().expect("no fonts is an error");
        assert!(error.to_string().contains("fonts-dejavu-core"), "{error}");
    }

    #[test]
    fn a_shape_is_drawn_at_twice_its_size_on_white() {
        // No text: works without fonts, but the renderer needs one to exist.
        let Ok(renderer) = PngRenderer::with_system_fonts() else {
            eprintln!("skipped: no system font");
            return;
        };
        let svg =
            "<svg width=\"10\" height=\"8\"><rect x=\"0\" y=\"0\" width=\"5\" height=\"8\" fill=\"#ff0000\"/></svg>";
        let png = renderer.render(svg).expect("renders");
        let pixmap = Pixmap::decode_png(&png).expect("valid PNG");
        assert_eq!((pixmap.width(), pixmap.height()), (20, 16));
        let at = |x: u32, y: u32| pixmap.pixel(x, y).expect("inside");
        assert_eq!((at(2, 2).red(), at(2, 2).green(), at(2, 2).alpha()), (255, 0, 255));
        assert_eq!((at(18, 2).red(), at(18, 2).green(), at(18, 2).blue()), (255, 255, 255));
    }
}
