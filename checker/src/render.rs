//! Reports made readable: counterexamples as the changes each step makes,
//! with the stateright Explorer link that opens them, and a serialisable
//! summary for `--json`.

use std::collections::BTreeMap;
use std::fmt::Debug;

use serde::Serialize;
use stateright::Model;

use crate::report::{Evidence, Path, Report, Step};
use crate::{Bound, PropertyKind, Stats, Verdict};

/// One field whose value a step changed, by its path in the state's `Debug`
/// form (for example `schedulers[0].lease`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where in the state.
    pub field: String,
    /// The value before the step; `None` when the field appeared.
    pub before: Option<String>,
    /// The value after the step; `None` when the field disappeared.
    pub after: Option<String>,
}

/// A step of a counterexample, described by what it changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedStep {
    /// The action taken; `None` for the initial state; `"(stutter)"` when a
    /// state with no successor repeats.
    pub action: Option<String>,
    /// For the initial state, every field; for later steps, the changes.
    pub changes: Vec<Change>,
}

/// A property's evidence, ready to print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedEvidence {
    /// Whether this is an example (for `sometimes`) or a counterexample.
    pub counterexample: bool,
    /// The steps from the initial state on.
    pub steps: Vec<RenderedStep>,
    /// For a lasso, the index in `steps` of the state where the cycle begins;
    /// the steps after it repeat forever.
    pub cycle_start: Option<usize>,
    /// The Explorer fragment that opens the path (`#/steps/...`); for a
    /// lasso, the prefix and one turn of the cycle.
    pub explorer_path: String,
}

/// A property's verdict, ready to print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedProperty {
    /// The property's name.
    pub name: String,
    /// Its kind.
    pub kind: PropertyKind,
    /// Its verdict.
    pub verdict: Verdict,
    /// The behaviour behind the verdict, if any.
    pub evidence: Option<RenderedEvidence>,
}

/// A whole report, ready to print or serialise.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RenderedReport {
    /// Counts and times.
    pub stats: Stats,
    /// The bound that stopped the check early, in words.
    pub stopped: Option<String>,
    /// One entry per property.
    pub properties: Vec<RenderedProperty>,
}

impl<M: Model> Report<M>
where
    M::State: Debug,
    M::Action: Debug,
{
    /// The report with its states and actions turned into text.
    pub fn render(&self) -> RenderedReport {
        RenderedReport {
            stats: self.stats,
            stopped: self.stopped.as_ref().map(Bound::to_string),
            properties: self
                .properties
                .iter()
                .map(|p| RenderedProperty {
                    name: p.name.to_string(),
                    kind: p.kind,
                    verdict: p.verdict,
                    evidence: p
                        .evidence
                        .as_ref()
                        .map(|e| render_evidence(e, p.kind != PropertyKind::Sometimes)),
                })
                .collect(),
        }
    }
}

fn render_evidence<M: Model>(evidence: &Evidence<M>, counterexample: bool) -> RenderedEvidence
where
    M::State: Debug,
    M::Action: Debug,
{
    let (path, cycle): (&Path<M>, &[Step<M>]) = match evidence {
        Evidence::Path(path) => (path, &[]),
        Evidence::Lasso { prefix, cycle } => (prefix, cycle),
    };
    let all: Vec<&Step<M>> = path.steps.iter().chain(cycle).collect();
    let mut steps = Vec::with_capacity(all.len());
    let mut previous = BTreeMap::new();
    for step in &all {
        let fields = leaves(&format!("{:#?}", step.state));
        steps.push(RenderedStep {
            action: match (&step.action, steps.is_empty()) {
                (Some((_, action)), _) => Some(format!("{action:?}")),
                (None, true) => None,
                (None, false) => Some("(stutter)".to_string()),
            },
            changes: diff(&previous, &fields),
        });
        previous = fields;
    }
    let mut explorer_path = format!("#/steps/{}", path.init_index);
    for step in all.iter().skip(1) {
        match &step.action {
            Some((index, _)) => explorer_path.push_str(&format!("/{index}")),
            // The Explorer has no stutter step: the link stops before it.
            None => break,
        }
    }
    RenderedEvidence {
        counterexample,
        steps,
        cycle_start: matches!(evidence, Evidence::Lasso { .. }).then(|| path.steps.len() - 1),
        explorer_path,
    }
}

/// The changes from one set of leaves to the next.
fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<Change> {
    let mut changes = Vec::new();
    for (field, value) in after {
        if before.get(field) != Some(value) {
            changes.push(Change {
                field: field.clone(),
                before: before.get(field).cloned(),
                after: Some(value.clone()),
            });
        }
    }
    for (field, value) in before {
        if !after.contains_key(field) {
            changes.push(Change {
                field: field.clone(),
                before: Some(value.clone()),
                after: None,
            });
        }
    }
    changes
}

