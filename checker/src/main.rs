//! `steadfast`: list, check and explore the registered models.
//!
//! Exit codes of `check`: 0 every property holds; 1 a property is violated;
//! 2 the command line or a model's declarations are wrong; 3 a bound stopped
//! the check before it was complete (and nothing was violated).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use steadfast_checker::registry::{self, Entry, RegistryError};
use steadfast_checker::{CheckOptions, Progress, RenderedReport, Stuttering, Verdict};

mod print;

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
    List,
    /// Check models: every property, safety and liveness under fairness.
    Check {
        /// The model to check; every registered model when left out.
        model: Option<String>,
        /// The variant to check; the model's first (default) one when left out.
        #[arg(long)]
        variant: Option<String>,
        /// The scenario to check; every default scenario when left out.
        #[arg(long)]
        scenario: Option<String>,
        /// Exploring threads; every core when left out.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        threads: Option<u16>,
        /// Stop after this many distinct states (the result is then incomplete).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..4_294_967_294))]
        max_states: Option<u32>,
        /// Stop exploring after this many seconds (the result is then incomplete).
        #[arg(long, value_parser = parse_seconds)]
        timeout: Option<Duration>,
        /// Print the results as JSON on stdout instead of tables.
        #[arg(long)]
        json: bool,
        /// Which states may stutter forever: `anywhere` (TLA+: progress comes
        /// only from declared fairness) or `when-stuck` (only a state without
        /// successors; assumes every behaviour moves while it can).
        #[arg(long, value_enum, default_value_t = StutterArg::Anywhere)]
        stuttering: StutterArg,
        /// Also report whether some reachable state has no successor, as the
        /// verdict "no deadlock".
        #[arg(long)]
        deadlock: bool,
    },
    /// Serve stateright's Explorer for one model, to walk its states by hand.
    Explore {
        /// The model to explore.
        model: String,
        /// The variant; the model's first (default) one when left out.
        #[arg(long)]
        variant: Option<String>,
        /// The scenario; the model's first one when left out.
        #[arg(long)]
        scenario: Option<String>,
        /// The address to serve on.
        #[arg(long, default_value = "127.0.0.1:3000")]
        bind: SocketAddr,
    },
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

fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

const EXIT_VIOLATED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_INCOMPLETE: u8 = 3;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List => {
            print::list(registry::registry());
            ExitCode::SUCCESS
        }
        Command::Check {
            model,
            variant,
            scenario,
            threads,
            max_states,
            timeout,
            json,
            stuttering,
            deadlock,
        } => {
            let options = CheckOptions {
                threads: threads.map_or(CheckOptions::default().threads, usize::from),
                max_states,
                timeout,
                safety_only: false,
                stuttering: stuttering.into(),
                deadlock,
            };
            match check(model, variant, scenario, &options, json) {
                Ok(code) => code,
                Err(error) => usage_error(&error),
            }
        }
        Command::Explore {
            model,
            variant,
            scenario,
            bind,
        } => {
            let result = lookup(&model).and_then(|entry| {
                let variant = variant.unwrap_or_else(|| entry.variants()[0].0.to_string());
                let scenario = scenario.unwrap_or_else(|| entry.scenarios()[0].0.to_string());
                eprintln!(
                    "serving the Explorer for {model} (variant {variant}, scenario {scenario}) on http://{bind}/"
                );
                Ok(entry.explore(&variant, &scenario, bind)?)
            });
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => usage_error(&error),
            }
        }
    }
}

fn usage_error(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(EXIT_USAGE)
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
    #[error("failed to write the JSON report: {0}")]
    Json(#[from] serde_json::Error),
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

fn jobs(
    model: Option<String>,
    variant: Option<String>,
    scenario: Option<String>,
) -> Result<Vec<Job>, CommandError> {
    let entries = match &model {
        Some(name) => vec![lookup(name)?],
        None if variant.is_some() || scenario.is_some() => return Err(CommandError::NeedsModel),
        None => registry::registry().to_vec(),
    };
    let mut jobs = Vec::new();
    for entry in entries {
        let variant = variant
            .clone()
            .unwrap_or_else(|| entry.variants()[0].0.to_string());
        let scenarios: Vec<String> = match &scenario {
            Some(s) => vec![s.clone()],
            None => entry
                .scenarios()
                .into_iter()
                .filter(|(_, _, by_default)| *by_default)
                .map(|(name, _, _)| name.to_string())
                .collect(),
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

fn check(
    model: Option<String>,
    variant: Option<String>,
    scenario: Option<String>,
    options: &CheckOptions,
    json: bool,
) -> Result<ExitCode, CommandError> {
    let mut results = Vec::new();
    for job in jobs(model, variant, scenario)? {
        let title = format!(
            "{} (variant {}, scenario {})",
            job.entry.name(),
            job.variant,
            job.scenario
        );
        let meter = print::Meter::new(&title, std::io::stderr().is_terminal());
        let progress = |p: &Progress| meter.update(p);
        let report = job
            .entry
            .check(&job.variant, &job.scenario, options, Some(&progress))?;
        meter.finish(&report);
        if !json {
            print::report(&title, job.entry, &job.variant, &job.scenario, &report);
        }
        results.push((job, report));
    }
    if json {
        let value: Vec<_> = results
            .iter()
            .map(|(job, report)| {
                serde_json::json!({
                    "model": job.entry.name(),
                    "variant": job.variant,
                    "scenario": job.scenario,
                    "report": report,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
    }
    Ok(exit_code(results.iter().map(|(_, report)| report)))
}

fn exit_code<'a>(reports: impl Iterator<Item = &'a RenderedReport>) -> ExitCode {
    let mut incomplete = false;
    for report in reports {
        for property in &report.properties {
            match property.verdict {
                Verdict::Violated => return ExitCode::from(EXIT_VIOLATED),
                Verdict::Unknown => incomplete = true,
                Verdict::Holds => {}
            }
        }
        incomplete |= report.stopped.is_some();
    }
    if incomplete {
        ExitCode::from(EXIT_INCOMPLETE)
    } else {
        ExitCode::SUCCESS
    }
}
