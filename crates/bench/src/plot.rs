//! PNG line charts shaped like the papers' figures. The font is compiled in, so plotting needs
//! nothing from the machine.

use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Adds a point to the series called `name`, creating it if needed (series keep first-use
/// order, which is the legend's order).
pub fn add_point(series: &mut Vec<Series>, name: &str, point: (f64, f64)) {
    match series.iter_mut().find(|s| s.name == name) {
        Some(s) => s.points.push(point),
        None => series.push(Series {
            name: name.to_string(),
            points: vec![point],
        }),
    }
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Registration fails only for unparsable bytes; the bundled font parses.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
];

/// A moment worth seeing on a timeline (a server killed, a server started): a dashed vertical
/// line in the colour of the series it belongs to, labelled at the top.
pub struct Mark {
    pub x: f64,
    pub label: String,
    /// Index of the series whose colour the line takes.
    pub series: usize,
}

/// Draws `series` as lines with markers; axes start at zero.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> anyhow::Result<()> {
    line_chart_with_marks(path, title, x_desc, y_desc, series, &[])
}

/// [`line_chart`] with vertical marks.
pub fn line_chart_with_marks(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    marks: &[Mark],
) -> anyhow::Result<()> {
    register_font();
    let max_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.1;
    let root = BitMapBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..max_x, 0f64..max_y)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    draw_marks(&mut chart, marks, max_y)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Dashed vertical lines, labels staggered so that nearby marks stay readable.
fn draw_marks<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    marks: &[Mark],
    max_y: f64,
) -> anyhow::Result<()> {
    for (i, mark) in marks.iter().enumerate() {
        let color = COLORS[mark.series % COLORS.len()];
        let dashes = 40;
        let segments = (0..dashes).step_by(2).map(|k| {
            let y0 = max_y * f64::from(k) / f64::from(dashes);
            let y1 = max_y * f64::from(k + 1) / f64::from(dashes);
            PathElement::new(vec![(mark.x, y0), (mark.x, y1)], color.stroke_width(1))
        });
        chart
            .draw_series(segments)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let y = max_y * (0.98 - 0.04 * (i % 8) as f64);
        chart
            .draw_series(std::iter::once(Text::new(
                mark.label.clone(),
                (mark.x, y),
                ("sans-serif", 13).into_font().color(&color),
            )))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}
