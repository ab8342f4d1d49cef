//! The plot, one SVG a cell: the arms' frame times side by side over the run, their
//! distributions overlaid (the CDF, and the tail on a log scale), then where the CPU of a
//! frame went by thread group and how long work waited to be picked up.
//!
//! Invariant: every panel of one kind shares its axes (the same frame-time range in every
//! time panel and distribution, [`frame_range`], one scale for every arm's bar), so arms
//! compare by eye; a frame beyond the range is never dropped, it is drawn at the edge and
//! counted in the panel; the bars and the legend's p50 and p99 are the table's medians, read
//! from the same summary.

use crate::arms::Arm;
use crate::figures::quantile;
use crate::group::Group;
use crate::report::Context;
use crate::svg::{bar, escape, label, nice_up, polyline, text, ticks, Panel};
use std::fmt::Write as _;

/// One arm's frame times (ms), by pair.
struct Series<'a> {
    arm: Arm,
    pairs: Vec<&'a [f64]>,
}

fn color(arm: Arm) -> &'static str {
    match arm {
        Arm::Seeds => "#c0392b",
        Arm::Auto => "#e67e22",
        Arm::Reactor => "#2471a3",
        Arm::Precise => "#7d3c98",
        Arm::Stretch0 => "#17a589",
        Arm::NoClaim => "#b9770e",
        Arm::Grace => "#5d6d7e",
        Arm::NoSlice => "#a04000",
        Arm::NoDefer => "#1e8449",
        Arm::Eager => "#6c3483",
    }
}

fn group_color(g: Option<Group>) -> &'static str {
    match g {
        Some(Group::Main) => "#1f77b4",
        Some(Group::Presentation) => "#9467bd",
        Some(Group::Executors) => "#2ca02c",
        Some(Group::Workers) => "#d62728",
        Some(Group::Reactor) => "#ff7f0e",
        Some(Group::Renderer) => "#8c564b",
        Some(Group::GpuSubmit) => "#e377c2",
        Some(Group::Audio) => "#17becf",
        None => "#bbbbbb",
    }
}

const W: f64 = 1200.0;
const TOP_H: f64 = 250.0;
const BOTTOM_H: f64 = 280.0;
const BARS_H: f64 = 260.0;
const MARGIN: f64 = 55.0;
const GAP: f64 = 50.0;
const TITLE_H: f64 = 40.0;

/// The whole SVG of a cell: a title, one time panel an arm, the CDF and the tail, then the
/// CPU a frame by group and the pickup latencies. The frame cap's period is drawn as a
/// reference where there is one.
pub(crate) fn svg(ctx: &Context) -> String {
    let cell = ctx.cell;
    let series: Vec<Series> = cell
        .spec
        .arms
        .iter()
        .map(|&arm| Series {
            arm,
            pairs: cell.frames_of(arm),
        })
        .collect();
    let series = series.as_slice();
    let fps = cell.spec.load.fps;
    let cap_ms = (fps > 0).then(|| 1e3 / f64::from(fps));
    let title = format!(
        "frame_sim, scene {}: {} frames x {} pair{}, {} logical processors",
        ctx.scene,
        cell.spec.frames,
        cell.spec.pairs,
        if cell.spec.pairs == 1 { "" } else { "s" },
        cell.processors.map_or("?".to_string(), |n| n.to_string())
    );
    let mut all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.pairs.iter().flat_map(|p| p.iter().copied()))
        .collect();
    all.sort_by(f64::total_cmp);
    let (x_min, y_max) = frame_range(&all, cap_ms);

    let n = series.len().max(1) as f64;
    let h = TITLE_H + TOP_H + BOTTOM_H + BARS_H + 3.0 * MARGIN + 110.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="{MARGIN}" y="24" font-size="15" font-weight="bold">{}</text>"##,
        escape(&title)
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
            y0: x_min,
            y1: y_max,
            log_y: false,
            categorical: false,
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
                .map(|(j, &ms)| ((start + j) as f64 + 0.5, ms.clamp(x_min, y_max)))
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
        categorical: false,
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
    // Legend, in the CDF panel's lower right: the table's p50 and p99 (medians of pairs).
    let summary = &cell.summary;
    let x = cdf.x + cdf.w - 235.0;
    text(
        &mut out,
        x,
        cdf.y + cdf.h - 14.0 - 16.0 * series.len() as f64,
        "start",
        "frame ms, medians of pairs (the table's):",
    );
    for (k, s) in series.iter().enumerate() {
        let y = cdf.y + cdf.h - 14.0 - 16.0 * (series.len() - 1 - k) as f64;
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="14" height="4" fill="{}"/><text x="{:.1}" y="{:.1}">{} p50 {}, p99 {}</text>"##,
            y - 5.0,
            color(s.arm),
            x + 20.0,
            y,
            s.arm.name(),
            label((summary.median(s.arm, "p50_ms") * 100.0).round() / 100.0),
            label((summary.median(s.arm, "p99_ms") * 100.0).round() / 100.0),
        );
    }
    let bars_y = by + BOTTOM_H + MARGIN + 40.0;
    cpu_by_group(&mut out, ctx, bars_y, bw);
    pickups(&mut out, ctx, bars_y, bw);
    out.push_str("</svg>\n");
    out
}

