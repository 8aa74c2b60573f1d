//! Reports made readable: counterexamples as the changes each step makes,
//! with a one-line headline and the stateright Explorer link that opens
//! them, and a serialisable summary for `--json`.
//!
//! States are read through their `Debug` form, parsed into a tree and
//! compared node by node: a change is reported at the deepest node whose
//! shape stayed the same, so an option that becomes `Some`, a list that
//! grows or an enum that changes variant is one change, printed whole, with
//! its variant names; fields keep the order the model declares them in.

use std::fmt::Debug;

use serde::Serialize;
use stateright::Model;

use steadfast_spec::Strength;

use crate::report::{Evidence, Report, Step};
use crate::{Bound, PropertyKind, Stats, Verdict};

/// The top-level field of a state that holds ghost state (what properties
/// are judged by, not what the system keeps). Its changes are marked, and
/// hidden unless asked for.
pub const GHOST_FIELD: &str = "ghost";

/// One field whose value a step changed, by its path in the state's `Debug`
/// form (for example `schedulers[0].lease`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where in the state.
    pub field: String,
    /// The value before the step; `None` in the listing of an initial state.
    pub before: Option<String>,
    /// The value after the step.
    pub after: String,
    /// Whether the field is ghost state.
    pub ghost: bool,
}

/// A step of a counterexample, described by what it changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedStep {
    /// The action taken; `None` for the initial state; `"(stutter)"` when
    /// the state repeats.
    pub action: Option<String>,
    /// For the initial state, every top-level field; for later steps, the
    /// changes.
    pub changes: Vec<Change>,
    /// The whole state after the step, one entry per top-level field.
    pub state: Vec<Change>,
}

/// A property's evidence, ready to print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedEvidence {
    /// Whether this is an example (for `sometimes`) or a counterexample.
    pub counterexample: bool,
    /// One line on what the evidence shows and where.
    pub headline: String,
    /// The steps from the initial state on.
    pub steps: Vec<RenderedStep>,
    /// For a lasso, the index in `steps` of the state where the cycle begins;
    /// the steps after it repeat forever.
    pub cycle_start: Option<usize>,
    /// For a lasso, the index in `steps` of the state where the violation
    /// begins: where a leads-to's trigger holds with no response after it,
    /// otherwise where the cycle begins.
    pub trigger: Option<usize>,
    /// For a lasso, why its cycle is a fair behaviour: each fairness class
    /// the model declares, with the steps that take it or the states that
    /// find it disabled.
    pub fairness: Vec<RenderedClass>,
    /// The Explorer fragment that opens the path (`#/steps/...`); for a
    /// lasso, the prefix and one turn of the cycle.
    pub explorer_path: String,
}

/// How a lasso's cycle treats one fairness class, in the numbering of the
/// rendered steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RenderedClass {
    /// The class's name.
    pub class: String,
    /// `"weak"` or `"strong"`.
    pub strength: &'static str,
    /// The steps of the cycle that take it.
    pub taken: Vec<usize>,
    /// The steps of the cycle after which it is disabled (the state of the
    /// step the cycle starts from counts as its first).
    pub disabled: Vec<usize>,
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
    /// The bound that stopped the check early.
    pub stopped: Option<Bound>,
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
            stopped: self.stopped,
            properties: self
                .properties
                .iter()
                .map(|p| RenderedProperty {
                    name: p.name.to_string(),
                    kind: p.kind,
                    verdict: p.verdict,
                    evidence: p.evidence.as_ref().map(|e| render_evidence(e, p.kind)),
                })
                .collect(),
        }
    }
}

fn render_evidence<M: Model>(evidence: &Evidence<M>, kind: PropertyKind) -> RenderedEvidence
where
    M::State: Debug,
    M::Action: Debug,
{
    let (path, cycle, trigger, fairness) = match evidence {
        Evidence::Path(path) => (path, &[][..], None, &[][..]),
        Evidence::Lasso {
            prefix,
            cycle,
            trigger,
            fairness,
        } => (prefix, &cycle[..], Some(*trigger), &fairness[..]),
    };
    let all: Vec<&Step<M>> = path.steps.iter().chain(cycle).collect();
    let mut steps = Vec::with_capacity(all.len());
    let mut previous: Option<Node> = None;
    for step in &all {
        let tree = Node::parse(&format!("{:#?}", step.state));
        let state = tree.fields();
        let changes = match &previous {
            None => state.clone(),
            Some(before) => {
                let mut changes = Vec::new();
                before.diff(&tree, String::new(), &mut changes);
                changes
            }
        };
        steps.push(RenderedStep {
            action: match (&step.action, steps.is_empty()) {
                (Some((_, action)), _) => Some(format!("{action:?}")),
                (None, true) => None,
                (None, false) => Some("(stutter)".to_string()),
            },
            changes,
            state,
        });
        previous = Some(tree);
    }
    let mut explorer_path = format!("#/steps/{}", path.init_index);
    for step in all.iter().skip(1) {
        match &step.action {
            Some((index, _)) => explorer_path.push_str(&format!("/{index}")),
            // The Explorer has no stutter step: the link stops before it.
            None => break,
        }
    }
    let last = path.steps.len() - 1;
    let cycle_start = trigger.map(|_| last);
    let fairness = fairness
        .iter()
        .map(|class| RenderedClass {
            class: class.name.to_string(),
            strength: match class.strength {
                Strength::Weak => "weak",
                Strength::Strong => "strong",
            },
            taken: class.taken.iter().map(|k| last + k).collect(),
            disabled: class.disabled.iter().map(|k| last + k).collect(),
        })
        .collect();
    RenderedEvidence {
        counterexample: kind != PropertyKind::Sometimes,
        headline: headline(kind, last, trigger),
        steps,
        cycle_start,
        trigger,
        fairness,
        explorer_path,
    }
}

