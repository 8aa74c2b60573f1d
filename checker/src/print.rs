//! What the `steadfast` command prints: listings, progress and reports.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use steadfast_checker::census::Census;
use steadfast_checker::memory::Size;
use steadfast_checker::registry::Entry;
use steadfast_checker::{
    Change, Progress, RenderedEvidence, RenderedReport, RenderedStep, Verdict,
};

/// Appends one line to a `String`, as `println!` prints one.
macro_rules! line {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Every registered model with its variants and scenarios, as `list` prints it.
pub fn list(entries: &[&dyn Entry]) -> String {
    let mut out = String::new();
    for entry in entries {
        line!(out, "{}: {}", entry.name(), entry.about());
        line!(out, "  variants (the first is the default):");
        for (name, about) in entry.variants() {
            line!(out, "    {name:<16} {about}");
        }
        line!(out, "  scenarios:");
        for (name, about, by_default) in entry.scenarios() {
            let note = if by_default { "" } else { " (only when named)" };
            line!(out, "    {name:<16} {about}{note}");
        }
    }
    out
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
                    say!("{}: {text}", self.title);
                }
            }
        }
    }

    /// Clears the spinner of a check that failed to run.
    pub fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    pub fn finish(&self, report: &RenderedReport) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let stats = &report.stats;
        let spilled = match stats.spilled {
            0 => String::new(),
            bytes => format!(", {} spilled to disk", Size(bytes)),
        };
        let liveness = if safety_only(report) {
            "no liveness search (--safety)".to_string()
        } else {
            format!("liveness search {:.2?}", stats.liveness_time)
        };
        say!(
            "{}: {} states, {} edges, depth {}; explored in {:.2?}, {liveness}{spilled}",
            self.title,
            stats.unique_states,
            stats.edges,
            stats.depth,
            stats.explore_time,
        );
    }
}

/// The commutation census of a model's scenarios: per scenario its counts,
/// then per pair of kinds of action, over every scenario, how often they
/// were enabled together and how often they commuted.
pub fn census(title: &str, runs: &[(String, Census)]) -> String {
    let mut out = String::new();
    line!(out, "== commutation census of {title}");
    let percent = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let mut pairs: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    let (mut steps, mut skippable) = (0, 0);
    for (scenario, census) in runs {
        let complete = if census.complete {
            "every state"
        } else {
            "cut short by --max-states"
        };
        line!(
            out,
            "{scenario}: {} states ({complete}), {} steps; {} states with a choice, {} of them \
             with a step that commutes with every other; {} steps ({:.1} %) a reduction could \
             leave out at most",
            census.states,
            census.steps,
            census.branching,
            census.reducible,
            census.skippable,
            percent(census.skippable, census.steps)
        );
        steps += census.steps;
        skippable += census.skippable;
        for pair in &census.pairs {
            let count = pairs.entry((&pair.first, &pair.second)).or_default();
            count.0 += pair.together;
            count.1 += pair.commute;
        }
    }
    if runs.len() > 1 {
        line!(
            out,
            "all: {steps} steps; {skippable} ({:.1} %) a reduction could leave out at most",
            percent(skippable, steps)
        );
    }
    line!(out);
    let mut rows: Vec<_> = pairs.into_iter().collect();
    rows.sort_by_key(|&(_, (together, _))| std::cmp::Reverse(together));
    let width = rows
        .iter()
        .map(|((first, second), _)| first.len() + second.len() + 3)
        .max()
        .unwrap_or(0)
        .max("ACTIONS".len());
    line!(
        out,
        "{:<width$}  {:>12}  {:>12}  SHARE",
        "ACTIONS",
        "TOGETHER",
        "COMMUTING"
    );
    for ((first, second), (together, commute)) in rows {
        line!(
            out,
            "{:<width$}  {together:>12}  {commute:>12}  {:>6.1} %",
            format!("{first} + {second}"),
            percent(commute, together)
        );
    }
    out
}

/// How much of each counterexample to print.
#[derive(Clone, Debug, Default)]
pub struct Detail {
    /// Show changes to ghost state.
    pub ghost: bool,
    /// Show the whole state after every step.
    pub full: bool,
    /// The base URL of a running Explorer, for the links.
    pub explorer: String,
}

/// What earlier counterexamples of this command printed, so that later
/// ones refer to it rather than print it again.
#[derive(Default)]
pub struct Printed {
    /// Initial states listed in full.
    initial_states: Vec<Vec<Change>>,
    /// Per counterexample printed: its property, its steps, and where its
    /// cycle starts.
    paths: Vec<(String, Vec<RenderedStep>, Option<usize>)>,
}

/// The fewest steps a counterexample must share with one printed before to
/// refer to it instead.
const SHARED_STEPS: usize = 2;

