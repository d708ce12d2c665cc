//! PNG export of the figures (`--format png`): every figure of the fixtures becomes a valid
//! PNG at twice the SVG's size, with drawn content, and text is drawn with the system's
//! fonts. Skipped (with a message) on a host without any font.

use resvg::tiny_skia::Pixmap;
use rtlab_report::figures::{all_figures, table_figures, Figure};
use rtlab_report::png::{PngRenderer, SCALE};
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportSet, SourcedRun};
use std::path::Path;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

fn renderer() -> Option<PngRenderer> {
    match PngRenderer::with_system_fonts() {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn fixture_set(names: &[&str]) -> ReportSet {
    let runs = names
        .iter()
        .map(|name| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
            let run = RunResult::load(&path).expect("the fixture loads");
            SourcedRun { source: path.display().to_string(), run }
        })
        .collect();
    ReportSet { runs, verdict: None }
}

/// `width="960" height="420"` of the figure's opening tag.
fn svg_size(svg: &str) -> (u32, u32) {
    let attribute = |name: &str| -> u32 {
        let start = svg.find(&format!(" {name}=\"")).expect("sized") + name.len() + 3;
        svg[start..].split('"').next().unwrap().parse().expect("a number")
    };
    (attribute("width"), attribute("height"))
}

/// Distinct colours of `pixmap`, counted up to `enough` (sorting millions of pixels takes
/// long in a debug build).
fn distinct_colours(pixmap: &Pixmap, enough: usize) -> usize {
    let mut colours: Vec<[u8; 4]> = Vec::new();
    for p in pixmap.pixels() {
        let colour = [p.red(), p.green(), p.blue(), p.alpha()];
        if !colours.contains(&colour) {
            colours.push(colour);
            if colours.len() == enough {
                break;
            }
        }
    }
    colours.len()
}

#[test]
fn every_figure_of_the_fixtures_is_a_png_with_content() {
    let Some(renderer) = renderer() else { return };
    // Every kind of figure: the distribution figures of one fixture, the charts beside the
    // jitter and sweep tables of the other (rasterising takes about 0.1 s a figure).
    let distribution = all_figures(&fixture_set(&["simulated-two-scenarios.run.json"])).expect("figures");
    let per_step: Vec<Figure> = table_figures(&fixture_set(&["derived-probes.run.json"]))
        .expect("figures")
        .into_iter()
        .map(|t| t.figure)
        .collect();
    assert!(distribution.len() >= 8 && per_step.len() == 2, "{} and {} figures", distribution.len(), per_step.len());
    for figure in distribution.iter().chain(&per_step) {
        let png = renderer.render(&figure.svg).unwrap_or_else(|e| panic!("{}: {e}", figure.id));
        assert_eq!(png[..8], PNG_SIGNATURE, "{}", figure.id);
        assert!(png.len() > 10_000, "{}: only {} bytes", figure.id, png.len());
        let pixmap = Pixmap::decode_png(&png).expect("decodes");
        let (width, height) = svg_size(&figure.svg);
        assert_eq!(
            (pixmap.width(), pixmap.height()),
            ((width as f32 * SCALE) as u32, (height as f32 * SCALE) as u32),
            "{}",
            figure.id
        );
        assert!(pixmap.pixels().iter().all(|p| p.alpha() == 255), "{}: opaque background", figure.id);
        // Axes, text and curves in several colours with anti-aliasing: far more than a
        // handful of colours.
        let colours = distinct_colours(&pixmap, 20);
        assert_eq!(colours, 20, "{}: only {colours} colours", figure.id);
    }
}

#[test]
fn the_jitter_and_sweep_charts_are_among_the_figures() {
    let figures = all_figures(&fixture_set(&["derived-probes.run.json"])).expect("figures");
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    assert!(ids.iter().any(|id| id.starts_with("fig-per-period-")), "{ids:?}");
    assert!(ids.iter().any(|id| id.starts_with("fig-per-rate-")), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "ids are unique (they become file names)");
}

#[test]
fn text_is_drawn_with_a_system_font() {
    let Some(renderer) = renderer() else { return };
    let text = "<svg width=\"200\" height=\"40\"><text x=\"4\" y=\"30\" font-family=\"sans-serif\" font-size=\"24\" \
                fill=\"#000000\">latency (µs)</text></svg>";
    let pixmap = Pixmap::decode_png(&renderer.render(text).expect("renders")).expect("decodes");
    let dark = pixmap.pixels().iter().filter(|p| p.red() < 100).count();
    assert!(dark > 200, "{} dark pixels: the text was not drawn with {}", dark, renderer.family());
}
