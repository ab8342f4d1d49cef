//! The frame-time plot, hand-written SVG: the arms side by side over the run, then their
//! distributions overlaid (the CDF, and the tail on a log scale).
//!
//! Invariant: every panel of one kind shares its axes (the same frame-time range in every
//! panel), so arms compare by eye; a frame beyond the range is never dropped, it is drawn at
//! the edge and counted in the panel. No dependency: the SVG is text built here.

use crate::arms::Arm;
use crate::figures::quantile;
use std::fmt::Write as _;

/// One arm's frame times (ms), by pair.
pub struct Series<'a> {
    /// The arm.
    pub arm: Arm,
    /// Its measured frames, one slice a pair, in pair order.
    pub pairs: Vec<&'a [f64]>,
}

fn color(arm: Arm) -> &'static str {
    match arm {
        Arm::Seeds => "#c0392b",
        Arm::Auto => "#e67e22",
        Arm::Reactor => "#2471a3",
        Arm::Precise => "#7d3c98",
        Arm::Stretch0 => "#17a589",
    }
}

const W: f64 = 1200.0;
const TOP_H: f64 = 250.0;
const BOTTOM_H: f64 = 280.0;
const MARGIN: f64 = 55.0;
const GAP: f64 = 50.0;
const TITLE_H: f64 = 40.0;

/// A rectangle of the canvas that maps data to pixels.
struct Panel {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    log_y: bool,
}

impl Panel {
    fn px(&self, v: f64) -> f64 {
        self.x + (v - self.x0) / (self.x1 - self.x0) * self.w
    }

    fn py(&self, v: f64) -> f64 {
        let (v, a, b) = if self.log_y {
            (v.log10(), self.y0.log10(), self.y1.log10())
        } else {
            (v, self.y0, self.y1)
        };
        let f = ((v - a) / (b - a)).clamp(0.0, 1.0);
        self.y + self.h - f * self.h
    }