/// The closing summary of a `check` that ran several checks: how many ran,
/// how many hold in full, which are violated (and by which properties),
/// which a bound cut short, and the total time.
pub fn summary(checks: &[(String, &RenderedReport)], elapsed: Duration) -> String {
    let mut violated = Vec::new();
    let mut incomplete = Vec::new();
    for (title, report) in checks {
        let broken: Vec<&str> = report
            .properties
            .iter()
            .filter(|p| p.verdict == Verdict::Violated)
            .map(|p| p.name.as_str())
            .collect();
        if !broken.is_empty() {
            violated.push(format!("{title}: {}", broken.join(", ")));
        } else if report.stopped.is_some()
            || report
                .properties
                .iter()
                .any(|p| p.verdict == Verdict::Unknown)
        {
            incomplete.push(title.clone());
        }
    }
    let holding = checks.len() - violated.len() - incomplete.len();
    let mut out = String::new();
    line!(
        out,
        "== summary: {} checks in {:.1?}: {holding} hold, {} violated, {} incomplete",
        checks.len(),
        elapsed,
        violated.len(),
        incomplete.len()
    );
    for title in &violated {
        line!(out, "VIOLATED  {title}");
    }
    for title in &incomplete {
        line!(out, "unknown   {title} (stopped by a bound)");
    }
    if checks.iter().any(|(_, report)| safety_only(report)) {
        line!(out, "(safety only: the checks that hold, hold for their always and sometimes properties; liveness was not checked)");
    }
    out
}

