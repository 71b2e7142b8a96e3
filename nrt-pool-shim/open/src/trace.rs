//! A launch as a trace (`nrt-pool run --trace FILE.json`) in the Trace Event format that
//! Perfetto, chrome://tracing and speedscope open: one track per core. On Xtensa cores each
//! core's time is laid out on the device-time estimate's axis (D100) in the order it was
//! spent: each tensor copy a span with its bytes and direction, where it began (the
//! runtime logs the first copies, the profile plugin stamps them: D120), and between copies
//! a "compute" span holding its functions, longest first (the profile counts instructions
//! per function, not when each ran). An image whose runtime logs no copies gets its
//! functions longest first and its copies as one span. On host cores the kernel is a
//! span of the core's measured wall time holding what was measured in it (D124): each
//! copy where it ran and, between copies, the functions the core's sampled call stacks
//! found, nested as they called each other. Faults and checking-mode findings are instant
//! events with their source line.

use nrt_pool_engine::check::CheckReport;
use nrt_pool_engine::estimate::{
    CoreEstimate, Estimate, Step, COPY_ENTRY, ELEMENT_ENTRY, HBM_STACK_ENTRY,
};
use nrt_pool_engine::profile::{MeasuredTimeline, Profile, OUTSIDE_FRAME};
use nrt_pool_engine::DeviceFault;
use serde_json::{json, Value};

/// `v` as JSON writes it (a finite number; anything else, 0).
fn json_number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::from(0), Value::Number)
}

/// `s` as a JSON string, appended to `out` (what serde_json writes, without a value).
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The one process the tracks belong to.
const PID: u32 = 1;

