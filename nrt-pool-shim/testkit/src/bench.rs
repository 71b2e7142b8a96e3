//! `make bench` rows: each a measurement against a baseline in the same run, the median of
//! repeats with the spread (min..max), a goal, and a JSON copy under `target/bench/` that
//! `make bench` merges into `target/bench.json` for comparison across commits.

use std::time::{Duration, Instant};

/// Repeated timings of one thing.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
}

impl Sample {
    /// `f` run `reps` times (after one unmeasured warm-up run); each run's time is `f`'s
    /// time divided by `per` (operations per run).
    pub fn measure(reps: usize, per: u32, mut f: impl FnMut()) -> Sample {
        f();
        let mut runs: Vec<Duration> = (0..reps.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed() / per.max(1)
            })
            .collect();
        runs.sort();
        Sample {
            median: runs[runs.len() / 2],
            min: runs[0],
            max: runs[runs.len() - 1],
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
    rows: Vec<String>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Report {
    pub fn new(suite: &'static str) -> Report {
        println!(
            "{:<56} {:>24} {:>24} {:>8} {:>12}",
            format!("[{suite}] row"),
            "ours ms (min..max)",
            "baseline ms (min..max)",
            "ratio",
            "goal"
        );
        Report {
            suite,
            rows: Vec::new(),
        }
    }

    /// A row: `ours` against `baseline` (ratio = baseline / ours, so > 1 means faster).
    pub fn row(&mut self, name: &str, ours: Sample, baseline: Sample, goal: Goal) {
        let ratio = baseline.median.as_secs_f64() / ours.median.as_secs_f64().max(1e-12);
        let (goal_text, met) = match goal {
            Goal::RatioAtLeast(r) => (format!(">= {r}x"), Some(ratio >= r)),
            Goal::AtMost(d) => (format!("<= {:.3}ms", ms(d)), Some(ours.median <= d)),
            Goal::None => ("-".to_string(), None),
        };
        let span = |s: Sample| format!("{:.4} ({:.4}..{:.4})", ms(s.median), ms(s.min), ms(s.max));
        println!(
            "{:<56} {:>24} {:>24} {:>7.3}x {:>8} {}",
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
        let sample = |s: Sample| {
            format!(
                "{{\"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}}}",
                ms(s.median),
                ms(s.min),
                ms(s.max)
            )
        };
        self.rows.push(format!(
            "{{\"suite\": {:?}, \"row\": {:?}, \"ours\": {}, \"baseline\": {}, \"ratio\": {ratio}, \"goal\": {:?}, \"met\": {}}}",
            self.suite,
            name,
            sample(ours),
            sample(baseline),
            goal_text,
            met.map_or("null".to_string(), |m| m.to_string())
        ));
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        let dir = crate::root().join("target/bench");
        let body = format!("[\n  {}\n]\n", self.rows.join(",\n  "));
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