    /// The frame, grid, ticks and axis titles.
    fn axes(&self, out: &mut String, title: &str, xlabel: &str, ylabel: &str) {
        let _ = writeln!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
            self.x, self.y, self.w, self.h
        );
        for v in ticks(self.x0, self.x1) {
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
    fn reference(&self, out: &mut String, v: f64, vertical: bool, text: &str) {
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
fn ticks(a: f64, b: f64) -> Vec<f64> {
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
fn log_ticks(a: f64, b: f64) -> Vec<f64> {
    let (lo, hi) = (a.log10().ceil() as i32, (b.log10() + 1e-9).floor() as i32);
    (lo..=hi).map(|e| 10f64.powi(e)).collect()
}

fn label(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.0e}")
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The smallest 1, 2 or 5 times a power of ten at or above `v`.
fn nice_up(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// Points of a polyline; with many more points than pixels, each pixel column keeps its
/// first, lowest and highest value, so a single slow frame still shows.
fn polyline(points: &[(f64, f64)], p: &Panel, columns: usize) -> String {
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

/// The whole SVG: `title` on top, one time panel an arm, the CDF and the tail below.
/// `cap_ms` draws the frame cap's period as a reference.
pub fn svg(title: &str, series: &[Series], cap_ms: Option<f64>) -> String {
    let mut all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pairs.iter().flat_map(|p| p.iter().copied()))
        .collect();
    all.sort_by(f64::total_cmp);
    let lo = quantile(&all, 0.001).min(cap_ms.unwrap_or(f64::INFINITY));
    let hi_data = quantile(&all, 0.999).max(quantile(&all, 0.99) * 1.3);
    let y_max = nice_up(hi_data.max(cap_ms.map_or(0.0, |c| c * 1.5)).max(1.0));
    let x_min = if lo.is_finite() {
        (lo * 0.9 / 5.0).floor() * 5.0
    } else {
        0.0
    };

    let n = series.len().max(1) as f64;
    let h = TITLE_H + TOP_H + BOTTOM_H + 2.0 * MARGIN + 70.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="{MARGIN}" y="24" font-size="15" font-weight="bold">{}</text>"##,
        escape(title)
    );

    // Top row: one panel an arm, frame time against frame, pairs one after another.
    let pw = (W - 2.0 * MARGIN - (n - 1.0) * GAP) / n;
    for (k, s) in series.iter().enumerate() {
        let total: usize = s.pairs.iter().map(|p| p.len()).sum();
        let p = Panel {
            x: MARGIN + k as f64 * (pw + GAP),
            y: TITLE_H + 20.0,
            w: pw,
            h: TOP_H,
            x0: 0.0,
            x1: total.max(1) as f64,
            y0: 0.0,
            y1: y_max,
            log_y: false,
        };
        p.axes(
            &mut out,
            &format!("{}: frame time over the run", s.arm.name()),
            "frame (pairs one after another)",
            "ms",
        );
        if let Some(c) = cap_ms {
            p.reference(&mut out, c, false, &format!("cap {c:.2} ms"));
        }
        let mut start = 0usize;
        let mut over = 0usize;
        for (i, pair) in s.pairs.iter().enumerate() {
            if i > 0 {
                let x = p.px(start as f64);
                let _ = writeln!(
                    out,
                    r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#bbb" stroke-dasharray="2,3"/>"##,
                    p.y,
                    p.y + p.h
                );
            }
            let pts: Vec<(f64, f64)> = pair
                .iter()
                .enumerate()
                .map(|(j, &ms)| ((start + j) as f64 + 0.5, ms.min(y_max)))
                .collect();
            over += pair.iter().filter(|&&ms| ms > y_max).count();
            let _ = writeln!(
                out,
                r##"<polyline fill="none" stroke="{}" stroke-width="1" points="{}"/>"##,
                color(s.arm),
                polyline(&pts, &p, pw as usize)
            );
            start += pair.len();
        }
        if over > 0 {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#c00">{over} frame(s) over {} ms, drawn at the top</text>"##,
                p.x + p.w - 4.0,
                p.y + 12.0,
                label(y_max)
            );
        }
    }

    // Bottom row: the CDF and the tail, arms overlaid.
    let by = TITLE_H + 20.0 + TOP_H + MARGIN + 20.0;
    let bw = (W - 2.0 * MARGIN - GAP - 40.0) / 2.0;
    let pooled: Vec<Vec<f64>> = series
        .iter()
        .map(|s| {
            let mut v: Vec<f64> = s.pairs.iter().flat_map(|p| p.iter().copied()).collect();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let most = pooled.iter().map(Vec::len).max().unwrap_or(1).max(1) as f64;
    let cdf = Panel {
        x: MARGIN,
        y: by,
        w: bw,
        h: BOTTOM_H,
        x0: x_min,
        x1: y_max,
        y0: 0.0,
        y1: 1.0,
        log_y: false,
    };
    let tail = Panel {
        x: MARGIN + bw + GAP + 40.0,
        y1: 1.0,
        y0: 10f64.powf((1.0 / most).log10().floor()),
        log_y: true,
        ..cdf
    };
    cdf.axes(
        &mut out,
        "distribution (CDF, all pairs)",
        "frame time, ms",
        "fraction of frames <= x",
    );
    tail.axes(
        &mut out,
        "tail: fraction of frames slower than x",
        "frame time, ms",
        "fraction > x (log)",
    );
    if let Some(c) = cap_ms {
        cdf.reference(&mut out, c, true, "cap");
        tail.reference(&mut out, c, true, "cap");
    }
    for (s, v) in series.iter().zip(&pooled) {
        let len = v.len() as f64;
        let cdf_pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .flat_map(|(i, &ms)| {
                let x = ms.clamp(x_min, y_max);
                [(x, i as f64 / len), (x, (i + 1) as f64 / len)]
            })
            .collect();
        let tail_pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .filter(|(i, _)| i + 1 < v.len())
            .map(|(i, &ms)| (ms.clamp(x_min, y_max), (len - (i + 1) as f64) / len))
            .collect();
        for (panel, pts) in [(&cdf, cdf_pts), (&tail, tail_pts)] {
            let _ = writeln!(
                out,
                r##"<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"/>"##,
                color(s.arm),
                polyline(&pts, panel, panel.w as usize)
            );
        }
    }
    // Legend, in the CDF panel's lower right.
    for (k, (s, v)) in series.iter().zip(&pooled).enumerate() {
        let x = cdf.x + cdf.w - 235.0;
        let y = cdf.y + cdf.h - 14.0 - 16.0 * (series.len() - 1 - k) as f64;
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="14" height="4" fill="{}"/><text x="{:.1}" y="{:.1}">{} p50 {} p99 {} ms (pooled)</text>"##,
            y - 5.0,
            color(s.arm),
            x + 20.0,
            y,
            s.arm.name(),
            label((quantile(v, 0.5) * 100.0).round() / 100.0),
            label((quantile(v, 0.99) * 100.0).round() / 100.0),
        );
    }
    out.push_str("</svg>\n");
    out
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
