//! Checking mode's findings (parity differences among them) and device faults as a SARIF
//! 2.1.0 log (`nrt-pool run --report FILE`), the format code-scanning services read:
//! one result per finding, its location the source line it is about, suppressed findings
//! kept with the suppression that matched them.

use std::path::Path;

use nrt_pool_engine::check::{Check, CheckReport, Finding, SourceLine, Suppressions};
use nrt_pool_engine::DeviceFault;
use serde_json::{json, Value};

/// What the SARIF log's rules say of each check (and of a fault).
fn rules() -> Vec<Value> {
    let described = |check: Check| match check {
        Check::Init => {
            "Output elements no core writes, or that depend on memory the kernel never wrote"
        }
        Check::Race => {
            "Output or tensor bytes more than one core writes, or one reads and another writes"
        }
        Check::Memory => "Heap misuse: overruns, double frees, leaks, writes into inputs",
        Check::Rules => {
            "The device's rules: accessors while cores run, arithmetic corners, get_dst_tensor"
        }
        Check::Cores => "Output that differs when the launch runs on another core count",
        Check::Parity => {
            "Output, stdout or faults that differ between the host build and the device build"
        }
        Check::Leftovers => "Output that depends on what an earlier launch left",
    };
    let mut rules: Vec<Value> = Check::ALL
        .iter()
        .map(|&c| {
            json!({
                "id": c.name(),
                "shortDescription": {"text": described(c)},
            })
        })
        .collect();
    rules.push(json!({
        "id": "fault",
        "shortDescription": {"text": "A device fault: the launch stopped"},
    }));
    rules
}

/// A source line as a SARIF location (an absolute path as a `file://` URI).
fn location(at: &SourceLine) -> Value {
    let uri = if Path::new(&at.file).is_absolute() {
        format!("file://{}", at.file)
    } else {
        at.file.clone()
    };
    json!({
        "physicalLocation": {
            "artifactLocation": {"uri": uri},
            "region": {"startLine": at.line.max(1)},
        }
    })
}

/// A SARIF log being gathered: results of one or more calls.
#[derive(Default)]
pub struct SarifLog {
    results: Vec<Value>,
}

impl SarifLog {
    fn finding(f: &Finding) -> Value {
        let mut r = json!({
            "ruleId": f.check.name(),
            "level": "error",
            "message": {"text": f.to_string()},
        });
        if let Some(at) = &f.source {
            r["locations"] = json!([location(at)]);
        }
        r
    }

    /// A call's findings, and those its suppressions matched (marked so, with the entry).
    pub fn add_report(&mut self, report: &CheckReport, suppressions: Option<&Suppressions>) {
        for f in &report.findings {
            self.results.push(SarifLog::finding(f));
        }
        for (f, i) in &report.suppressed {
            let mut r = SarifLog::finding(f);
            let justification = suppressions
                .and_then(|s| s.entries().get(*i).map(|e| (s, e)))
                .map_or_else(
                    || "a suppression entry".to_string(),
                    |(s, e)| format!("{}:{}: {}", s.file, e.line, e.text),
                );
            r["suppressions"] = json!([{"kind": "external", "justification": justification}]);
            self.results.push(r);
        }
    }

    /// A device fault, at its innermost frame in the op's own code where the stack names
    /// one.
    pub fn add_fault(&mut self, f: &DeviceFault) {
        let mut r = json!({
            "ruleId": "fault",
            "level": "error",
            "message": {"text": f.to_string()},
        });
        let at = f.shown_frame().and_then(|s| {
            Some(SourceLine {
                file: s.file.clone()?,
                line: s.line?,
            })
        });
        if let Some(at) = at {
            r["locations"] = json!([location(&at)]);
        }
        self.results.push(r);
    }

    /// The log as JSON text.
    pub fn to_json(&self) -> String {
        let log = json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {
                    "driver": {
                        "name": "nrt-pool",
                        "informationUri": "https://github.com/aws-neuron/aws-neuron-sdk",
                        "version": env!("CARGO_PKG_VERSION"),
                        "rules": rules(),
                    }
                },
                "results": self.results,
            }]
        });
        serde_json::to_string_pretty(&log).expect("a JSON value prints")
    }

    /// Writes the log to `path` whole (a temporary file beside it, renamed over it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("sarif.tmp");
        std::fs::write(&tmp, self.to_json())?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_faults_and_suppressed_findings_become_results() {
        let supp = Suppressions::parse("s.supp", "init tensor=\"the output\"").unwrap();
        let f = |check| Finding {
            check,
            kernel: "relu".into(),
            cores: vec![],
            tensor: "the output".into(),
            what: "never written by any core".into(),
            ranges: vec![(3, 4)],
            range_count: 1,
            elements: 1,
            source: Some(SourceLine {
                file: "/src/relu.cpp".into(),
                line: 12,
            }),
        };
        let report = CheckReport {
            findings: vec![f(Check::Race)],
            suppressed: vec![(f(Check::Init), 0)],
            ..CheckReport::default()
        };
        let mut log = SarifLog::default();
        log.add_report(&report, Some(&supp));
        let v: Value = serde_json::from_str(&log.to_json()).unwrap();
        assert_eq!(v["version"], "2.1.0");
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0]["ruleId"], "race");
        let loc = &results[0]["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "file:///src/relu.cpp");
        assert_eq!(loc["region"]["startLine"], 12);
        assert_eq!(results[1]["ruleId"], "init");
        assert_eq!(results[1]["suppressions"][0]["kind"], "external");
        assert!(results[1]["suppressions"][0]["justification"]
            .as_str()
            .unwrap()
            .starts_with("s.supp:1: init"));
        let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), Check::ALL.len() + 1);
    }
}
