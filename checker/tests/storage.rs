//! The checker keeps states waiting to be expanded as their serde encoding;
//! a model whose state does not survive it is refused, never checked wrong.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};
use steadfast_checker::{check, CheckError, CheckOptions};
use steadfast_spec::TemporalModel;

/// A counter to 3 whose `past_one` flag serde leaves out, with a name
/// long enough that the checker keeps its states encoded (small states it
/// keeps as they are).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Counter {
    n: u8,
    #[serde(skip)]
    past_one: bool,
    name: String,
}

const NAME: &str = "a counter whose name takes more bytes than a small state";

/// Counts up from `start`.
#[derive(Clone)]
struct Counting {
    start: u8,
}

impl Model for Counting {
    type State = Counter;
    type Action = ();

    fn init_states(&self) -> Vec<Counter> {
        vec![Counter {
            n: self.start,
            past_one: self.start > 1,
            name: NAME.into(),
        }]
    }

    fn actions(&self, state: &Counter, actions: &mut Vec<()>) {
        if state.n < 3 {
            actions.push(());
        }
    }

    fn next_state(&self, state: &Counter, _: ()) -> Option<Counter> {
        let n = state.n + 1;
        Some(Counter {
            n,
            past_one: n > 1,
            name: state.name.clone(),
        })
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("below 4", |_, s: &Counter| s.n < 4)]
    }
}

impl TemporalModel for Counting {}

fn refusal(model: &Counting) -> String {
    match check(model, &CheckOptions::default()) {
        Err(error @ CheckError::Encoding(_)) => error.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a state that loses a field was checked"),
    }
}

#[test]
fn a_state_that_loses_a_field_on_the_way_should_stop_the_check() {
    // The first state survives its encoding; the third does not.
    let message = refusal(&Counting { start: 0 });
    assert!(message.contains("decodes to another state"), "{message}");
    assert!(
        message.contains("derive Serialize and Deserialize"),
        "{message}"
    );
}

#[test]
fn an_initial_state_that_loses_a_field_should_be_refused_before_exploring() {
    let message = refusal(&Counting { start: 2 });
    assert!(message.contains("decodes to another state"), "{message}");
}
