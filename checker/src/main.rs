//! `steadfast`: list, check and explore the registered models, and replay
//! traces a runtime recorded.
//!
//! Exit codes of `check`: 0 every property holds; 1 a property is violated;
//! 2 the command line or a model's declarations are wrong, or the report
//! could not be written; 3 a bound (or Ctrl-C) stopped the check before it
//! was complete, and nothing was violated. A reader that stops reading (a
//! broken pipe) ends the output quietly; the check still runs to its end
//! and its exit code is the same.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use steadfast_checker::memory::{self, Size};
use steadfast_checker::registry::{self, Entry, RegistryError};
use steadfast_checker::replay;
use steadfast_checker::{
    CheckOptions, Interrupt, Progress, RenderedReport, Spilling, Stuttering, Verdict,
};

/// Writes a line to standard error. A closed or full stderr is ignored
/// (`eprintln!` would panic): progress and notes are not the report.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod json;
mod print;
mod web;

/// mimalloc rather than glibc's allocator: a check clones, hashes and
/// drops a model's states by the million, each a dozen small heap blocks,
/// and glibc's `malloc` and `free` took two fifths of its time
/// (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "steadfast",
    version,
    about = "Check steadfast's protocol models for safety and fair liveness"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the registered models with their variants and scenarios.
    List {
        /// Print the list as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Check models: every property, safety and liveness under fairness.
    Check(CheckArgs),
    /// Serve stateright's Explorer for one model, to walk its states by hand,
    /// and beside it the check's report (`/steadfast/`): every verdict, and
    /// each counterexample with its cycle and the fairness it honours.
    Explore {
        /// The model to explore.
        model: String,
        /// The variant; the model's first (default) one when left out.
        #[arg(long)]
        variant: Option<String>,
        /// The scenario; the model's first one when left out.
        #[arg(long)]
        scenario: Option<String>,
        /// The address to serve on (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:3000")]
        bind: SocketAddr,
        /// The memory bound of the report's check, as `check --memory`.
        #[arg(long, value_parser = parse_size)]
        memory: Option<Size>,
    },
    /// Count how often actions enabled together commute (each is still
    /// enabled after the other and both orders meet), and how many steps a
    /// partial-order reduction could leave out at most: a study of the
    /// models, not a reduction (docs/checker.md, "Commutation census").
    Census {
        /// The model.
        model: String,
        /// The variant; the model's first (default) one when left out.
        #[arg(long)]
        variant: Option<String>,
        /// The scenario; every default scenario when left out.
        #[arg(long)]
        scenario: Option<String>,
        /// Examine at most this many states of each scenario.
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        max_states: u64,
    },
    /// Replay the traces a runtime recorded (leasequeue schedulers and
    /// controllers, lifecycle engines): every role's steps through its
    /// `step`, then every trace together against the protocols' safety
    /// properties and the world's rules (messages, etcd, the Kubernetes
    /// API). Exits 0 when every step agrees and every rule holds, 1 when a
    /// step diverges or a rule is broken, 2 when a trace cannot be read.
    Replay {
        /// The traces (JSON lines, one role's run each): give every node's
        /// traces of one run together.
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// How far apart the nodes' clocks may be, in milliseconds.
        #[arg(long, default_value_t = replay::Options::default().skew)]
        skew: u64,
        /// Fail only on the world's rules, not the protocols' properties:
        /// for a run of a legacy variant, whose model breaks them by design.
        #[arg(long)]
        world_only: bool,
    },
}