/// One check's report as `check` prints it: a table of verdicts, then each
/// counterexample. Steps that an earlier counterexample in `printed` began
/// with, and initial states it listed, are referred to, not printed again.
pub fn report(
    title: &str,
    job: (&dyn Entry, &str, &str),
    report: &RenderedReport,
    detail: &Detail,
    printed: &mut Printed,
) -> String {
    let (entry, variant, scenario) = job;
    let mut out = String::new();
    line!(out, "== {title}");
    let stats = &report.stats;
    line!(
        out,
        "{} states, {} edges, depth {}",
        stats.unique_states,
        stats.edges,
        stats.depth
    );
    if let Some(bound) = &report.stopped {
        line!(
            out,
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
    line!(out, "{:<width$}  {:<17}  VERDICT", "PROPERTY", "KIND");
    for property in &report.properties {
        let verdict = match property.verdict {
            Verdict::Holds => "holds",
            Verdict::Violated => "VIOLATED",
            Verdict::Unknown => "unknown",
            Verdict::NotChecked => "not checked",
        };
        line!(
            out,
            "{:<width$}  {:<17}  {verdict}",
            property.name,
            property.kind.as_str()
        );
    }
    if safety_only(report) {
        line!(
            out,
            "(liveness not checked: --safety explored for the always and sometimes properties \
             only; the liveness ones are neither proven nor refuted)"
        );
    }
    if report.stopped.is_none() {
        line!(
            out,
            "(the chance that two of these states shared a 64-bit fingerprint, hiding one: {:.1e}, \
             TLC's optimistic estimate)",
            stats.collision_probability
        );
    }
    let base = detail.explorer.trim_end_matches('/');
    for (index, property) in report.properties.iter().enumerate() {
        if property.verdict != Verdict::Violated {
            continue;
        }
        line!(out);
        let Some(evidence) = &property.evidence else {
            line!(
                out,
                "\"{}\" ({}): no reachable state satisfies it",
                property.name,
                property.kind.as_str()
            );
            continue;
        };
        line!(
            out,
            "Counterexample to \"{}\" ({}): {}",
            property.name,
            property.kind.as_str(),
            evidence.headline
        );
        steps(&mut out, evidence, detail, printed);
        printed.paths.push((
            property.name.clone(),
            evidence.steps.clone(),
            evidence.cycle_start,
        ));
        line!(
            out,
            "  Report: {base}/steadfast/#{}",
            property_anchor(index)
        );
        line!(
            out,
            "  Explorer: {base}/{}  (serve both with: steadfast explore {} --variant {variant} \
             --scenario {scenario})",
            evidence.explorer_path,
            entry.name()
        );
    }
    line!(out);
    out
}

fn steps(out: &mut String, evidence: &RenderedEvidence, detail: &Detail, printed: &mut Printed) {
    let visible = |change: &&Change| detail.ghost || !change.ghost;
    // The steps shared with the counterexample printed before that shares
    // the most, up to (not including) the state a cycle starts from, or the
    // last state.
    let last = evidence.cycle_start.unwrap_or(evidence.steps.len() - 1);
    // The earliest of those sharing the most: where the steps were printed.
    let shared = printed
        .paths
        .iter()
        .rev()
        .map(|(name, steps, _)| {
            let common = steps
                .iter()
                .zip(&evidence.steps)
                .take_while(|(a, b)| a.action == b.action && a.changes == b.changes)
                .count();
            (common.min(last), name)
        })
        .max_by_key(|(common, _)| *common)
        .filter(|(common, _)| *common >= SHARED_STEPS);
    let skip = match shared {
        Some((common, name)) => {
            line!(
                out,
                "  steps 0 to {}: as in the counterexample to \"{name}\" above",
                common - 1
            );
            common
        }
        None => 0,
    };
    for (index, step) in evidence.steps.iter().enumerate().skip(skip) {
        match &step.action {
            None => {
                if printed.initial_states.contains(&step.changes) {
                    line!(out, "  step {index}  initial state (as printed above)");
                    continue;
                }
                line!(out, "  step {index}  initial state");
                printed.initial_states.push(step.changes.clone());
            }
            Some(action) => line!(out, "  step {index}  {action}"),
        }
        let changes: Vec<&Change> = step.changes.iter().filter(visible).collect();
        if changes.is_empty() && index > 0 {
            line!(out, "          (nothing changes)");
        }
        for change in changes {
            let field = if change.field.is_empty() {
                "state"
            } else {
                &change.field
            };
            match &change.before {
                None => line!(out, "          {field} = {}", change.after),
                Some(before) => line!(out, "          {field}: {before} -> {}", change.after),
            }
        }
        if detail.full && index > 0 {
            line!(out, "          state after it:");
            for field in step.state.iter().filter(visible) {
                line!(out, "            {} = {}", field.field, field.after);
            }
        }
        if evidence.cycle_start == Some(index) {
            if let Some((name, first, last)) = printed.same_cycle(&evidence.steps[index..]) {
                line!(
                    out,
                    "  -- cycle: from here, the steps {first} to {last} of the counterexample to \"{name}\" above, which return to this state and repeat forever --"
                );
                return;
            }
            line!(
                out,
                "  -- cycle: the steps below return to the state of step {index}, and repeat forever --"
            );
        }
    }
    if evidence.cycle_start.is_some() && !evidence.fairness.is_empty() {
        line!(
            out,
            "  -- fair: each class is taken in the cycle, or disabled in it (a strong one at every step) --"
        );
        for class in &evidence.fairness {
            let mut how = Vec::new();
            if !class.taken.is_empty() {
                how.push(format!("taken at {}", step_list(&class.taken)));
            }
            if !class.disabled.is_empty() {
                how.push(format!("disabled at {}", step_list(&class.disabled)));
            }
            line!(
                out,
                "          {} ({}): {}",
                class.class,
                class.strength,
                how.join("; ")
            );
        }
    }
}

/// Whether `report` is of a safety-only check (`--safety`): its liveness
/// properties were not checked.
fn safety_only(report: &RenderedReport) -> bool {
    report
        .properties
        .iter()
        .any(|p| p.verdict == Verdict::NotChecked)
}

/// Step numbers as words: "step 4", "steps 4, 6", "steps 4 to 7, 9".
fn step_list(steps: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &step in steps {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == step => *end = step,
            _ => runs.push((step, step)),
        }
    }
    let words: Vec<String> = runs
        .iter()
        .map(|&(first, last)| match last - first {
            0 => first.to_string(),
            1 => format!("{first}, {last}"),
            _ => format!("{first} to {last}"),
        })
        .collect();
    let noun = if steps.len() == 1 { "step" } else { "steps" };
    format!("{noun} {}", words.join(", "))
}

/// The anchor of a property's section on the report page: its place in the
/// report.
pub fn property_anchor(index: usize) -> String {
    format!("property-{index}")
}

impl Printed {
    /// A counterexample printed before whose cycle is `cycle` (the state a
    /// cycle starts from, then its steps), step by step and state by state:
    /// its property and the numbers of the cycle's steps there.
    fn same_cycle(&self, cycle: &[RenderedStep]) -> Option<(&str, usize, usize)> {
        let same = |a: &RenderedStep, b: &RenderedStep| a.action == b.action && a.state == b.state;
        self.paths.iter().find_map(|(name, steps, start)| {
            let start = (*start)?;
            let theirs = &steps[start..];
            // The state it starts from, whatever led there; then the same
            // steps through the same states.
            let equal = theirs.len() == cycle.len()
                && cycle.len() > 1
                && theirs[0].state == cycle[0].state
                && theirs[1..].iter().zip(&cycle[1..]).all(|(a, b)| same(a, b));
            equal.then(|| (name.as_str(), start + 1, steps.len() - 1))
        })
    }
}
