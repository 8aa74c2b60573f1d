//! The engine against a brute-force reference on random small graphs.
//!
//! The reference knows nothing of components: it enumerates every set of
//! edges, keeps those that can be walked as one closed walk (strongly
//! connected), judges weak and strong fairness on exactly the states and
//! edges of that walk, and asks whether the walk can be reached the way each formula needs.
//! Agreement on thousands of graphs, under both stuttering rules, is
//! evidence that the engine is both sound and complete, including for
//! stutter steps and self-loops.

mod common;

use common::{run_with, Tiny};
use proptest::prelude::*;
use steadfast_checker::{Evidence, Stuttering, Verdict};

/// The edges of the behaviour graph: the model's edges, plus a stutter
/// self-loop (class `-`) on every state (TLA+), or only on every state
/// without a successor.
fn behaviour_edges(model: &Tiny, n: u8, stuttering: Stuttering) -> Vec<(u8, char, u8)> {
    let mut edges = model.edges.clone();
    for u in 0..n {
        let stuck = !model.edges.iter().any(|&(from, _, _)| from == u);
        if stuck || stuttering == Stuttering::Anywhere {
            edges.push((u, '-', u));
        }
    }
    edges
}

/// States reachable from `from` along `edges` through states in `through`.
fn reachable(edges: &[(u8, char, u8)], from: u8, through: impl Fn(u8) -> bool) -> Vec<u8> {
    let mut seen = vec![from];
    let mut i = 0;
    while i < seen.len() {
        let u = seen[i];
        for &(a, _, b) in edges {
            if a == u && through(b) && !seen.contains(&b) {
                seen.push(b);
            }
        }
        i += 1;
    }
    seen
}

/// Whether a class is enabled at `u`: some step of it leads elsewhere.
fn enabled(model: &Tiny, u: u8, class: char) -> bool {
    model
        .edges
        .iter()
        .any(|&(a, c, b)| a == u && c == class && b != u)
}

/// Every fair closed walk, as the set of states it visits.
fn fair_cycles(model: &Tiny, edges: &[(u8, char, u8)]) -> Vec<Vec<u8>> {
    let mut cycles = Vec::new();
    for mask in 1u32..(1 << edges.len()) {
        let chosen: Vec<_> = (0..edges.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| edges[i])
            .collect();
        let mut states: Vec<u8> = chosen.iter().flat_map(|&(a, _, b)| [a, b]).collect();
        states.sort_unstable();
        states.dedup();
        let strongly_connected = states.iter().all(|&u| {
            let forward = reachable(&chosen, u, |_| true);
            states.iter().all(|v| forward.contains(v))
        });
        if !strongly_connected {
            continue;
        }
        let taken = |class| chosen.iter().any(|&(a, c, b)| c == class && a != b);
        let weakly_fair = model
            .fair
            .iter()
            .all(|&class| taken(class) || states.iter().any(|&u| !enabled(model, u, class)));
        let strongly_fair = model
            .strong
            .iter()
            .all(|&class| taken(class) || states.iter().all(|&u| !enabled(model, u, class)));
        let fair = weakly_fair && strongly_fair;
        if fair {
            cycles.push(states);
        }
    }
    cycles
}

fn reference_leads_to(model: &Tiny, n: u8, stuttering: Stuttering) -> bool {
    let edges = behaviour_edges(model, n, stuttering);
    let not_q = |u: u8| !model.goal.contains(&u);
    let quiet: Vec<_> = edges
        .iter()
        .copied()
        .filter(|&(a, _, b)| not_q(a) && not_q(b))
        .collect();
    let cycles = fair_cycles(model, &quiet);
    let holds = !reachable(&edges, 0, |_| true)
        .into_iter()
        .filter(|&s| model.trigger.contains(&s) && not_q(s))
        .any(|s| {
            let after = reachable(&quiet, s, not_q);
            cycles.iter().any(|c| c.iter().any(|u| after.contains(u)))
        });
    holds
}