#[derive(clap::Args)]
struct CheckArgs {
    /// The model to check; every registered model when left out.
    model: Option<String>,
    /// The variant to check; the model's first (default) one when left out.
    #[arg(long)]
    variant: Option<String>,
    /// The scenario to check; every default scenario when left out.
    #[arg(long)]
    scenario: Option<String>,
    /// Exploring threads (at most four per core); every core when left out.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Stop after this many distinct states (the result is then incomplete).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..4_294_967_294))]
    max_states: Option<u32>,
    /// Stop exploring after this many seconds (the result is then incomplete).
    #[arg(long, value_parser = parse_seconds)]
    timeout: Option<Duration>,
    /// The memory the check may hold, as 512M or 20G. Past it, the graph
    /// and the frontier go to disk (--spill-dir) and the check goes on,
    /// more slowly, and then the set of states seen too; past it with all
    /// of them on disk, or with --no-spill, it stops (the result is then
    /// incomplete, exit 3) rather than be killed by the kernel. Default:
    /// two thirds of the memory the machine has free as the check starts.
    #[arg(long, value_parser = parse_size)]
    memory: Option<Size>,
    /// Where the graph, the frontier and the seen set go past --memory: unnamed temporary
    /// files, so nothing is left there. Default: the system's temporary
    /// directory ($TMPDIR, else /tmp).
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<std::path::PathBuf>,
    /// Stop at --memory instead of spilling to disk.
    #[arg(long, conflicts_with = "spill_dir")]
    no_spill: bool,
    /// Which states may stutter forever: `anywhere` (TLA+: progress comes
    /// only from declared fairness) or `when-stuck` (only a state without
    /// successors; assumes every behaviour moves while it can).
    #[arg(long, value_enum, default_value_t = StutterArg::Anywhere)]
    stuttering: StutterArg,
    /// Also report whether some reachable state has no successor, as the
    /// verdict "no deadlock".
    #[arg(long)]
    deadlock: bool,
    /// Check the safety properties only (`always`, `sometimes`, and
    /// `--deadlock`): no edges are kept and no fair cycle is searched for,
    /// so a larger world fits. Liveness properties are reported as "not
    /// checked", never as holding.
    #[arg(long, conflicts_with = "stuttering")]
    safety: bool,
    /// Explore every state, even where the model declares interchangeable
    /// ids (schedulers, processes) whose renamings it could explore one of.
    #[arg(long)]
    no_symmetry: bool,
    /// Print the results as JSON on stdout instead of tables.
    #[arg(long)]
    json: bool,
    /// Show changes to ghost state (the model's `ghost` field) in
    /// counterexamples.
    #[arg(long)]
    ghost: bool,
    /// Show the whole state after every step of a counterexample.
    #[arg(long)]
    full: bool,
    /// The base URL of the Explorer that counterexample links point to.
    #[arg(long, default_value = "http://127.0.0.1:3000")]
    explorer: String,
}

/// `--stuttering`, as [`Stuttering`] is spelled on the command line.
#[derive(Clone, Copy, clap::ValueEnum)]
enum StutterArg {
    Anywhere,
    WhenStuck,
}

impl From<StutterArg> for Stuttering {
    fn from(arg: StutterArg) -> Self {
        match arg {
            StutterArg::Anywhere => Stuttering::Anywhere,
            StutterArg::WhenStuck => Stuttering::WhenStuck,
        }
    }
}

/// The longest `--timeout`: a year.
const MAX_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= MAX_TIMEOUT_SECS => {
            Ok(Duration::from_secs_f64(secs))
        }
        Ok(secs) if secs > MAX_TIMEOUT_SECS => Err(format!(
            "{text} seconds is more than a year; leave --timeout out for no limit"
        )),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

fn parse_size(text: &str) -> Result<Size, String> {
    text.parse()
}

/// The memory bound of a check: `--memory`, or else two thirds of what the
/// machine has free now, on top of what the process holds: the check
/// passes its bound by what is in flight when it stops and by the search
/// of the graph it found (a third more, measured), which must fit too.
/// `None`, said on stderr, where the system does not tell.
fn memory_bound(asked: Option<Size>) -> Option<u64> {
    if let Some(Size(bytes)) = asked {
        return Some(bytes);
    }
    match (memory::available(), memory::resident()) {
        (Some(free), Some(held)) => Some(held + free / 3 * 2),
        _ => {
            say!("warning: no memory bound: the system does not say how much memory is free");
            None
        }
    }
}

const EXIT_VIOLATED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_INCOMPLETE: u8 = 3;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List { json } => {
            let text = if json {
                json::list(registry::registry())
            } else {
                print::list(registry::registry())
            };
            let mut out = Output::default();
            out.write(&text);
            out.finish(ExitCode::SUCCESS)
        }
        Command::Check(args) => check(&args),
        Command::Replay {
            files,
            skew,
            world_only,
        } => replay(&files, skew, world_only),
        Command::Census {
            model,
            variant,
            scenario,
            max_states,
        } => census(&model, variant, scenario, max_states),
        Command::Explore {
            model,
            variant,
            scenario,
            bind,
            memory,
        } => {
            let result = lookup(&model).map_err(|e| e.to_string()).and_then(|entry| {
                let variant = variant.unwrap_or_else(|| entry.variants()[0].0.to_string());
                let scenario = scenario.unwrap_or_else(|| entry.scenarios()[0].0.to_string());
                let title = format!("{model} (variant {variant}, scenario {scenario})");
                let serving = |address: SocketAddr| {
                    say!(
                        "serving the check's report on http://{address}{} and the Explorer \
                         for {title} on http://{address}/",
                        web::REPORT_PATH
                    );
                };
                let memory = memory_bound(memory);
                web::serve(entry, variant, scenario, bind, memory, serving)
                    .map_err(|e| e.to_string())
            });
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => usage_error(&error),
            }
        }
    }
}

