//! What the charts share: a colour and a marker per contender, the
//! markers themselves (drawn in pixels, so that every chart kind draws
//! them alike), and the legend, drawn in a panel of its own beside the
//! plot so that it never covers a point.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::model::ContenderKind;

/// Tableau 10: distinguishable, none too light on white. Every chart
/// flexio draws takes its colours from here (`flexio cache sim` too).
pub const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Physical limits: dark, and unlike any contender's colour.
pub(super) const LIMIT_COLORS: [RGBColor; 3] = [
    RGBColor(40, 40, 40),
    RGBColor(120, 70, 20),
    RGBColor(110, 110, 110),
];

/// Marker shapes: circle, square, triangle, diamond, cross.
const SHAPES: usize = 5;

/// How a contender is marked.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    pub color: RGBColor,
    pub shape: usize,
    pub filled: bool,
}

/// The colour and marker of the `index`-th contender of a chart: colour
/// `index % 10`, shape shifted by one every ten, so that the first 50
/// (colour, shape) pairs differ.
pub(super) fn mark_for(index: usize) -> Mark {
    Mark {
        color: COLORS[index % COLORS.len()],
        shape: (index + index / COLORS.len()) % SHAPES,
        filled: true,
    }
}

/// The mark of the `index`-th limit.
pub(super) fn limit_mark(index: usize) -> Mark {
    Mark {
        color: LIMIT_COLORS[index % LIMIT_COLORS.len()],
        shape: 4,
        filled: true,
    }
}

/// How a series' line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// No line (dot plots).
    None,
    /// The engine: thin solid.
    Thin,
    /// `flexio copy` as a process: thick solid.
    Thick,
    /// A peer: dashed.
    Dashed,
    /// A limit: dotted.
    Dotted,
}

impl Line {
    /// The line of a contender kind.
    pub fn of(kind: ContenderKind) -> Self {
        match kind {
            ContenderKind::Engine => Line::Thin,
            ContenderKind::Process => Line::Thick,
            ContenderKind::Peer => Line::Dashed,
            ContenderKind::Limit => Line::Dotted,
        }
    }
}

/// A legend line: a heading, or a mark and line with a label.
#[derive(Clone, Debug)]
pub(super) enum Entry {
    Heading(String),
    Item {
        label: String,
        mark: Option<Mark>,
        line: Line,
        color: RGBColor,
    },
}

/// The heading of a kind's group in a legend.
pub(super) fn kind_heading(kind: ContenderKind) -> &'static str {
    match kind {
        ContenderKind::Engine => "engine (inside the bench process)",
        ContenderKind::Process => "flexio copy as a process",
        ContenderKind::Peer => "peers (processes)",
        ContenderKind::Limit => "physical limits",
    }
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Draws `mark` centred on pixel `at` of `area`.
pub(super) fn draw_mark(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    at: (i32, i32),
    mark: Mark,
) -> Drawn {
    let (x, y) = at;
    let color = mark.color;
    let outline = ShapeStyle::from(&color).stroke_width(2);
    let style = if mark.filled { color.filled() } else { outline };
    let closed = |points: Vec<(i32, i32)>| {
        let mut path = points.clone();
        path.push(points[0]);
        path
    };
    match mark.shape % SHAPES {
        0 => area.draw(&Circle::new(at, 5, style))?,
        1 => area.draw(&Rectangle::new([(x - 5, y - 5), (x + 5, y + 5)], style))?,
        2 => {
            let points = vec![(x, y - 6), (x + 6, y + 5), (x - 6, y + 5)];
            match mark.filled {
                true => area.draw(&Polygon::new(points, style))?,
                false => area.draw(&PathElement::new(closed(points), outline))?,
            }
        }
        3 => {
            let points = vec![(x, y - 7), (x + 6, y), (x, y + 7), (x - 6, y)];
            match mark.filled {
                true => area.draw(&Polygon::new(points, style))?,
                false => area.draw(&PathElement::new(closed(points), outline))?,
            }
        }
        _ => {
            let width = if mark.filled { 3 } else { 1 };
            let cross = ShapeStyle::from(&color).stroke_width(width);
            area.draw(&PathElement::new(
                vec![(x - 5, y - 5), (x + 5, y + 5)],
                cross,
            ))?;
            area.draw(&PathElement::new(
                vec![(x - 5, y + 5), (x + 5, y - 5)],
                cross,
            ))?;
        }
    }
    Ok(())
}

/// Draws `line` from pixel `from` to `to`.
pub(super) fn draw_line(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    from: (i32, i32),
    to: (i32, i32),
    line: Line,
    color: RGBColor,
) -> Drawn {
    let style = |width| ShapeStyle::from(&color).stroke_width(width);
    match line {
        Line::None => {}
        Line::Thin => area.draw(&PathElement::new(vec![from, to], style(2)))?,
        Line::Thick => area.draw(&PathElement::new(vec![from, to], style(4)))?,
        Line::Dashed => area.draw(&DashedPathElement::new(vec![from, to], 8, 5, style(2)))?,
        Line::Dotted => area.draw(&DashedPathElement::new(vec![from, to], 2, 4, style(2)))?,
    }
    Ok(())
}

/// The legend, top-down in `area` (a panel beside the plot), labels cut
/// to what fits.
pub(super) fn draw_legend(area: &DrawingArea<SVGBackend<'_>, Shift>, entries: &[Entry]) -> Drawn {
    let (width, _) = area.dim_in_pixel();
    // About 7 pixels per character at 13 px.
    let fits = (width.saturating_sub(52) / 7).max(8) as usize;
    let cut = |text: &str| -> String {
        if text.chars().count() <= fits {
            text.to_string()
        } else {
            let kept: String = text.chars().take(fits - 1).collect();
            format!("{kept}…")
        }
    };
    // Rows closer together (down to 14 px) when there are many.
    let (_, height) = area.dim_in_pixel();
    let step = ((height.saturating_sub(24)) / entries.len().max(1) as u32).clamp(14, 20) as i32;
    let mut y = 16;
    for entry in entries {
        match entry {
            Entry::Heading(text) => {
                y += step / 4;
                area.draw(&Text::new(
                    cut(text),
                    (4, y),
                    ("sans-serif", 13)
                        .into_font()
                        .style(FontStyle::Bold)
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
            Entry::Item {
                label,
                mark,
                line,
                color,
            } => {
                draw_line(area, (8, y), (36, y), *line, *color)?;
                if let Some(mark) = mark {
                    draw_mark(area, (22, y), *mark)?;
                }
                area.draw(&Text::new(
                    cut(label),
                    (44, y),
                    ("sans-serif", 13)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
        }
        y += step;
    }
    Ok(())
}
