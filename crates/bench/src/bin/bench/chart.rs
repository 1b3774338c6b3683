//! The latency chart, drawn with plotters' SVG backend: a panel per page, a row per side, a
//! dot per request for the first body byte (hollow) and the last byte (filled), so the spread
//! shows, and a bar at each median.
//!
//! plotters is built without fonts (`default-features = false`): the SVG backend writes text
//! as `<text>` for the viewer to render, and plotters only estimates its size for layout.

use std::io;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::stats::median;

/// One row of a latency chart: a side and its requests.
#[derive(Debug, Clone)]
pub struct ChartRow {
    /// Label at the left.
    pub label: String,
    /// Colour of the label, the dots and the median bars.
    pub color: RGBColor,
    /// `(first body byte, last byte)` per request, in ms.
    pub points: Vec<(f64, f64)>,
}

/// One panel of a latency chart: a page, with a row per side on a shared axis.
#[derive(Debug, Clone)]
pub struct ChartPanel {
    /// The page.
    pub title: String,
    /// Its rows.
    pub rows: Vec<ChartRow>,
}

/// Grey for cold requests and the direct origin.
pub const GREY: RGBColor = RGBColor(0x77, 0x77, 0x77);
/// The streaming build, or the remote target.
pub const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
/// The buffered build, or the remote baseline.
pub const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);

const WIDTH: u32 = 900;
/// Room for the row labels.
const LEFT: u32 = 150;
const RIGHT: u32 = 40;
/// Vertical room per row.
const ROW: u32 = 20;

fn panel_height(p: &ChartPanel) -> u32 {
    50 + ROW * p.rows.len() as u32
}

/// Text of `px` pixels: plotters writes an SVG font size of the given size / 1.24.
fn font(px: f64) -> TextStyle<'static> {
    ("sans-serif", px * 1.24).into_font().into()
}

fn bold(px: f64) -> TextStyle<'static> {
    let font = ("sans-serif", px * 1.24).into_font();
    font.style(FontStyle::Bold).into()
}

/// Writes a latency chart: a panel per page, a row per side, a dot per request for the first
/// body byte (hollow) and the last byte (filled), and a bar at each median.
///
/// # Errors
/// If the file cannot be written (or plotters fails to draw).
pub fn write_chart(path: &Path, title: &str, panels: &[ChartPanel]) -> io::Result<()> {
    let height = 50 + panels.iter().map(panel_height).sum::<u32>();
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    let drawn = draw(&root, title, panels).and_then(|()| root.present());
    drawn.map_err(|e| io::Error::other(format!("{}: {e}", path.display())))
}

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[ChartPanel],
) -> Drawn<DB> {
    root.fill(&WHITE)?;
    root.draw(&Text::new(title.to_owned(), (10, 8), bold(14.0)))?;
    let (_, mut rest) = root.split_vertically(40);
    for panel in panels {
        let (area, below) = rest.split_vertically(panel_height(panel));
        area.draw(&Text::new(panel.title.clone(), (10, 4), bold(12.0)))?;
        draw_panel(&area, panel)?;
        rest = below;
    }
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &ChartPanel) -> Drawn<DB> {
    let max = (panel.rows.iter())
        .flat_map(|r| r.points.iter().map(|(_, last)| *last))
        .fold(0.0f64, f64::max)
        .max(0.001)
        * 1.05;
    // Row 0 at the top: row i sits at y = n - 1 - i.
    let n = panel.rows.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .margin_top(20)
        .margin_right(RIGHT)
        .x_label_area_size(20)
        .y_label_area_size(LEFT)
        .build_cartesian_2d(0.0..max, -0.5..n - 0.5)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_y_axis()
        .x_labels(5)
        .x_label_formatter(&|v| format!("{v:.1}"))
        .axis_style(RGBColor(0x99, 0x99, 0x99))
        .label_style(font(12.0).color(&RGBColor(0x55, 0x55, 0x55)))
        .draw()?;
    let (base_x, base_y) = area.get_base_pixel();
    for (i, row) in panel.rows.iter().enumerate() {
        let (y, color) = (n - 1.0 - i as f64, row.color);
        // The label, in the row's colour, left of the plot at the row's height.
        let (_, row_y) = chart.backend_coord(&(0.0, y));
        let label = font(12.0)
            .color(&color)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(
            row.label.clone(),
            (20 - base_x, row_y - base_y),
            label,
        ))?;
        let points = row.points.iter();
        chart.draw_series(
            points
                .clone()
                .map(|&(first, _)| Circle::new((first, y), 3, color.stroke_width(1))),
        )?;
        chart.draw_series(
            points.map(|&(_, last)| Circle::new((last, y), 3, color.mix(0.6).filled())),
        )?;
        if row.points.is_empty() {
            continue;
        }
        let medians = [
            median(row.points.iter().map(|p| p.0).collect()),
            median(row.points.iter().map(|p| p.1).collect()),
        ];
        chart.draw_series(medians.map(|m| {
            PathElement::new(vec![(m, y - 0.33), (m, y + 0.33)], color.stroke_width(2))
        }))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_is_svg_with_every_label_and_a_dot_per_request() {
        let dir = std::env::temp_dir().join(format!("ts-bench-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.svg");
        let row = |label: &str, color, points: Vec<(f64, f64)>| ChartRow {
            label: label.into(),
            color,
            points,
        };
        let panels = [
            ChartPanel {
                title: "/news/article.html?a=1&b=<2>".into(),
                rows: vec![
                    row("direct", GREY, vec![(1.0, 2.0), (1.5, 2.5)]),
                    row("streaming", BLUE, vec![(2.0, 9.0)]),
                ],
            },
            ChartPanel {
                title: "empty".into(),
                rows: vec![row("buffered", RED, Vec::new())],
            },
        ];
        write_chart(&path, "Latency & more", &panels).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        for text in [
            "Latency &amp; more",
            "/news/article.html?a=1&amp;b=&lt;2&gt;",
            ">\ndirect\n<",
            ">\nstreaming\n<",
            ">\nbuffered\n<",
            ">\nempty\n<",
        ] {
            assert!(svg.contains(text), "{text} missing from {svg}");
        }
        // Three requests, two dots each.
        assert_eq!(svg.matches("<circle").count(), 6, "{svg}");
        assert!(svg.contains("#1F77B4") || svg.contains("#1f77b4"), "{svg}");
    }
}