/// The frame-time range (ms) of the time panels and the distributions, from every arm's
/// frames sorted: round values (the ticks' step) below the fastest 0.1 % of the frames and
/// the cap's period, and above 1.1x both the 99.9th percentile and the cap's period; from 0
/// when the frames spread over more than two thirds of it. The frames fill the panels instead
/// of lying flat at their foot; the few beyond the top are drawn there and counted.
pub(crate) fn frame_range(sorted: &[f64], cap_ms: Option<f64>) -> (f64, f64) {
    let (lo, hi) = (quantile(sorted, 0.001), quantile(sorted, 0.999));
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, nice_up(cap_ms.map_or(1.0, |c| c * 1.5)));
    }
    let lo = lo.min(cap_ms.unwrap_or(f64::INFINITY)) * 0.95;
    let hi = (hi.max(cap_ms.unwrap_or(0.0)) * 1.1).max(lo + 0.1);
    let step = ticks(lo, hi).windows(2).next().map_or(1.0, |w| w[1] - w[0]);
    let top = (hi / step).ceil() * step;
    let bottom = (lo / step).floor() * step;
    if bottom < top / 3.0 {
        (0.0, nice_up(hi))
    } else {
        (bottom, top)
    }
}

/// Stacked bars, one an arm: the median CPU ms a frame of each group, and what the process
/// spent beside them ("other": the controller, allocation, exits).
fn cpu_by_group(out: &mut String, ctx: &Context, y: f64, w: f64) {
    let s = &ctx.cell.summary;
    let arms = &ctx.cell.spec.arms;
    let stacks: Vec<Vec<(Option<Group>, f64)>> = arms
        .iter()
        .map(|&arm| {
            let mut parts: Vec<(Option<Group>, f64)> = Group::ALL
                .iter()
                .map(|&g| {
                    (
                        Some(g),
                        s.median(arm, &format!("{}_cpu_ms_per_frame", g.name())),
                    )
                })
                .filter(|(_, v)| v.is_finite() && *v > 0.0)
                .collect();
            let known: f64 = parts.iter().map(|(_, v)| v).sum();
            let other = s.median(arm, "cpu_ms_per_frame") - known;
            if other > 0.0 {
                parts.push((None, other));
            }
            parts
        })
        .collect();
    let top = stacks
        .iter()
        .map(|p| p.iter().map(|(_, v)| v).sum::<f64>())
        .fold(0.0, f64::max);
    let p = Panel {
        x: MARGIN,
        y,
        w,
        h: BARS_H,
        x0: 0.0,
        // One column more than the arms: the legend's.
        x1: arms.len() as f64 + 1.0,
        y0: 0.0,
        y1: nice_up(top.max(0.1)),
        log_y: false,
        categorical: true,
    };
    p.axes(
        out,
        "CPU a frame by thread group (median of pairs)",
        "",
        "CPU ms a frame",
    );
    for (k, (arm, parts)) in arms.iter().zip(&stacks).enumerate() {
        let (l, r) = (k as f64 + 0.2, k as f64 + 0.6);
        let mut base = 0.0;
        for &(g, v) in parts {
            bar(out, &p, [l, base, r, base + v], group_color(g), "white");
            base += v;
        }
        text(
            out,
            p.px(k as f64 + 0.4),
            y + BARS_H + 14.0,
            "middle",
            arm.name(),
        );
        text(
            out,
            p.px(k as f64 + 0.4),
            p.py(base) - 4.0,
            "middle",
            &label((base * 100.0).round() / 100.0),
        );
    }
    // Legend at the right of the bars, one line a group that appears.
    let mut shown: Vec<Option<Group>> = Vec::new();
    for parts in &stacks {
        for (g, _) in parts {
            if !shown.contains(g) {
                shown.push(*g);
            }
        }
    }
    for (i, g) in shown.iter().enumerate() {
        let (lx, ly) = (p.px(arms.len() as f64) + 10.0, p.y + 14.0 + 15.0 * i as f64);
        let _ = writeln!(
            out,
            r##"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{}"/>"##,
            ly - 9.0,
            group_color(*g)
        );
        text(out, lx + 14.0, ly, "start", g.map_or("other", Group::name));
    }
}