fn census(
    model: &str,
    variant: Option<String>,
    scenario: Option<String>,
    max_states: u64,
) -> ExitCode {
    let entry = match lookup(model) {
        Ok(entry) => entry,
        Err(error) => return usage_error(&error),
    };
    let variant = variant.unwrap_or_else(|| entry.variants()[0].0.to_string());
    let scenarios = match scenario {
        Some(scenario) => vec![scenario],
        None => default_scenarios(entry),
    };
    let mut runs = Vec::new();
    for scenario in scenarios {
        let started = std::time::Instant::now();
        match entry.census(&variant, &scenario, max_states) {
            Ok(census) => {
                say!(
                    "{scenario}: {} states, {} steps in {:.1?}",
                    census.states,
                    census.steps,
                    started.elapsed()
                );
                runs.push((scenario, census));
            }
            Err(error) => return usage_error(&error),
        }
    }
    let mut out = Output::default();
    out.write(&print::census(
        &format!("{model} (variant {variant})"),
        &runs,
    ));
    out.finish(ExitCode::SUCCESS)
}

fn replay(files: &[std::path::PathBuf], skew: u64, world_only: bool) -> ExitCode {
    let traces = match files
        .iter()
        .map(|path| replay::read(path))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(traces) => traces,
        Err(error) => return usage_error(&error),
    };
    let report = replay::check(&traces, &replay::Options { skew });
    let mut out = Output::default();
    out.write(&report.render(&traces));
    let code = if report.passes(!world_only) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_VIOLATED)
    };
    out.finish(code)
}

fn usage_error(error: &dyn std::fmt::Display) -> ExitCode {
    say!("error: {error}");
    ExitCode::from(EXIT_USAGE)
}

/// Standard output that a closed pipe silences and that remembers a failed
/// write.
#[derive(Default)]
struct Output {
    closed: bool,
    failed: Option<std::io::Error>,
}

impl Output {
    /// Writes `text`, unless the reader is gone or a write failed before.
    fn write(&mut self, text: &str) {
        if self.closed || self.failed.is_some() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        match stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => self.closed = true,
            Err(error) => self.failed = Some(error),
        }
    }

    /// `code`, or a usage error if the output could not be written.
    fn finish(self, code: ExitCode) -> ExitCode {
        match self.failed {
            Some(error) => usage_error(&format!("failed to write to standard output: {error}")),
            None => code,
        }
    }
}

/// Why a model could not be found or run.
#[derive(Debug, thiserror::Error)]
enum CommandError {
    #[error(
        "no model named {given:?}; the registered models are: {choices} (see `steadfast list`)"
    )]
    UnknownModel { given: String, choices: String },
    #[error("--variant and --scenario need a MODEL: they name one model's variant and scenario")]
    NeedsModel,
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

