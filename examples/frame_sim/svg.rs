//! SVG drawing for the plot, hand-written: panels that map data to pixels, round ticks,
//! escaped text, polylines thinned to the pixels.
//!
//! Invariant: a panel maps every value into its rectangle (a value beyond the range is drawn
//! at the edge, never outside), and all text written into the SVG is escaped. No dependency:
//! the SVG is text built here.

use std::fmt::Write as _;

/// A rectangle of the canvas that maps data to pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Panel {
    /// Left edge, px.
    pub(crate) x: f64,
    /// Top edge, px.
    pub(crate) y: f64,
    /// Width, px.
    pub(crate) w: f64,
    /// Height, px.
    pub(crate) h: f64,
    /// The data range across.
    pub(crate) x0: f64,
    /// See `x0`.
    pub(crate) x1: f64,
    /// The data range up.
    pub(crate) y0: f64,
    /// See `y0`.
    pub(crate) y1: f64,
    /// Whether the y axis is logarithmic (then `y0 > 0`).
    pub(crate) log_y: bool,
    /// Whether x is a list of categories (no ticks across: the caller labels them).
    pub(crate) categorical: bool,
}

impl Panel {
    /// The pixel column of `v`.
    pub(crate) fn px(&self, v: f64) -> f64 {
        self.x + (v - self.x0) / (self.x1 - self.x0) * self.w
    }

    /// The pixel row of `v`, clamped into the panel.
    pub(crate) fn py(&self, v: f64) -> f64 {
        let (v, a, b) = if self.log_y {
            (v.log10(), self.y0.log10(), self.y1.log10())
        } else {
            (v, self.y0, self.y1)
        };
        let f = ((v - a) / (b - a)).clamp(0.0, 1.0);
        self.y + self.h - f * self.h
    }

    /// The frame, grid, ticks and axis titles.
    pub(crate) fn axes(&self, out: &mut String, title: &str, xlabel: &str, ylabel: &str) {
        let _ = writeln!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
            self.x, self.y, self.w, self.h
        );
        let xt = if self.categorical {
            Vec::new()
        } else {
            ticks(self.x0, self.x1)
        };
        for v in xt {
            let x = self.px(v);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                self.y,
                self.y + self.h,
                self.y + self.h + 14.0,
                label(v)
            );
        }
        let yt = if self.log_y {
            log_ticks(self.y0, self.y1)
        } else {
            ticks(self.y0, self.y1)
        };
        for v in yt {
            let y = self.py(v);
            let _ = writeln!(
                out,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                self.x,
                self.x + self.w,
                self.x - 4.0,
                y + 4.0,
                label(v)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-weight="bold">{}</text><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text><text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle" fill="#555">{}</text>"##,
            self.x,
            self.y - 6.0,
            escape(title),
            self.x + self.w / 2.0,
            self.y + self.h + 30.0,
            escape(xlabel),
            self.x - 40.0,
            self.y + self.h / 2.0,
            escape(ylabel)
        );
    }

    /// A horizontal or vertical dashed reference line at `v` (a frame-time value).
    pub(crate) fn reference(&self, out: &mut String, v: f64, vertical: bool, text: &str) {
        let (x1, y1, x2, y2) = if vertical {
            let x = self.px(v);
            (x, self.y, x, self.y + self.h)
        } else {
            let y = self.py(v);
            (self.x, y, self.x + self.w, y)
        };
        let _ = writeln!(
            out,
            r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#2a2" stroke-dasharray="5,4"/><text x="{:.1}" y="{:.1}" fill="#2a2" font-size="10">{}</text>"##,
            x1 + 3.0,
            y1 + 11.0,
            escape(text)
        );
    }
}

/// Ticks at 1, 2 or 5 times a power of ten, about six over `[a, b]`.
pub(crate) fn ticks(a: f64, b: f64) -> Vec<f64> {
    let raw = (b - a) / 6.0;
    if !(raw > 0.0 && raw.is_finite()) {
        return vec![a];
    }
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p);
    let mut v = (a / step).ceil() * step;
    let mut out = Vec::new();
    while v <= b + step * 1e-9 {
        out.push(v);
        v += step;
    }
    out
}

/// Powers of ten within `[a, b]`.
pub(crate) fn log_ticks(a: f64, b: f64) -> Vec<f64> {
    let (lo, hi) = (a.log10().ceil() as i32, (b.log10() + 1e-9).floor() as i32);
    (lo..=hi).map(|e| 10f64.powi(e)).collect()
}

/// A number as a tick label: short, no trailing zeros.
pub(crate) fn label(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.0e}")
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Text made safe for SVG.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v`.
pub(crate) fn nice_up(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// Points of a polyline; with many more points than pixels, each pixel column keeps its
/// first, lowest and highest value, so a single slow frame still shows.
pub(crate) fn polyline(points: &[(f64, f64)], p: &Panel, columns: usize) -> String {
    let mut s = String::new();
    let mut push = |x: f64, y: f64| {
        let _ = write!(s, "{:.1},{:.1} ", p.px(x), p.py(y));
    };
    if points.len() <= columns * 2 {
        for &(x, y) in points {
            push(x, y);
        }
        return s;
    }
    let per = points.len().div_ceil(columns);
    for chunk in points.chunks(per) {
        let (lo, hi) = chunk
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &(_, y)| {
                (l.min(y), h.max(y))
            });
        let x = chunk[0].0;
        push(x, chunk[0].1);
        push(x, lo);
        push(x, hi);
    }
    s
}

/// A filled rectangle between data corners `(xa, ya)` and `(xb, yb)` of `p`.
pub(crate) fn bar(
    out: &mut String,
    p: &Panel,
    [xa, ya, xb, yb]: [f64; 4],
    fill: &str,
    stroke: &str,
) {
    let (l, r) = (p.px(xa).min(p.px(xb)), p.px(xa).max(p.px(xb)));
    let (t, b) = (p.py(ya).min(p.py(yb)), p.py(ya).max(p.py(yb)));
    let _ = writeln!(
        out,
        r##"<rect x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{stroke}"/>"##,
        r - l,
        b - t
    );
}

/// `text` at pixel `(x, y)`, anchored `anchor` (start, middle, end).
pub(crate) fn text(out: &mut String, x: f64, y: f64, anchor: &str, text: &str) {
    let _ = writeln!(
        out,
        r##"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}">{}</text>"##,
        escape(text)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            ticks(0.0, 30.0),
            vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
        );
        let lt = log_ticks(0.001, 1.0);
        assert_eq!(lt.len(), 4, "{lt:?}");
        assert!((lt[0] - 0.001).abs() < 1e-12 && lt[3] == 1.0, "{lt:?}");
        assert_eq!(nice_up(33.4), 50.0);
        assert_eq!(nice_up(20.0), 20.0);
        assert_eq!(label(2.5), "2.5");
        assert_eq!(label(0.001), "1e-3");
    }
}
