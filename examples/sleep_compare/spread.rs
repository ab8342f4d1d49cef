//! The spread of figures over repeated runs, each with fresh runtimes (and so a fresh
//! calibration): a figure that depends on a calibration is reported as min / median / max.
//!
//! Invariant: rows and columns keep the order of their first sighting, and every figure of a
//! row comes from the same round as the row's other figures (ratios are taken within a round,
//! side by side, before they are spread).
//!
//! Shared: frame_sim includes this file (`#[path]`) for its `--repeat`, so both examples
//! spread their repeats the same way.

/// Figures by row, round after round.
#[derive(Default)]
pub(crate) struct Spread {
    rows: Vec<Row>,
}

/// One row: its name, its columns' names, and its figures, a vector a round.
struct Row {
    name: String,
    columns: Vec<&'static str>,
    rounds: Vec<Vec<f64>>,
}

impl Spread {
    /// Records one round's `figures` (named by `columns`) of `row`.
    pub(crate) fn add(&mut self, row: &str, columns: &[&'static str], figures: Vec<f64>) {
        match self.rows.iter_mut().find(|r| r.name == row) {
            Some(r) => r.rounds.push(figures),
            None => self.rows.push(Row {
                name: row.to_string(),
                columns: columns.to_vec(),
                rounds: vec![figures],
            }),
        }
    }

    /// Each row's figures as min / median / max over its rounds, a table under `title`;
    /// empty if no row was added. Columns are as wide as their widest entry.
    pub(crate) fn text(&self, title: &str) -> String {
        let Some(first) = self.rows.first() else {
            return String::new();
        };
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| {
                row.columns
                    .iter()
                    .map(|c| {
                        let figures = self.rounds(&row.name, c).unwrap_or_default();
                        let (lo, mid, hi) = min_median_max(figures);
                        format!("{} / {} / {}", short(lo), short(mid), short(hi))
                    })
                    .collect()
            })
            .collect();
        let label = self.rows.iter().map(|r| r.name.len()).max().unwrap_or(0) + 2;
        let widths: Vec<usize> = (0..first.columns.len())
            .map(|i| {
                cells
                    .iter()
                    .filter_map(|c| c.get(i).map(String::len))
                    .chain([first.columns[i].len()])
                    .max()
                    .unwrap_or(0)
                    + 2
            })
            .collect();
        let mut t = format!(
            "\n{title}: min / median / max over {} repeats\n{:<label$}",
            first.rounds.len(),
            ""
        );
        for (c, w) in first.columns.iter().zip(&widths) {
            t += &format!("{c:>w$}");
        }
        for (row, cells) in self.rows.iter().zip(&cells) {
            t += &format!("\n{:<label$}", row.name);
            for (c, w) in cells.iter().zip(&widths) {
                t += &format!("{c:>w$}");
            }
        }
        t.push('\n');
        t
    }
    /// `row`'s `column`, round by round; `None` where there is no such row or column.
    pub(crate) fn rounds(&self, row: &str, column: &str) -> Option<Vec<f64>> {
        let r = self.rows.iter().find(|r| r.name == row)?;
        let i = r.columns.iter().position(|c| *c == column)?;
        Some(r.rounds.iter().map(|f| f[i]).collect())
    }
}

/// The least, the median (the lower middle of an even count) and the greatest of `v`, NaNs
/// left out (a figure a round could not measure); all NaN for none.
pub(crate) fn min_median_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.retain(|x| !x.is_nan());
    v.sort_by(f64::total_cmp);
    let Some((&lo, &hi)) = v.first().zip(v.last()) else {
        return (f64::NAN, f64::NAN, f64::NAN);
    };
    (lo, v[(v.len() - 1) / 2], hi)
}

/// A figure in three decimals under 10 (ratios near 1 differ in the third), fewer above, none
/// for a whole number; `-` for none.
pub(crate) fn short(x: f64) -> String {
    match x.abs() {
        a if a.is_nan() => "-".into(),
        _ if x.fract() == 0.0 && x.abs() < 1e9 => format!("{x:.0}"),
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_its_lower_middle() {
        assert_eq!(min_median_max(vec![4.0, 1.0, 3.0, 2.0]), (1.0, 2.0, 4.0));
        assert_eq!(min_median_max(vec![5.0, 1.0, 3.0]), (1.0, 3.0, 5.0));
        assert!(min_median_max(vec![]).0.is_nan());
        assert_eq!(
            min_median_max(vec![f64::NAN, 2.0, 1.0]),
            (1.0, 1.0, 2.0),
            "a round without the figure is left out"
        );
        assert!(min_median_max(vec![f64::NAN]).2.is_nan());
    }

    #[test]
    fn the_table_spreads_each_column_and_says_none_for_nan() {
        let mut s = Spread::default();
        assert_eq!(s.text("t"), "");
        s.add("cell", &["fps r/a", "escapes"], vec![1.004, 0.0]);
        s.add("cell", &["fps r/a", "escapes"], vec![0.998, 2.0]);
        s.add("cell", &["fps r/a", "escapes"], vec![1.012, 1.0]);
        s.add("other", &["fps r/a", "escapes"], vec![f64::NAN, 3.0]);
        let t = s.text("title");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "title: min / median / max over 3 repeats", "{t}");
        assert!(lines[3].starts_with("cell ") && lines[3].contains("0.998 / 1.004 / 1.012"));
        assert!(lines[3].ends_with("0 / 1 / 2"), "{t}");
        assert!(
            lines[4].contains("- / - /") && lines[4].ends_with("3 / 3 / 3"),
            "{t}"
        );
        assert_eq!(lines[2].len(), lines[3].len(), "columns line up: {t}");
    }

    #[test]
    fn a_row_reads_round_by_round() {
        let mut s = Spread::default();
        s.add("hos", &["p99", "cpu"], vec![6.1, 0.3]);
        s.add("hos", &["p99", "cpu"], vec![30.8, 0.4]);
        assert_eq!(s.rounds("hos", "p99"), Some(vec![6.1, 30.8]));
        assert_eq!(s.rounds("hos", "nope"), None);
        assert_eq!(s.rounds("other", "p99"), None);
    }

    #[test]
    fn rounds_gather_under_their_row_in_first_sighting_order() {
        let mut s = Spread::default();
        s.add("b", &["x"], vec![1.0]);
        s.add("a", &["x"], vec![2.0]);
        s.add("b", &["x"], vec![3.0]);
        let rows: Vec<_> = s
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.rounds.len()))
            .collect();
        assert_eq!(rows, [("b", 2), ("a", 1)]);
    }
}