fn lookup(name: &str) -> Result<&'static dyn Entry, CommandError> {
    registry::find(name).ok_or_else(|| CommandError::UnknownModel {
        given: name.to_string(),
        choices: registry::registry()
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// One check to run: a model, a variant, a scenario.
struct Job {
    entry: &'static dyn Entry,
    variant: String,
    scenario: String,
}

/// The scenarios of `entry` that run when none is named.
fn default_scenarios(entry: &dyn Entry) -> Vec<String> {
    entry
        .scenarios()
        .into_iter()
        .filter(|(_, _, by_default)| *by_default)
        .map(|(name, _, _)| name.to_string())
        .collect()
}

fn jobs(args: &CheckArgs) -> Result<Vec<Job>, CommandError> {
    let entries = match &args.model {
        Some(name) => vec![lookup(name)?],
        None if args.variant.is_some() || args.scenario.is_some() => {
            return Err(CommandError::NeedsModel)
        }
        None => registry::registry().to_vec(),
    };
    let mut jobs = Vec::new();
    for entry in entries {
        let variant = args
            .variant
            .clone()
            .unwrap_or_else(|| entry.variants()[0].0.to_string());
        let scenarios = match &args.scenario {
            Some(s) => vec![s.clone()],
            None => default_scenarios(entry),
        };
        for scenario in scenarios {
            jobs.push(Job {
                entry,
                variant: variant.clone(),
                scenario,
            });
        }
    }
    Ok(jobs)
}

fn check(args: &CheckArgs) -> ExitCode {
    let interrupt = Interrupt::new();
    let on_ctrl_c = interrupt.clone();
    // A first Ctrl-C stops the check as a bound does; a second ends the
    // process at once.
    let handler = ctrlc::set_handler(move || {
        if on_ctrl_c.trigger() {
            std::process::exit(130);
        }
    });
    if let Err(error) = handler {
        say!("warning: Ctrl-C will end the check without a report: {error}");
    }
    let options = CheckOptions {
        threads: args
            .threads
            .map_or(CheckOptions::default().threads, usize::from),
        max_states: args.max_states,
        timeout: args.timeout,
        memory: memory_bound(args.memory),
        spill: (!args.no_spill).then(|| Spilling {
            dir: args.spill_dir.clone().unwrap_or_else(std::env::temp_dir),
            from_start: false,
        }),
        safety_only: args.safety,
        stuttering: args.stuttering.into(),
        deadlock: args.deadlock,
        interrupt: Some(interrupt.clone()),
        symmetry: !args.no_symmetry,
    };
    let jobs = match jobs(args) {
        Ok(jobs) => jobs,
        Err(error) => return usage_error(&error),
    };
    let detail = print::Detail {
        ghost: args.ghost,
        full: args.full,
        explorer: args.explorer.clone(),
    };
    let started = std::time::Instant::now();
    let mut out = Output::default();
    let mut printed = print::Printed::default();
    let mut results = Vec::new();
    for job in &jobs {
        if interrupt.is_triggered() {
            break;
        }
        let title = format!(
            "{} (variant {}, scenario {})",
            job.entry.name(),
            job.variant,
            job.scenario
        );
        let meter = print::Meter::new(&title, std::io::stderr().is_terminal());
        let progress = |p: &Progress| meter.update(p);
        let report = match job
            .entry
            .check(&job.variant, &job.scenario, &options, Some(&progress))
        {
            Ok(report) => report,
            Err(error) => {
                meter.abandon();
                return out.finish(usage_error(&error));
            }
        };
        meter.finish(&report);
        if !args.json {
            let job_names = (job.entry, job.variant.as_str(), job.scenario.as_str());
            out.write(&print::report(
                &title,
                job_names,
                &report,
                &detail,
                &mut printed,
            ));
        }
        results.push((job, title, report));
    }
    let code = exit_code(
        results.iter().map(|(_, _, report)| report),
        interrupt.is_triggered(),
    );
    if !args.json && results.len() > 1 {
        let checks: Vec<(String, &RenderedReport)> = results
            .iter()
            .map(|(_, title, report)| (title.clone(), report))
            .collect();
        out.write(&print::summary(&checks, started.elapsed()));
    }
    if args.json {
        let runs: Vec<json::Run<'_>> = results
            .iter()
            .map(|(job, _, report)| json::Run {
                model: job.entry.name(),
                variant: &job.variant,
                scenario: &job.scenario,
                report,
            })
            .collect();
        out.write(&json::check(&options, &runs, code));
    }
    out.finish(ExitCode::from(code))
}

/// The exit code of a check: 1 if something is violated, else 3 if it was
/// incomplete, else 0.
fn exit_code<'a>(reports: impl Iterator<Item = &'a RenderedReport>, interrupted: bool) -> u8 {
    let mut incomplete = interrupted;
    for report in reports {
        for property in &report.properties {
            match property.verdict {
                Verdict::Violated => return EXIT_VIOLATED,
                Verdict::Unknown => incomplete = true,
                // Left out on request: the checked ones decide.
                Verdict::Holds | Verdict::NotChecked => {}
            }
        }
        incomplete |= report.stopped.is_some();
    }
    if incomplete {
        EXIT_INCOMPLETE
    } else {
        0
    }
}
