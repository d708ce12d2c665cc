//! Colours: one per configuration, the same in every figure (and in the HTML legends), so a
//! reader follows one configuration from figure to figure.

use plotters::style::RGBColor;

/// Colour-blind-safe colours first (Okabe and Ito), then further distinct ones; dark enough
/// to read as thin lines on white. Reused cyclically past ten configurations.
const CONFIGURATIONS: [RGBColor; 10] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x8C, 0x56, 0x4B), // brown
    RGBColor(0x7F, 0x7F, 0x7F), // grey
    RGBColor(0x6A, 0x3D, 0x9A), // violet
    RGBColor(0x9A, 0x9A, 0x1F), // olive
];

/// Lines of the CPUs inside one configuration's panel (they are not configurations, so
/// they use their own, darker set).
const CPUS: [RGBColor; 8] = [
    RGBColor(0x11, 0x11, 0x11), // black
    RGBColor(0xC5, 0x1B, 0x7D), // magenta
    RGBColor(0x01, 0x66, 0x5E), // dark teal
    RGBColor(0xB8, 0x86, 0x0B), // dark gold
    RGBColor(0x31, 0x36, 0x95), // navy
    RGBColor(0xA5, 0x00, 0x26), // crimson
    RGBColor(0x4D, 0x92, 0x21), // leaf green
    RGBColor(0x99, 0x99, 0x99), // light grey
];

/// Requirement bounds, axes and text.
pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub const GRID: RGBColor = RGBColor(0xDD, 0xDD, 0xDD);
pub const GRID_LIGHT: RGBColor = RGBColor(0xF0, 0xF0, 0xF0);

/// The colour of configuration number `index` (its position in `ReportSet::configurations`).
pub fn configuration(index: usize) -> RGBColor {
    CONFIGURATIONS[index % CONFIGURATIONS.len()]
}

/// The colour of the `index`-th CPU line of a per-CPU panel.
pub fn cpu(index: usize) -> RGBColor {
    CPUS[index % CPUS.len()]
}

/// "#0072B2", for CSS.
pub fn css(colour: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2)
}
