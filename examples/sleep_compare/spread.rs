//! The spread of figures over repeated runs, each with fresh runtimes (and so a fresh
//! calibration): a figure that depends on a calibration is reported as min / median / max.
//!
//! Invariant: rows and columns keep the order of their first sighting, and every figure of a
//! row comes from the same round as the row's other figures (ratios are taken within a round,
//! side by side, before they are spread).

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

    /// Prints each row's figures as min / median / max over its rounds.
    pub(crate) fn print(&self, title: &str) {
        let Some(first) = self.rows.first() else {
            return;
        };
        println!();
        println!(
            "{title}: min / median / max over {} rounds",
            first.rounds.len()
        );
        print!("{:<34}", "");
        for c in &first.columns {
            print!(" {c:>22}");
        }
        println!();
        for row in &self.rows {
            print!("{:<34}", row.name);
            for i in 0..row.columns.len() {
                let (lo, mid, hi) = min_median_max(row.rounds.iter().map(|r| r[i]).collect());
                print!(
                    " {:>22}",
                    format!("{} / {} / {}", short(lo), short(mid), short(hi))
                );
            }
            println!();
        }
    }
}

/// The least, the median (the lower middle of an even count) and the greatest of `v`.
pub(crate) fn min_median_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let Some((&lo, &hi)) = v.first().zip(v.last()) else {
        return (f64::NAN, f64::NAN, f64::NAN);
    };
    (lo, v[(v.len() - 1) / 2], hi)
}

/// A figure in three significant digits or so.
fn short(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
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
