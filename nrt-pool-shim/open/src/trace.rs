//! A launch as a trace (`nrt-pool run --trace FILE.json`) in the Trace Event format that
//! Perfetto, chrome://tracing and speedscope open: one track per core. On Xtensa cores each
//! core's functions are spans laid out on the device-time estimate's axis (D100), longest
//! first (the profile counts instructions per function, not when each ran), the tensor
//! copies a span with their counts and bytes; on host cores the kernel is one span of the
//! core's measured wall time. Faults and checking-mode findings are instant events with
//! their source line.

use nrt_pool_engine::check::CheckReport;
use nrt_pool_engine::estimate::{Estimate, COPY_ENTRY, ELEMENT_ENTRY};
use nrt_pool_engine::profile::Profile;
use nrt_pool_engine::DeviceFault;
use serde_json::{json, Value};

/// The one process the tracks belong to.
const PID: u32 = 1;

/// A launch's trace events, gathered.
#[derive(Default)]
pub struct LaunchTrace {
    events: Vec<Value>,
    /// Where the last span ends (µs): instants without a time of their own go there.
    end_us: f64,
}

impl LaunchTrace {
    /// The tracks and spans of a profiled launch (its estimate on Xtensa cores).
    pub fn of_profile(p: &Profile) -> LaunchTrace {
        let mut t = LaunchTrace::default();
        let estimate = p.estimate();
        let axis = if estimate.is_some() {
            "estimated trn1 time"
        } else {
            "this machine's wall time"
        };
        t.events.push(json!({
            "ph": "M", "pid": PID, "name": "process_name",
            "args": {"name": format!("Pool engine: kernel '{}' on {} cores ({axis})", p.kernel, p.isa)},
        }));
        for c in &p.cores {
            t.events.push(json!({
                "ph": "M", "pid": PID, "tid": c.core, "name": "thread_name",
                "args": {"name": format!("core {}", c.core)},
            }));
        }
        match &estimate {
            Some(e) => t.estimated_spans(p, e),
            None => t.measured_spans(p),
        }
        t
    }

    /// Xtensa cores: each core's kernel span and its functions' spans, on the estimate.
    fn estimated_spans(&mut self, p: &Profile, e: &Estimate) {
        for c in &e.cores {
            let us = c.seconds * 1e6;
            self.span(c.core, &p.kernel, "kernel", 0.0, us, json!({}));
            let mut at = 0.0;
            for (f, s) in &c.functions {
                let dur = s * 1e6;
                let (cat, args) = match f.as_str() {
                    COPY_ENTRY => (
                        "copy",
                        json!({
                            "copies_in": c.accesses.copies_in,
                            "copies_out": c.accesses.copies_out,
                            "bytes_in": c.accesses.bytes_in,
                            "bytes_out": c.accesses.bytes_out,
                        }),
                    ),
                    ELEMENT_ENTRY => ("access", json!({"element_accesses": c.accesses.element})),
                    _ => ("function", json!({})),
                };
                self.span(c.core, f, cat, at, dur, args);
                at += dur;
            }
            self.end_us = self.end_us.max(us);
        }
    }

    /// Host cores: each core's kernel span of its measured wall time.
    fn measured_spans(&mut self, p: &Profile) {
        for c in &p.cores {
            let us = c.wall.map_or(0.0, |w| w.as_secs_f64() * 1e6);
            let args = json!({"instructions": c.instructions});
            self.span(c.core, &p.kernel, "kernel", 0.0, us, args);
            self.end_us = self.end_us.max(us);
        }
    }

    fn span(&mut self, core: usize, name: &str, cat: &str, ts: f64, dur: f64, args: Value) {
        self.events.push(json!({
            "ph": "X", "pid": PID, "tid": core, "name": name, "cat": cat,
            "ts": ts, "dur": dur, "args": args,
        }));
    }

    fn instant(&mut self, core: usize, name: String, args: Value) {
        self.events.push(json!({
            "ph": "i", "s": "t", "pid": PID, "tid": core, "name": name, "cat": "report",
            "ts": self.end_us, "args": args,
        }));
    }

    /// A device fault, on its core's track.
    pub fn add_fault(&mut self, f: &DeviceFault) {
        let at = f.shown_frame().map(|s| s.describe());
        let name = format!("fault: {}", f.kind.describe());
        self.instant(f.core, name, json!({"at": at, "message": f.to_string()}));
    }

    /// Checking mode's findings, each on the tracks of the cores it names (core 0 when it
    /// names none).
    pub fn add_findings(&mut self, r: &CheckReport) {
        for f in &r.findings {
            let at = f.source.as_ref().map(ToString::to_string);
            let cores = if f.cores.is_empty() {
                vec![0]
            } else {
                f.cores.clone()
            };
            for c in cores {
                let name = format!("check {}: {}", f.check, f.tensor);
                self.instant(c, name, json!({"at": at, "message": f.to_string()}));
            }
        }
    }

    /// The trace as JSON text (the Trace Event format's object form).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&json!({"traceEvents": self.events, "displayTimeUnit": "ms"}))
            .expect("a JSON value prints")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_pool_engine::profile::{AccessCounts, CoreProfile};

    #[test]
    fn each_core_is_a_track_with_its_functions_and_copies_on_the_estimate() {
        let counts = AccessCounts {
            copies_in: 2,
            copies_out: 1,
            bytes_in: 8192,
            bytes_out: 4096,
            ..AccessCounts::default()
        };
        let core = |c| CoreProfile {
            core: c,
            instructions: Some(1000),
            functions: vec![("relu_tiles(torch::Tensor const&)".into(), 1000)],
            accesses: Some(counts),
            ..CoreProfile::default()
        };
        let p = Profile {
            isa: "xtensa".into(),
            kernel: "relu".into(),
            cores: (0..8).map(core).collect(),
        };
        let t = LaunchTrace::of_profile(&p);
        let v: Value = serde_json::from_str(&t.to_json()).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let threads: Vec<&Value> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .collect();
        assert_eq!(threads.len(), 8);
        for c in 0..8 {
            let on = |cat: &str| {
                events
                    .iter()
                    .filter(|e| e["tid"] == c && e["cat"] == cat && e["ph"] == "X")
                    .count()
            };
            assert_eq!(
                (on("kernel"), on("function"), on("copy")),
                (1, 1, 1),
                "core {c}"
            );
        }
        let copy = events.iter().find(|e| e["cat"] == "copy").unwrap();
        assert_eq!(copy["args"]["bytes_in"], 8192);
        assert!(events
            .iter()
            .all(|e| e["ph"].is_string() && e["pid"] == PID && e["name"].is_string()));
    }
}
