//! What the `steadfast` command prints: listings, progress and reports.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use steadfast_checker::registry::Entry;
use steadfast_checker::{Progress, RenderedEvidence, RenderedReport, Verdict};

/// Prints every registered model with its variants and scenarios.
pub fn list(entries: &[&dyn Entry]) {
    for entry in entries {
        println!("{}: {}", entry.name(), entry.about());
        println!("  variants (the first is the default):");
        for (name, about) in entry.variants() {
            println!("    {name:<16} {about}");
        }
        println!("  scenarios:");
        for (name, about, by_default) in entry.scenarios() {
            let note = if by_default { "" } else { " (only when named)" };
            println!("    {name:<16} {about}{note}");
        }
    }
}

/// How often progress lines are written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// Progress of one check on stderr: a spinner on a terminal, a line every
/// few seconds otherwise.
pub struct Meter {
    title: String,
    bar: Option<ProgressBar>,
    last_line: Mutex<Instant>,
}

impl Meter {
    pub fn new(title: &str, terminal: bool) -> Self {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix}: {msg} [{elapsed}]")
            {
                bar.set_style(style);
            }
            bar.set_prefix(title.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Meter {
            title: title.to_string(),
            bar,
            last_line: Mutex::new(Instant::now()),
        }
    }

    pub fn update(&self, progress: &Progress) {
        let text = format!(
            "{} states, {:.0} states/s, depth {}",
            progress.states,
            progress.states_per_second(),
            progress.depth
        );
        match &self.bar {
            Some(bar) => bar.set_message(text),
            None => {
                let Ok(mut last) = self.last_line.lock() else {
                    return;
                };
                if last.elapsed() >= LOG_EVERY {
                    *last = Instant::now();
                    eprintln!("{}: {text}", self.title);
                }
            }
        }
    }

    pub fn finish(&self, report: &RenderedReport) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let stats = &report.stats;
        eprintln!(
            "{}: {} states, {} edges, depth {}; explored in {:.2?}, liveness search {:.2?}",
            self.title,
            stats.unique_states,
            stats.edges,
            stats.depth,
            stats.explore_time,
            stats.liveness_time
        );
    }
}

/// Prints a report: a table of verdicts, then each counterexample.
pub fn report(
    title: &str,
    entry: &dyn Entry,
    variant: &str,
    scenario: &str,
    report: &RenderedReport,
) {
    println!("== {title}");
    let stats = &report.stats;
    println!(
        "{} states, {} edges, depth {}",
        stats.unique_states, stats.edges, stats.depth
    );
    if let Some(bound) = &report.stopped {
        println!(
            "INCOMPLETE: stopped by {bound}; \"unknown\" verdicts are not proofs, \
             violations found are real"
        );
    }
    let width = report
        .properties
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0)
        .max("PROPERTY".len());
    println!("{:<width$}  {:<17}  VERDICT", "PROPERTY", "KIND");
    for property in &report.properties {
        let verdict = match property.verdict {
            Verdict::Holds => "holds",
            Verdict::Violated => "VIOLATED",
            Verdict::Unknown => "unknown",
        };
        println!(
            "{:<width$}  {:<17}  {verdict}",
            property.name,
            property.kind.as_str()
        );
    }
    for property in &report.properties {
        if property.verdict != Verdict::Violated {
            continue;
        }
        println!();
        match &property.evidence {
            Some(evidence) => {
                let what = if evidence.cycle_start.is_some() {
                    "a fair behaviour that ends in a cycle repeated forever"
                } else {
                    "a path to a state where it fails"
                };
                println!(
                    "Counterexample to \"{}\" ({}): {what}",
                    property.name,
                    property.kind.as_str()
                );
                steps(evidence);
                println!(
                    "  Explorer: http://127.0.0.1:3000/{}  (serve it with: steadfast explore {} \
                     --variant {variant} --scenario {scenario})",
                    evidence.explorer_path,
                    entry.name()
                );
            }
            None => println!(
                "\"{}\" ({}): no reachable state satisfies it",
                property.name,
                property.kind.as_str()
            ),
        }
    }
    println!();
}

fn steps(evidence: &RenderedEvidence) {
    for (index, step) in evidence.steps.iter().enumerate() {
        match &step.action {
            None => println!("  step {index}  initial state"),
            Some(action) => println!("  step {index}  {action}"),
        }
        if step.changes.is_empty() {
            println!("          (nothing changes)");
        }
        for change in &step.changes {
            let field = if change.field.is_empty() {
                "state"
            } else {
                &change.field
            };
            match (&change.before, &change.after, index) {
                (_, Some(after), 0) => println!("          {field} = {after}"),
                (Some(before), Some(after), _) => {
                    println!("          {field}: {before} -> {after}")
                }
                (None, Some(after), _) => println!("          {field}: (new) {after}"),
                (Some(before), None, _) => println!("          {field}: {before} -> (gone)"),
                (None, None, _) => {}
            }
        }
        if evidence.cycle_start == Some(index) {
            println!("  -- cycle: the steps below return to the state of step {index}, forever --");
        }
    }
}