/// The leaves of a pretty-printed (`{:#?}`) value, keyed by their paths:
/// `a.b[2].c` → `7`. A tuple, tuple struct or list of plain values is one
/// leaf (`Some(7)`, `(1, 2)`, `[0, 1]`), as is a value printed on one line;
/// a one-field wrapper such as `Some(..)` around a struct adds nothing to
/// the paths inside it.
fn leaves(pretty: &str) -> BTreeMap<String, String> {
    let mut open: Vec<Group> = Vec::new();
    let mut out = BTreeMap::new();
    for raw in pretty.lines() {
        let line = raw.trim().trim_end_matches(',');
        if matches!(line, "}" | "]" | ")") {
            if let Some(group) = open.pop() {
                group.close(&mut out);
            }
            continue;
        }
        let Some(parent) = open.last_mut() else {
            match Group::opened_by(String::new(), line) {
                Some(group) => open.push(group),
                None => {
                    out.insert(String::new(), line.to_string());
                }
            }
            continue;
        };
        let (key, value) = match (parent.bracket, line.split_once(": ")) {
            ('{', Some((key, value))) if !parent.path.is_empty() => {
                (format!("{}.{key}", parent.path), value)
            }
            ('{', Some((key, value))) => (key.to_string(), value),
            _ => (format!("{}[{}]", parent.path, parent.values.len()), line),
        };
        parent.values.push(value.to_string());
        match Group::opened_by(key.clone(), value) {
            Some(group) => {
                parent.flat = false;
                open.push(group);
            }
            None => {
                out.insert(key, value.to_string());
            }
        }
    }
    out
}

/// A struct, tuple, list or map opened by a pretty-printed line and not yet
/// closed.
struct Group {
    path: String,
    /// What the line said before the bracket (`Some`, `LockState`, ``).
    name: String,
    bracket: char,
    values: Vec<String>,
    /// No entry opened a group of its own.
    flat: bool,
}

impl Group {
    fn opened_by(path: String, line: &str) -> Option<Group> {
        let bracket = line
            .chars()
            .last()
            .filter(|c| matches!(c, '{' | '[' | '('))?;
        let name = line[..line.len() - 1].trim().to_string();
        Some(Group {
            path,
            name,
            bracket,
            values: Vec::new(),
            flat: true,
        })
    }

    fn close(self, out: &mut BTreeMap<String, String>) {
        let entry = |index: usize| format!("{}[{index}]", self.path);
        if self.values.is_empty() {
            let empty = if self.bracket == '[' { "[]" } else { "{}" };
            out.insert(self.path, format!("{}{empty}", self.name));
        } else if self.bracket != '{' && self.flat {
            // A tuple or list of plain values reads best on one line.
            for index in 0..self.values.len() {
                out.remove(&entry(index));
            }
            let (open, close) = if self.bracket == '[' {
                ('[', ']')
            } else {
                ('(', ')')
            };
            let joined = format!("{}{open}{}{close}", self.name, self.values.join(", "));
            out.insert(self.path, joined);
        } else if self.bracket == '(' && self.values.len() == 1 {
            // A wrapper such as `Some(..)` adds nothing to a field's path.
            let inner = entry(0);
            let moved: Vec<String> = out
                .range(inner.clone()..)
                .map(|(key, _)| key.clone())
                .take_while(|key| key.starts_with(&inner))
                .collect();
            for key in moved {
                if let Some(value) = out.remove(&key) {
                    out.insert(format!("{}{}", self.path, &key[inner.len()..]), value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)] // Fields are read through `Debug`.
    struct Inner {
        lease: Option<u8>,
        keys: Vec<u8>,
    }

    #[derive(Debug)]
    #[allow(dead_code)] // Fields are read through `Debug`.
    struct Outer {
        clock: u8,
        nodes: Vec<Inner>,
        pair: (u8, u8),
        wrapped: Option<Inner>,
    }

    #[test]
    fn leaves_should_name_every_field_by_its_path() {
        let state = Outer {
            clock: 3,
            nodes: vec![Inner {
                lease: Some(7),
                keys: vec![],
            }],
            pair: (1, 2),
            wrapped: Some(Inner {
                lease: None,
                keys: vec![1, 2],
            }),
        };
        let fields = leaves(&format!("{state:#?}"));
        let expected: BTreeMap<String, String> = [
            ("clock", "3"),
            ("nodes[0].lease", "Some(7)"),
            ("nodes[0].keys", "[]"),
            ("wrapped.lease", "None"),
            ("wrapped.keys", "[1, 2]"),
            ("pair", "(1, 2)"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(fields, expected);
    }

    #[test]
    fn diff_should_list_only_what_changed() {
        let before = leaves("S {\n    a: 1,\n    b: 2,\n}");
        let after = leaves("S {\n    a: 1,\n    b: 3,\n    c: 4,\n}");
        let changes = diff(&before, &after);
        assert_eq!(
            changes,
            vec![
                Change {
                    field: "b".into(),
                    before: Some("2".into()),
                    after: Some("3".into())
                },
                Change {
                    field: "c".into(),
                    before: None,
                    after: Some("4".into())
                },
            ]
        );
    }
}
