//! The picture of a simulation: request tokens per turn, and dollars so far, one line per
//! policy, as an SVG file (no browser, no fonts to install: plotters writes SVG text).

use std::path::Path;

use plotters::prelude::*;
use tightfit::simulate::PolicyRow;

/// Draws two charts, one above the other, into `path`.
pub fn draw(path: &Path, rows: &[PolicyRow], budget: usize) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (1100, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let (top, bottom) = root.split_vertically(450);
    let turns = rows.iter().map(|r| r.per_turn.len()).max().unwrap_or(1).max(2);
    let max_tokens =
        rows.iter().flat_map(|r| r.per_turn.iter().map(|(t, _)| *t)).max().unwrap_or(1).max(budget);
    let max_dollars = rows.iter().map(|r| r.dollars).fold(0.0f64, f64::max).max(1e-6);

    let mut tokens = ChartBuilder::on(&top)
        .caption("request tokens per turn", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0..turns, 0..(max_tokens + max_tokens / 20))
        .map_err(plot_error)?;
    tokens.configure_mesh().x_desc("turn").y_desc("tokens").draw().map_err(plot_error)?;
    tokens
        .draw_series(LineSeries::new([(0, budget), (turns, budget)], BLACK.mix(0.4)))
        .map_err(plot_error)?
        .label("budget")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.mix(0.4)));
    for (i, row) in rows.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        tokens
            .draw_series(LineSeries::new(row.per_turn.iter().enumerate().map(|(t, (k, _))| (t, *k)), color))
            .map_err(plot_error)?
            .label(row.policy.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    tokens
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(plot_error)?;

    let mut dollars = ChartBuilder::on(&bottom)
        .caption("input dollars so far", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0..turns, 0.0..max_dollars * 1.05)
        .map_err(plot_error)?;
    dollars.configure_mesh().x_desc("turn").y_desc("USD").draw().map_err(plot_error)?;
    for (i, row) in rows.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        dollars
            .draw_series(LineSeries::new(row.per_turn.iter().enumerate().map(|(t, (_, d))| (t, *d)), color))
            .map_err(plot_error)?;
    }
    root.present().map_err(plot_error)?;
    Ok(())
}

fn plot_error<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the chart failed: {e}")
}