/// A launch's trace events, gathered, each already written as a JSON object into one text
/// (a trace of a launch with many copies has thousands of spans: written directly, not
/// through a tree of values).
#[derive(Default)]
pub struct LaunchTrace {
    /// The events written so far, comma-separated.
    events: String,
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
        t.push(json!({
            "ph": "M", "pid": PID, "name": "process_name",
            "args": {"name": format!("Pool engine: kernel '{}' on {} cores ({axis})", p.kernel, p.isa)},
        }));
        for c in &p.cores {
            t.push(json!({
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

    /// Xtensa cores: each core's kernel span and, inside it, its time on the estimate.
    fn estimated_spans(&mut self, p: &Profile, e: &Estimate) {
        for c in &e.cores {
            let us = c.seconds * 1e6;
            self.span(c.core, &p.kernel, "kernel", 0.0, us, None);
            if c.timeline.is_empty() {
                self.functions(c.core, &c.functions, 0.0, Some(c));
            } else {
                self.timeline(c.core, &c.timeline);
            }
            self.end_us = self.end_us.max(us);
        }
    }

    /// A core's steps in order: each copy where it began, and between copies a compute span
    /// holding its functions.
    fn timeline(&mut self, core: usize, steps: &[Step]) {
        let mut at = 0.0;
        let mut copy = 0u32;
        for step in steps {
            let dur = step.seconds() * 1e6;
            match step {
                Step::Compute(functions) => {
                    self.span(core, "compute", "compute", at, dur, None);
                    self.functions(core, functions, at, None);
                }
                Step::Copy {
                    out, bytes, copies, ..
                } => {
                    // A run of like copies is one span; what ran between them is in the
                    // next compute span (D120).
                    self.copy_span(core, copy, *out, *bytes, *copies, at, dur);
                    copy += copies;
                }
                Step::Unlogged { copies, bytes, .. } => {
                    let name = format!(
                        "{copies} more copies: {bytes} B in all (made after the log filled)"
                    );
                    let args = json!({"copies": copies, "bytes": bytes, "logged": false});
                    self.span(core, &name, "copy", at, dur, Some(args));
                }
            }
            at += dur;
        }
    }

    /// Functions' spans one after another from `at`, as given (longest first); the copies'
    /// entry with the core's counts when `counts` is given.
    fn functions(
        &mut self,
        core: usize,
        functions: &[(String, f64)],
        mut at: f64,
        counts: Option<&CoreEstimate>,
    ) {
        for (f, s) in functions {
            let dur = s * 1e6;
            let (cat, args) = match (f.as_str(), counts) {
                (COPY_ENTRY, Some(c)) => (
                    "copy",
                    Some(json!({
                        "copies_in": c.accesses.copies_in,
                        "copies_out": c.accesses.copies_out,
                        "bytes_in": c.accesses.bytes_in,
                        "bytes_out": c.accesses.bytes_out,
                    })),
                ),
                (ELEMENT_ENTRY, Some(c)) => (
                    "access",
                    Some(json!({"element_accesses": c.accesses.element})),
                ),
                (ELEMENT_ENTRY, None) | (HBM_STACK_ENTRY, _) => ("access", None),
                _ => ("function", None),
            };
            self.span(core, f, cat, at, dur, args);
            at += dur;
        }
    }

    /// Host cores: each core's kernel span of its measured wall time and, inside it, its
    /// measured timeline (D124): each copy where it ran, and between copies a compute span
    /// holding the functions its samples found, nested by their call stacks.
    fn measured_spans(&mut self, p: &Profile) {
        for c in &p.cores {
            let us = c.wall.map_or(0.0, |w| w.as_secs_f64() * 1e6);
            let mut args = json!({"instructions": c.instructions});
            if let Some(m) = &c.measured {
                args["sample_interval_us"] = json_number(m.interval_ns as f64 / 1e3);
                args["samples"] = Value::from(m.samples.len());
                if m.unlogged > 0 {
                    args["copies_not_timed"] = Value::from(m.unlogged);
                }
            }
            self.span(c.core, &p.kernel, "kernel", 0.0, us, Some(args));
            if let Some(m) = &c.measured {
                self.measured_timeline(c.core, m, us * 1e3);
            }
            self.end_us = self.end_us.max(us);
        }
    }

    /// One host core's copies and sampled functions, inside its kernel span of `wall_ns`.
    fn measured_timeline(&mut self, core: usize, m: &MeasuredTimeline, wall_ns: f64) {
        let mut at = 0.0f64;
        let mut copy = 0u32;
        for cp in &m.copies {
            let start = (cp.start_ns as f64).clamp(at, wall_ns);
            let end = (cp.end_ns as f64).clamp(start, wall_ns);
            self.compute(core, m, at, start);
            let (ts, dur) = (start / 1e3, (end - start) / 1e3);
            self.copy_span(core, copy, cp.out, cp.bytes, cp.copies, ts, dur);
            copy = copy.saturating_add(cp.copies);
            at = end;
        }
        self.compute(core, m, at, wall_ns);
    }

    /// A compute span `[from, to)` (ns) and the sampled functions inside it: each sample
    /// stands for the interval before it; consecutive samples sharing a stack's first
    /// frames make one span per shared frame, so spans nest as the calls did.
    fn compute(&mut self, core: usize, m: &MeasuredTimeline, from: f64, to: f64) {
        if to <= from {
            return;
        }
        self.span(
            core,
            "compute",
            "compute",
            from / 1e3,
            (to - from) / 1e3,
            None,
        );
        let step = m.interval_ns as f64;
        // Open spans, outermost first: (function, start ns, end ns).
        let mut open: Vec<(&str, f64, f64)> = Vec::new();
        let mut last_at = f64::NEG_INFINITY;
        // The samples are in time order: the interval's are one run of them.
        let first = m.samples.partition_point(|(t, _)| (*t as f64) <= from);
        let last = m.samples.partition_point(|(t, _)| (*t as f64) <= to);
        let inside = m.samples.get(first..last.max(first)).unwrap_or_default();
        for (t, stack) in inside {
            let t = *t as f64;
            // A gap (a copy's samples left out, a thinning) ends every open span.
            let joined = t - last_at <= step * 1.5;
            let start = if joined {
                last_at
            } else {
                (t - step).max(from)
            };
            let keep = if joined {
                open.iter()
                    .zip(stack)
                    .take_while(|((f, _, _), g)| *f == g.as_str())
                    .count()
            } else {
                0
            };
            self.close(core, &mut open, keep);
            for o in &mut open {
                o.2 = t;
            }
            for f in &stack[keep..] {
                open.push((f.as_str(), start, t));
            }
            last_at = t;
        }
        self.close(core, &mut open, 0);
    }

    /// Draws the open spans beyond the first `keep`, innermost last.
    fn close(&mut self, core: usize, open: &mut Vec<(&str, f64, f64)>, keep: usize) {
        while open.len() > keep {
            let Some((f, s, e)) = open.pop() else { break };
            let cat = if f == OUTSIDE_FRAME {
                "outside"
            } else {
                "function"
            };
            self.span(core, f, cat, s / 1e3, (e - s) / 1e3, None);
        }
    }

    fn push(&mut self, event: Value) {
        self.separate();
        self.events.push_str(&event.to_string());
    }

    /// A complete event ("X"), written directly: the common case, thousands of times.
    fn span(&mut self, core: usize, name: &str, cat: &str, ts: f64, dur: f64, args: Option<Value>) {
        let args = args.map_or_else(|| "{}".to_string(), |a| a.to_string());
        self.span_with(core, name, cat, ts, dur, &args);
    }

    /// [`LaunchTrace::span`] with its arguments already written as a JSON object.
    fn span_with(&mut self, core: usize, name: &str, cat: &str, ts: f64, dur: f64, args: &str) {
        use std::fmt::Write;
        self.separate();
        let e = &mut self.events;
        let _ = write!(e, r#"{{"ph":"X","pid":{PID},"tid":{core},"name":"#);
        push_json_str(e, name);
        e.push_str(r#","cat":"#);
        push_json_str(e, cat);
        let mut number = zmij::Buffer::new();
        let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
        e.push_str(r#","ts":"#);
        e.push_str(number.format_finite(finite(ts)));
        e.push_str(r#","dur":"#);
        e.push_str(number.format_finite(finite(dur)));
        e.push_str(r#","args":"#);
        e.push_str(args);
        e.push('}');
    }

    /// A run of `copies` like copies of `bytes` each, the `first`-th copy of its core on,
    /// at `ts` for `dur` (µs): on both backends' timelines.
    #[allow(clippy::too_many_arguments)]
    fn copy_span(
        &mut self,
        core: usize,
        first: u32,
        out: bool,
        bytes: u32,
        copies: u32,
        ts: f64,
        dur: f64,
    ) {
        let direction = if out { "out" } else { "in" };
        let name = match copies {
            1 => format!("copy {direction}: {bytes} B"),
            n => format!("{n} copies {direction}: {bytes} B each"),
        };
        let args = format!(
            r#"{{"copy":{first},"direction":"{direction}","bytes":{bytes},"copies":{copies}}}"#
        );
        self.span_with(core, &name, "copy", ts, dur, &args);
    }

    /// A comma before every event but the first.
    fn separate(&mut self) {
        if !self.events.is_empty() {
            self.events.push(',');
        }
    }

    fn instant(&mut self, core: usize, name: String, args: Value) {
        let end = self.end_us;
        self.push(json!({
            "ph": "i", "s": "t", "pid": PID, "tid": core, "name": name, "cat": "report",
            "ts": end, "args": args,
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
        let mut out = String::with_capacity(self.events.len() + 64);
        out.push_str(r#"{"traceEvents":["#);
        out.push_str(&self.events);
        out.push_str(r#"],"displayTimeUnit":"ms"}"#);
        out
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
            sbuf_tensors: 0,
            lines: None,
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

    #[test]
    fn logged_copies_are_spans_in_order_with_compute_between_holding_its_functions() {
        use nrt_pool_engine::profile::{CopyStep, CopyTimeline};
        let counts = AccessCounts {
            copies_in: 1,
            copies_out: 1,
            bytes_in: 4096,
            bytes_out: 4096,
            ..AccessCounts::default()
        };
        let step = |f: &str, n, out| CopyStep {
            before: vec![(f.to_string(), n)],
            out,
            bytes: 4096,
            copies: 1,
            elements_before: 0,
            stack_accesses: 0,
        };
        let core = CoreProfile {
            core: 0,
            instructions: Some(70_000),
            functions: vec![("relu".into(), 60_000), ("setup".into(), 10_000)],
            accesses: Some(counts),
            copies: Some(CopyTimeline {
                steps: vec![step("setup", 10_000, false), step("relu", 60_000, true)],
                after: vec![],
                unlogged: 0,
                after_stack_accesses: 0,
            }),
            ..CoreProfile::default()
        };
        let p = Profile {
            isa: "xtensa".into(),
            sbuf_tensors: 0,
            lines: None,
            kernel: "relu".into(),
            cores: vec![core],
        };
        let v: Value = serde_json::from_str(&LaunchTrace::of_profile(&p).to_json()).unwrap();
        let spans: Vec<&Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        let names: Vec<&str> = spans.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "relu",
                "compute",
                "setup",
                "copy in: 4096 B",
                "compute",
                "relu",
                "copy out: 4096 B"
            ]
        );
        let end = |e: &Value| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        // Each function lies inside its compute span, each step starts where the last ended.
        assert_eq!(spans[2]["ts"], spans[1]["ts"]);
        assert!(end(spans[2]) <= end(spans[1]) + 1e-9);
        assert!((spans[3]["ts"].as_f64().unwrap() - end(spans[1])).abs() < 1e-9);
        assert_eq!(spans[3]["args"]["bytes"], 4096);
        assert_eq!(spans[6]["args"]["direction"], "out");
        assert!(
            (end(spans[6]) - end(spans[0])).abs() < 1e-6,
            "the steps fill the kernel"
        );
    }

    #[test]
    fn a_host_core_draws_its_measured_copies_and_its_samples_nested_as_they_called() {
        use nrt_pool_engine::profile::{MeasuredCopy, MeasuredTimeline};
        let st = |fs: &[&str]| fs.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        // 10 µs between samples; a copy from 30 to 35 µs; a gap from 60 to 100 µs.
        let m = MeasuredTimeline {
            interval_ns: 10_000,
            samples: vec![
                (10_000, st(&["k", "tile"])),
                (20_000, st(&["k", "tile", "clamp"])),
                (30_000, st(&["k", "tile"])),
                (40_000, st(&["k", "tile"])),
                (50_000, st(&["k"])),
                (100_000, st(&["k"])),
            ],
            copies: vec![MeasuredCopy {
                start_ns: 30_000,
                end_ns: 35_000,
                out: true,
                bytes: 2048,
                copies: 1,
            }],
            unlogged: 2,
        };
        let p = Profile {
            isa: "host".into(),
            sbuf_tensors: 0,
            lines: None,
            kernel: "relu".into(),
            cores: vec![CoreProfile {
                core: 3,
                wall: Some(std::time::Duration::from_micros(110)),
                measured: Some(m),
                ..CoreProfile::default()
            }],
        };
        let v: Value = serde_json::from_str(&LaunchTrace::of_profile(&p).to_json()).unwrap();
        let spans: Vec<(String, String, f64, f64)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                assert_eq!(e["tid"], 3);
                (
                    e["name"].as_str().unwrap().to_string(),
                    e["cat"].as_str().unwrap().to_string(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        let find = |name: &str, at: f64| {
            spans
                .iter()
                .find(|s| s.0 == name && (s.2 - at).abs() < 1e-9)
                .unwrap_or_else(|| panic!("{name} at {at}: {spans:?}"))
                .3
        };
        // The kernel holds the counts; the copy lies where it ran.
        let kernel = &v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["cat"] == "kernel")
            .unwrap()["args"];
        assert_eq!(
            (
                kernel["samples"].as_u64(),
                kernel["copies_not_timed"].as_u64()
            ),
            (Some(6), Some(2))
        );
        assert_eq!(find("copy out: 2048 B", 30.0), 5.0);
        assert_eq!((find("compute", 0.0), find("compute", 35.0)), (30.0, 75.0));
        // Before the copy: k and tile over the three samples, clamp inside tile.
        assert_eq!(
            (find("k", 0.0), find("tile", 0.0), find("clamp", 10.0)),
            (30.0, 30.0, 10.0)
        );
        // After it: tile again; the gap (60-100 µs) ends k, which begins again.
        assert_eq!(
            (find("k", 35.0), find("tile", 35.0), find("k", 90.0)),
            (15.0, 5.0, 10.0)
        );
        assert!(
            !spans
                .iter()
                .any(|s| s.1 == "function" && s.2 < 35.0 && s.2 + s.3 > 30.0 + 1e-9),
            "no function span crosses the copy: {spans:?}"
        );
    }
}
