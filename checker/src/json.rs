//! What `--json` prints: one document per command, described by
//! `checker/steadfast-report.schema.json`.

use serde::Serialize;
use serde_json::{json, Value};
use steadfast_checker::registry::Entry;
use steadfast_checker::{CheckOptions, RenderedReport, Stuttering, Verdict};

/// The version of the JSON documents' shape.
const FORMAT: u32 = 1;

/// One model, variant and scenario checked, with its report.
#[derive(Serialize)]
pub struct Run<'a> {
    pub model: &'static str,
    pub variant: &'a str,
    pub scenario: &'a str,
    #[serde(flatten)]
    pub report: &'a RenderedReport,
}

fn document(command: &str, body: Value) -> String {
    let mut document = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "format": FORMAT,
        "command": command,
    });
    if let (Some(document), Value::Object(body)) = (document.as_object_mut(), body) {
        document.extend(body);
    }
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

/// The document of `check`: the bounds it ran under, a summary, and each
/// run's report.
pub fn check(options: &CheckOptions, runs: &[Run<'_>], exit_code: u8) -> String {
    let count = |verdict: Verdict| {
        runs.iter()
            .flat_map(|run| &run.report.properties)
            .filter(|p| p.verdict == verdict)
            .count()
    };
    let stuttering = match options.stuttering {
        Stuttering::Anywhere => "anywhere",
        Stuttering::WhenStuck => "when-stuck",
    };
    document(
        "check",
        json!({
            "bounds": {
                "threads": options.threads,
                "max_states": options.max_states,
                "timeout_seconds": options.timeout.map(|t| t.as_secs_f64()),
                "stuttering": stuttering,
                "deadlock": options.deadlock,
                "safety_only": options.safety_only,
            },
            "summary": {
                "exit_code": exit_code,
                "runs": runs.len(),
                "holds": count(Verdict::Holds),
                "violated": count(Verdict::Violated),
                "unknown": count(Verdict::Unknown),
                "not_checked": count(Verdict::NotChecked),
                "complete": runs.iter().all(|run| run.report.stopped.is_none()),
            },
            "results": runs,
        }),
    )
}

/// The document of `list`: every model with its variants and scenarios.
pub fn list(entries: &[&dyn Entry]) -> String {
    let models: Vec<Value> = entries
        .iter()
        .map(|entry| {
            let variants: Vec<Value> = entry
                .variants()
                .into_iter()
                .enumerate()
                .map(
                    |(i, (name, about))| json!({ "name": name, "about": about, "default": i == 0 }),
                )
                .collect();
            let scenarios: Vec<Value> = entry
                .scenarios()
                .into_iter()
                .map(|(name, about, by_default)| {
                    json!({ "name": name, "about": about, "default": by_default })
                })
                .collect();
            json!({
                "name": entry.name(),
                "about": entry.about(),
                "variants": variants,
                "scenarios": scenarios,
            })
        })
        .collect();
    document("list", json!({ "models": models }))
}
