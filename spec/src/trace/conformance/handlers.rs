//! The lifecycle properties the engines' traces show: "a handler succeeds
//! once per digest per start" (the rule the model's ghost keeps, from
//! [`crate::lifecycle::rerun`]) and "one replica runs an object's handlers
//! at a time".

use std::collections::BTreeMap;

use super::{engines, At, Options, Rule, Violation};
use crate::lifecycle::rerun::{HandlerKey, Returns};
use crate::lifecycle::trace::{EngineHeader, EngineRecord};
use crate::lifecycle::{Effect, Input, Outcome, RunId};
use crate::trace::Trace;

pub(super) fn check(traces: &[&Trace], options: &Options, out: &mut Vec<Violation>) {
    for (trace, header, records) in engines(traces) {
        reruns(trace, header, records, out);
    }
    overlaps(traces, options, out);
}

/// A handler as an engine's trace names it: its id, and a sub-handler's
/// parent.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    handler: String,
    parent: Option<String>,
}

impl HandlerKey for Named {
    fn is_top(&self) -> bool {
        self.parent.is_none()
    }

    fn is_sub_of(&self, top: &Self) -> bool {
        self.parent.as_ref() == Some(&top.handler)
    }
}

/// The returns of one engine's trace that repeat a success.
fn reruns(trace: usize, header: &EngineHeader, records: &[EngineRecord], out: &mut Vec<Violation>) {
    // Each run's handler and digest, from its invocation.
    let mut runs: BTreeMap<RunId, (Named, String)> = BTreeMap::new();
    let mut returns: Returns<Named, String, At> = Returns::default();
    for (step, record) in records.iter().enumerate() {
        let at = At { trace, step };
        match &record.input {
            // An object made again under the name is another object.
            Input::Gone => returns.clear(),
            Input::HandlerDone { run, outcome, .. } => {
                if let Some((handler, digest)) = runs.get(run).cloned() {
                    let success = *outcome == Outcome::Success;
                    let name = handler.handler.clone();
                    let start = run.incarnation;
                    if let Some(first) =
                        returns.returned(handler, start, digest.clone(), success, at)
                    {
                        out.push(Violation {
                            rule: Rule::HandlerSucceedsOnce,
                            places: vec![first, at],
                            what: format!(
                                "handler {name} ran again on digest {digest} after succeeding \
                                 on it"
                            ),
                        });
                    }
                }
            }
            _ => {}
        }
        for effect in &record.effects {
            if let Effect::Invoke {
                run,
                handler,
                parent,
                essence,
                ..
            } = effect
            {
                let registered = parent.as_ref().unwrap_or(handler);
                let digest = header
                    .config
                    .handler(registered)
                    .map(|spec| spec.digest(essence))
                    .unwrap_or_default();
                let named = Named {
                    handler: handler.clone(),
                    parent: parent.clone(),
                };
                runs.insert(*run, (named, digest));
            }
        }
    }
}

/// A run of a handler: from its invocation to its return or cancel (or
/// the end of its trace), by the wall clock.
struct Span {
    from: u64,
    to: u64,
    begun: At,
    handler: String,
}

/// Runs of one object by two engines (two replicas, or two starts of one)
/// that overlap by more than the clocks' skew.
fn overlaps(traces: &[&Trace], options: &Options, out: &mut Vec<Violation>) {
    let mut by_object: BTreeMap<&str, Vec<(usize, Vec<Span>)>> = BTreeMap::new();
    for (trace, header, records) in engines(traces) {
        by_object
            .entry(header.object.as_str())
            .or_default()
            .push((trace, spans(trace, records)));
    }
    for (object, engines) in by_object {
        for (i, (_, mine)) in engines.iter().enumerate() {
            for (_, theirs) in &engines[i + 1..] {
                for a in mine {
                    for b in theirs {
                        let overlap = a.to.min(b.to).saturating_sub(a.from.max(b.from));
                        if overlap > options.skew {
                            out.push(Violation {
                                rule: Rule::OneReplicaAtATime,
                                places: vec![a.begun, b.begun],
                                what: format!(
                                    "{object}: runs of {} and {} overlapped for {overlap} ms",
                                    a.handler, b.handler
                                ),
                            });
                        }
                    }
                }
            }
        }
    }
}

/// The runs of an engine's trace, by the wall clock.
fn spans(trace: usize, records: &[EngineRecord]) -> Vec<Span> {
    let mut open: BTreeMap<RunId, Span> = BTreeMap::new();
    let mut done = Vec::new();
    for (step, record) in records.iter().enumerate() {
        if let Input::HandlerDone { run, .. } = &record.input {
            if let Some(span) = open.remove(run) {
                done.push(Span {
                    to: record.at,
                    ..span
                });
            }
        }
        for effect in &record.effects {
            match effect {
                Effect::Invoke { run, handler, .. } => {
                    let span = Span {
                        from: record.at,
                        to: record.at,
                        begun: At { trace, step },
                        handler: handler.clone(),
                    };
                    open.insert(*run, span);
                }
                Effect::Cancel { run } => {
                    if let Some(span) = open.remove(run) {
                        done.push(Span {
                            to: record.at,
                            ..span
                        });
                    }
                }
                _ => {}
            }
        }
    }
    let end = records.last().map_or(0, |r| r.at);
    done.extend(open.into_values().map(|span| Span { to: end, ..span }));
    done
}