/// What the evidence of a property of `kind` shows: `last` is the last step
/// of the path (for a lasso, where the cycle starts) and `trigger` the step
/// at which a lasso's obligation began.
fn headline(kind: PropertyKind, last: usize, trigger: Option<usize>) -> String {
    let forever = format!("the cycle from step {last} repeats forever");
    match (kind, trigger) {
        (PropertyKind::Sometimes, _) => format!("step {last} reaches a state where it holds"),
        (PropertyKind::Deadlock, _) => format!("step {last} reaches a state with no successor"),
        (PropertyKind::Eventually, _) => format!("no step satisfies it, and {forever}"),
        (PropertyKind::LeadsTo, Some(trigger)) => format!(
            "its trigger holds at step {trigger}, and its response holds at no step from there \
             on: {forever}"
        ),
        (PropertyKind::EventuallyAlways, _) => {
            format!("its condition is false at step {last}, and {forever}")
        }
        (PropertyKind::InfinitelyOften, _) => {
            format!("its condition holds at no step of the cycle from step {last}, which repeats forever")
        }
        (PropertyKind::Always | PropertyKind::LeadsTo, _) => {
            format!("step {last} reaches a state where it is false")
        }
    }
}

/// A value as its `Debug` form shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    /// A value printed on one line (`3`, `None`, `[]`, `Idle`).
    Leaf(String),
    /// A struct, struct variant or map: `Name { field: value, .. }` (a map
    /// has no name).
    Fields(String, Vec<(String, Node)>),
    /// A tuple, tuple struct or tuple variant: `Name(a, b)`.
    Tuple(String, Vec<Node>),
    /// A list: `[a, b]`.
    List(Vec<Node>),
    /// A set: `{a, b}`.
    Set(Vec<Node>),
}

impl Node {
    /// Parses a pretty-printed (`{:#?}`) value; text it cannot read becomes
    /// a leaf, never an error.
    fn parse(pretty: &str) -> Node {
        let mut lines = pretty.lines().map(|line| line.trim().trim_end_matches(','));
        let first = lines.next().unwrap_or_default();
        Node::parse_from(first, &mut lines)
    }

