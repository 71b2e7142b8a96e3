//! `make bench` rows: each a measurement against a baseline in the same run, the median of
//! repeats with the spread (min..max), a goal, and a JSON copy under `target/bench/` that
//! `make bench` merges into `target/bench.json` (from which the README's table is made).
//! A leaf crate: the device runtime's benches use it without depending on the engine's
//! test support.
//!
//! A filter (`cargo bench --bench NAME -- WORDS`, `make bench FILTER=WORDS`) runs only the
//! rows whose name contains it: benches ask [`Report::wants`] before measuring.

use std::time::{Duration, Instant};

/// Repeated timings of one thing, in seconds (per operation).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Sample {
    /// `f` run `reps` times (after one unmeasured warm-up run); each run's time is `f`'s
    /// time divided by `per` (operations per run).
    pub fn measure(reps: usize, per: u32, f: impl FnMut()) -> Sample {
        let mut f = f;
        let [s] = Sample::interleaved(reps, per, [&mut f as &mut dyn FnMut()]);
        s
    }

    /// Several things timed in turns (a run of each, then the next round), `reps` rounds
    /// after one unmeasured round: a slow spell of a shared machine then lands on all of
    /// them alike rather than on whichever ran during it.
    pub fn interleaved<const K: usize>(
        reps: usize,
        per: u32,
        mut fs: [&mut dyn FnMut(); K],
    ) -> [Sample; K] {
        for f in fs.iter_mut() {
            f();
        }
        let mut runs = [(); K].map(|_| Vec::with_capacity(reps.max(1)));
        for _ in 0..reps.max(1) {
            for (f, r) in fs.iter_mut().zip(runs.iter_mut()) {
                let t = Instant::now();
                f();
                r.push(t.elapsed().as_secs_f64() / f64::from(per.max(1)));
            }
        }
        runs.map(Sample::from_runs)
    }

    /// The sample of timings taken by hand (seconds each; at least one).
    pub fn from_runs(mut r: Vec<f64>) -> Sample {
        if r.is_empty() {
            r.push(f64::NAN);
        }
        r.sort_by(f64::total_cmp);
        Sample {
            median: r[r.len() / 2],
            min: r[0],
            max: r[r.len() - 1],
        }
    }
}

/// What a row must reach.
#[derive(Clone, Copy, Debug)]
pub enum Goal {
    /// baseline / ours at least this (> 1: ours is faster).
    RatioAtLeast(f64),
    /// ours (median) at most this.
    AtMost(Duration),
    /// Informational: no goal.
    None,
}

/// One suite's rows, printed as they come and written to `target/bench/<suite>.json`.
pub struct Report {
    suite: &'static str,
    rows: Vec<serde_json::Value>,
    filter: Option<String>,
}

/// The workspace's root (where `target/bench` lies).
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The filter: the bench's first argument that is not a flag (cargo passes `--bench`),
/// else `$BENCH_FILTER`; empty means every row.
fn filter_from(args: impl Iterator<Item = String>) -> Option<String> {
    args.skip(1)
        .find(|a| !a.starts_with("--"))
        .or_else(|| std::env::var("BENCH_FILTER").ok())
        .filter(|f| !f.is_empty())
}

/// A time with a unit that suits it (ns, us, ms, s).
fn human(secs: f64) -> String {
    match secs {
        s if s < 1e-6 => format!("{:.2}ns", s * 1e9),
        s if s < 1e-3 => format!("{:.2}us", s * 1e6),
        s if s < 1.0 => format!("{:.2}ms", s * 1e3),
        s => format!("{s:.3}s"),
    }
}

impl Report {
    pub fn new(suite: &'static str) -> Report {
        println!(
            "{:<56} {:>24} {:>24} {:>8} {:>12}",
            format!("[{suite}] row"),
            "ours (min..max)",
            "baseline (min..max)",
            "ratio",
            "goal"
        );
        let filter = filter_from(std::env::args());
        if let Some(f) = &filter {
            println!("(only rows whose name contains {f:?})");
        }
        Report {
            suite,
            rows: Vec::new(),
            filter,
        }
    }

    /// Whether the row `name` is to be measured (the filter, if any, is in its name).
    pub fn wants(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }

    /// A row: `ours` against `baseline` (ratio = baseline / ours, so > 1 means faster).
    pub fn row(&mut self, name: &str, ours: Sample, baseline: Sample, goal: Goal) {
        let ratio = baseline.median / ours.median.max(1e-15);
        let (goal_text, met) = match goal {
            Goal::RatioAtLeast(r) => (format!(">= {r}x"), Some(ratio >= r)),
            Goal::AtMost(d) => (
                format!("<= {}", human(d.as_secs_f64())),
                Some(ours.median <= d.as_secs_f64()),
            ),
            Goal::None => ("-".to_string(), None),
        };
        let span = |s: Sample| format!("{} ({}..{})", human(s.median), human(s.min), human(s.max));
        println!(
            "{:<56} {:>24} {:>24} {:>7.3}x {:>12} {}",
            name,
            span(ours),
            span(baseline),
            ratio,
            goal_text,
            match met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "",
            }
        );
        let sample =
            |s: Sample| serde_json::json!({"median_s": s.median, "min_s": s.min, "max_s": s.max});
        self.rows.push(serde_json::json!({
            "suite": self.suite,
            "row": name,
            "ours": sample(ours),
            "baseline": sample(baseline),
            "ratio": ratio,
            "goal": goal_text,
            "met": met,
        }));
    }
}

impl Report {
    /// A size row: `bytes` against a limit (met when at most the limit); the ratio is
    /// limit / bytes, so above 1 means under the limit.
    pub fn size_row(&mut self, name: &str, bytes: u64, limit: u64) {
        let ratio = limit as f64 / (bytes.max(1)) as f64;
        let met = bytes <= limit;
        println!(
            "{:<56} {:>24} {:>24} {:>7.3}x {:>12} {}",
            name,
            format!("{bytes} B"),
            format!("limit {limit} B"),
            ratio,
            format!("<= {limit} B"),
            if met { "met" } else { "MISSED" }
        );
        self.rows.push(serde_json::json!({
            "suite": self.suite,
            "row": name,
            "ours_bytes": bytes,
            "limit_bytes": limit,
            "ratio": ratio,
            "goal": format!("<= {limit} B"),
            "met": met,
        }));
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        if self.rows.is_empty() && self.filter.is_some() {
            // A filtered run that measured none of this suite's rows keeps its last file.
            return;
        }
        let dir = root().join("target/bench");
        let body = serde_json::to_string_pretty(&self.rows).expect("rows are JSON values") + "\n";
        let written = std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(dir.join(format!("{}.json", self.suite)), body));
        if let Err(e) = written {
            eprintln!(
                "bench: could not write target/bench/{}.json: {e}",
                self.suite
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_the_first_word_that_is_not_a_flag() {
        let args = |v: &[&str]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert_eq!(
            filter_from(args(&["bench", "--bench", "heap"])),
            Some("heap".into())
        );
        if std::env::var_os("BENCH_FILTER").is_none() {
            assert_eq!(filter_from(args(&["bench", "--bench"])), None);
        }
    }
}