fn reference_eventually_always(model: &Tiny, n: u8, stuttering: Stuttering) -> bool {
    let edges = behaviour_edges(model, n, stuttering);
    let from_init = reachable(&edges, 0, |_| true);
    !fair_cycles(model, &edges).iter().any(|cycle| {
        cycle.iter().any(|u| from_init.contains(u)) && cycle.iter().any(|u| !model.goal.contains(u))
    })
}

fn reference_infinitely_often(model: &Tiny, n: u8, stuttering: Stuttering) -> bool {
    let edges = behaviour_edges(model, n, stuttering);
    let from_init = reachable(&edges, 0, |_| true);
    let not_goal = |u: u8| !model.goal.contains(&u);
    let quiet: Vec<_> = edges
        .iter()
        .copied()
        .filter(|&(a, _, b)| not_goal(a) && not_goal(b))
        .collect();
    !fair_cycles(model, &quiet)
        .iter()
        .any(|cycle| cycle.iter().any(|u| from_init.contains(u)))
}

fn graphs() -> impl Strategy<Value = (Tiny, u8)> {
    (1u8..=4).prop_flat_map(|n| {
        let edge = (0..n, prop::sample::select(vec!['a', 'b']), 0..n);
        // Each class is unfair, weakly fair or strongly fair.
        let strength = prop::sample::select(vec![' ', 'w', 's']);
        (
            prop::collection::vec(edge, 0..=7),
            (strength.clone(), strength),
            prop::collection::vec(0..n, 0..=2),
            prop::collection::vec(0..n, 0..=2),
        )
            .prop_map(move |(edges, strengths, trigger, goal)| {
                let of = |wanted| {
                    [('a', strengths.0), ('b', strengths.1)]
                        .into_iter()
                        .filter(|&(_, s)| s == wanted)
                        .map(|(c, _)| c)
                        .collect::<Vec<_>>()
                };
                let model = Tiny::new(&edges)
                    .fair(&of('w'))
                    .strong(&of('s'))
                    .trigger(&trigger)
                    .goal(&goal);
                (model, n)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10000))]

    #[test]
    fn engine_should_agree_with_brute_force((model, n) in graphs()) {
        for stuttering in [Stuttering::Anywhere, Stuttering::WhenStuck] {
            let report = run_with(&model, stuttering);
            // Only reachable states exist for the engine; the reference's
            // unreachable states cannot matter: every question starts at 0.
            for (name, expected) in [
                ("goal follows trigger", reference_leads_to(&model, n, stuttering)),
                ("settles in goal", reference_eventually_always(&model, n, stuttering)),
                ("goal again and again", reference_infinitely_often(&model, n, stuttering)),
            ] {
                let property = report.property(name).unwrap();
                let verdict = if expected { Verdict::Holds } else { Verdict::Violated };
                prop_assert_eq!(property.verdict, verdict, "{} ({:?}) on {:?} weak {:?} strong {:?} P {:?} Q {:?}",
                    name, stuttering, model.edges, model.fair, model.strong, model.trigger, model.goal);
                if let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence {
                    // The lasso is a real path that closes on itself.
                    prop_assert_eq!(prefix.steps[0].state, 0);
                    prop_assert!(!cycle.is_empty());
                    prop_assert_eq!(cycle.last().unwrap().state, prefix.steps.last().unwrap().state);
                    // And it violates this property (it may have been found
                    // for another and shown for both).
                    let goal = |u: &u8| model.goal.contains(u);
                    let looped: Vec<u8> = cycle.iter().map(|s| s.state).collect();
                    let path: Vec<u8> = prefix.steps.iter().map(|s| s.state).chain(looped.iter().copied()).collect();
                    let violates = match name {
                        "goal follows trigger" => !looped.iter().any(goal)
                            && (0..path.len()).any(|i| {
                                model.trigger.contains(&path[i]) && !path[i..].iter().any(goal)
                            }),
                        "settles in goal" => looped.iter().any(|u| !goal(u)),
                        _ => !looped.iter().any(goal),
                    };
                    prop_assert!(violates, "{} shown by a lasso that does not violate it: {:?}", name, path);
                }
            }
        }
    }
}