    fn parse_from<'a>(first: &str, lines: &mut impl Iterator<Item = &'a str>) -> Node {
        let Some(bracket) = first
            .chars()
            .last()
            .filter(|c| matches!(c, '{' | '[' | '('))
        else {
            return Node::Leaf(first.to_string());
        };
        let name = first[..first.len() - 1].trim().to_string();
        let mut keyed = Vec::new();
        let mut items = Vec::new();
        while let Some(line) = lines.next() {
            if matches!(line, "}" | "]" | ")") {
                break;
            }
            match (bracket, line.split_once(": ")) {
                ('{', Some((key, value))) => {
                    keyed.push((key.to_string(), Node::parse_from(value, lines)));
                }
                _ => items.push(Node::parse_from(line, lines)),
            }
        }
        match bracket {
            '{' if items.is_empty() => Node::Fields(name, keyed),
            '{' => Node::Set(items),
            '[' => Node::List(items),
            _ => Node::Tuple(name, items),
        }
    }

    /// The value on one line.
    fn compact(&self) -> String {
        let join = |nodes: &[Node]| {
            nodes
                .iter()
                .map(Node::compact)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Node::Leaf(text) => text.clone(),
            Node::Fields(name, fields) => {
                let inner: Vec<String> = fields
                    .iter()
                    .map(|(key, value)| format!("{key}: {}", value.compact()))
                    .collect();
                let space = if name.is_empty() { "" } else { " " };
                format!("{name}{space}{{ {} }}", inner.join(", "))
            }
            Node::Tuple(name, items) => format!("{name}({})", join(items)),
            Node::List(items) => format!("[{}]", join(items)),
            Node::Set(items) => format!("{{{}}}", join(items)),
        }
    }

    /// The top-level fields of a state, each whole, in declaration order; a
    /// state that is no struct is one entry with an empty name.
    fn fields(&self) -> Vec<Change> {
        match self {
            Node::Fields(_, fields) => fields
                .iter()
                .map(|(key, value)| Change {
                    field: key.clone(),
                    before: None,
                    after: value.compact(),
                    ghost: key == GHOST_FIELD,
                })
                .collect(),
            other => vec![Change {
                field: String::new(),
                before: None,
                after: other.compact(),
                ghost: false,
            }],
        }
    }

    /// Appends to `changes` what differs from `self` to `after`, at the
    /// deepest nodes of the same shape: the same struct or variant with the
    /// same fields, or a list, tuple or set of the same length.
    fn diff(&self, after: &Node, path: String, changes: &mut Vec<Change>) {
        if self == after {
            return;
        }
        let child = |suffix: String| {
            if path.is_empty() {
                suffix.trim_start_matches('.').to_string()
            } else {
                format!("{path}{suffix}")
            }
        };
        match (self, after) {
            (Node::Fields(a, before), Node::Fields(b, now))
                if a == b && before.iter().map(|f| &f.0).eq(now.iter().map(|f| &f.0)) =>
            {
                for ((key, x), (_, y)) in before.iter().zip(now) {
                    x.diff(y, child(format!(".{key}")), changes);
                }
            }
            // A one-value wrapper such as `Some(..)` adds nothing to a path.
            (Node::Tuple(a, before), Node::Tuple(b, now))
                if a == b && before.len() == 1 && now.len() == 1 =>
            {
                before[0].diff(&now[0], path, changes);
            }
            (Node::Tuple(a, before), Node::Tuple(b, now))
                if a == b && before.len() == now.len() =>
            {
                for (i, (x, y)) in before.iter().zip(now).enumerate() {
                    x.diff(y, child(format!(".{i}")), changes);
                }
            }
            (Node::List(before), Node::List(now)) | (Node::Set(before), Node::Set(now))
                if before.len() == now.len() =>
            {
                for (i, (x, y)) in before.iter().zip(now).enumerate() {
                    x.diff(y, child(format!("[{i}]")), changes);
                }
            }
            _ => {
                let ghost = path == GHOST_FIELD || path.starts_with("ghost.");
                changes.push(Change {
                    field: path,
                    before: Some(self.compact()),
                    after: after.compact(),
                    ghost,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code)] // Fields are read through `Debug`.
    enum Message {
        Claim { action: u8, lease: u8 },
        Ack(u8),
    }

    #[derive(Debug)]
    #[allow(dead_code)] // Fields are read through `Debug`.
    struct Node2 {
        lease: Option<u8>,
        inbox: Vec<Message>,
    }

    #[derive(Debug)]
    #[allow(dead_code)] // Fields are read through `Debug`.
    struct State {
        clock: u8,
        nodes: Vec<Node2>,
        pair: (u8, u8),
        ghost: u8,
    }

    fn state(lease: Option<u8>, inbox: Vec<Message>, clock: u8, ghost: u8) -> Node {
        let state = State {
            clock,
            nodes: vec![Node2 { lease, inbox }],
            pair: (1, 2),
            ghost,
        };
        Node::parse(&format!("{state:#?}"))
    }

    fn changes(before: &Node, after: &Node) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        before.diff(after, String::new(), &mut out);
        out.into_iter()
            .map(|c| (c.field, c.before.unwrap_or_default(), c.after))
            .collect()
    }

    #[test]
    fn fields_should_come_whole_and_in_declaration_order() {
        let tree = state(None, vec![Message::Ack(1)], 3, 0);
        let fields: Vec<(String, String)> = tree
            .fields()
            .into_iter()
            .map(|c| (c.field, c.after))
            .collect();
        assert_eq!(
            fields,
            [
                ("clock".into(), "3".into()),
                (
                    "nodes".into(),
                    "[Node2 { lease: None, inbox: [Ack(1)] }]".into()
                ),
                ("pair".into(), "(1, 2)".into()),
                ("ghost".into(), "0".into()),
            ]
        );
    }

    #[test]
    fn a_change_of_shape_should_be_one_change_with_variant_names() {
        let before = state(None, vec![], 3, 0);
        let after = state(
            Some(7),
            vec![Message::Claim {
                action: 0,
                lease: 1,
            }],
            3,
            0,
        );
        assert_eq!(
            changes(&before, &after),
            [
                ("nodes[0].lease".into(), "None".into(), "Some(7)".into()),
                (
                    "nodes[0].inbox".into(),
                    "[]".into(),
                    "[Claim { action: 0, lease: 1 }]".into()
                ),
            ]
        );
    }

    #[test]
    fn a_change_inside_the_same_shape_should_be_named_by_its_path() {
        let before = state(
            Some(7),
            vec![Message::Claim {
                action: 0,
                lease: 1,
            }],
            3,
            0,
        );
        let after = state(
            Some(8),
            vec![Message::Claim {
                action: 0,
                lease: 2,
            }],
            4,
            1,
        );
        let all = {
            let mut out = Vec::new();
            before.diff(&after, String::new(), &mut out);
            out
        };
        let named: Vec<(&str, &str, bool)> = all
            .iter()
            .map(|c| (c.field.as_str(), c.after.as_str(), c.ghost))
            .collect();
        assert_eq!(
            named,
            [
                ("clock", "4", false),
                ("nodes[0].lease", "8", false),
                ("nodes[0].inbox[0].lease", "2", false),
                ("ghost", "1", true),
            ]
        );
    }
}