/// Bars a pickup kind an arm: p50 filled, p99 outlined, on a log scale of microseconds.
fn pickups(out: &mut String, ctx: &Context, y: f64, w: f64) {
    let s = &ctx.cell.summary;
    let arms = &ctx.cell.spec.arms;
    const KINDS: [(&str, &str); 2] = [("job", "job"), ("exec", "exec msg")];
    let value = |arm: Arm, kind: &str, q: &str| s.median(arm, &format!("{kind}_pickup_{q}_us"));
    let all: Vec<f64> = arms
        .iter()
        .flat_map(|&a| {
            KINDS
                .iter()
                .flat_map(move |(k, _)| [value(a, k, "p50"), value(a, k, "p99")])
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let hi = all.iter().copied().fold(1.0, f64::max);
    let lo = all.iter().copied().fold(hi, f64::min);
    let p = Panel {
        x: MARGIN + w + GAP + 40.0,
        y,
        w,
        h: BARS_H,
        x0: 0.0,
        x1: (KINDS.len() * arms.len()).max(1) as f64,
        y0: 10f64.powf(lo.max(0.01).log10().floor()),
        y1: 10f64.powf(hi.log10().ceil()).max(10.0),
        log_y: true,
        categorical: true,
    };
    p.axes(
        out,
        "pickup latency, post to start (p50 filled, p99 outlined; median of pairs)",
        "",
        "us (log)",
    );
    for (ki, (key, name)) in KINDS.iter().enumerate() {
        for (ai, &arm) in arms.iter().enumerate() {
            let x = (ki * arms.len() + ai) as f64;
            let (p50, p99) = (value(arm, key, "p50"), value(arm, key, "p99"));
            if p99.is_finite() {
                bar(out, &p, [x + 0.2, p.y0, x + 0.8, p99], "none", color(arm));
            }
            if p50.is_finite() {
                bar(
                    out,
                    &p,
                    [x + 0.3, p.y0, x + 0.7, p50],
                    color(arm),
                    color(arm),
                );
                text(
                    out,
                    p.px(x + 0.5),
                    p.py(p99.max(p50)) - 4.0,
                    "middle",
                    &label((p50 * 10.0).round() / 10.0),
                );
            }
            text(out, p.px(x + 0.5), y + BARS_H + 14.0, "middle", arm.name());
        }
        text(
            out,
            p.px(ki as f64 * arms.len() as f64 + arms.len() as f64 / 2.0),
            y + BARS_H + 30.0,
            "middle",
            name,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_range_shows_the_frames() {
        // Capped at 60: frames at the cap's 16.67 ms, a jitter of 0.3 ms, two slow ones (under
        // 0.1 %: drawn at the top and counted).
        let mut frames: Vec<f64> = (0..3000)
            .map(|i| 16.67 + 0.3 * (f64::from(i * 7 % 13) / 6.0 - 1.0))
            .collect();
        frames.extend([21.0, 40.0]);
        frames.sort_by(f64::total_cmp);
        let cap = 1e3 / 60.0;
        let (y0, y1) = frame_range(&frames, Some(cap));
        let spread = quantile(&frames, 0.99) - quantile(&frames, 0.01);
        assert!(spread / (y1 - y0) > 0.05, "the jitter shows: {y0}..{y1}");
        assert!(y0 > 0.0 && y0 <= cap && cap * 1.1 <= y1, "{y0}..{y1}");
        assert!(quantile(&frames, 0.999) <= y1, "{y0}..{y1}");
        // Uncapped frames spread from 2 to 30 ms start at 0.
        let spread: Vec<f64> = (0..1000)
            .map(|i| 2.0 + 28.0 * f64::from(i) / 999.0)
            .collect();
        let (y0, y1) = frame_range(&spread, None);
        assert_eq!(y0, 0.0);
        assert!(y1 >= 30.0 * 1.1, "{y1}");
        assert_eq!(frame_range(&[], Some(cap)), (0.0, 25.0));
    }

    #[test]
    fn every_group_has_its_own_color() {
        let mut seen: Vec<&str> = Group::ALL.iter().map(|&g| group_color(Some(g))).collect();
        seen.push(group_color(None));
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n);
    }
}
