//! A set of named rules, shared by the protocols: a variant's rules, or
//! those with one taken away, so that a test can show which property each
//! rule is needed for.

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A protocol's rules: a fieldless enum of at most 32 variants.
pub trait Rule: Copy + Debug + Eq + Hash + Serialize + DeserializeOwned + 'static {
    /// Every rule.
    const ALL: &'static [Self];

    /// The rule's position in [`Rule::ALL`].
    fn index(self) -> u8 {
        let at = Self::ALL.iter().position(|r| *r == self);
        at.expect("ALL lists every rule") as u8
    }
}

/// Some of a protocol's rules. Written (in traces, reports) as the list of
/// their names: `["Fence", "TtlZeroIsLoss", ...]`.
#[derive(Serialize, Deserialize)]
#[serde(from = "Vec<R>", into = "Vec<R>", bound = "R: Rule")]
pub struct RuleSet<R> {
    bits: u32,
    rules: PhantomData<R>,
}

impl<R: Rule> RuleSet<R> {
    /// Every rule.
    pub fn all() -> Self {
        Self::from(R::ALL.to_vec())
    }

    /// Whether `rule` is followed.
    pub fn has(self, rule: R) -> bool {
        self.bits & (1 << rule.index()) != 0
    }

    /// These rules without `rule`.
    #[must_use]
    pub fn without(self, rule: R) -> Self {
        RuleSet {
            bits: self.bits & !(1 << rule.index()),
            rules: PhantomData,
        }
    }
}

impl<R: Rule> From<Vec<R>> for RuleSet<R> {
    fn from(rules: Vec<R>) -> Self {
        RuleSet {
            bits: rules.iter().fold(0, |bits, r| bits | 1 << r.index()),
            rules: PhantomData,
        }
    }
}

impl<R: Rule> From<RuleSet<R>> for Vec<R> {
    fn from(rules: RuleSet<R>) -> Self {
        R::ALL.iter().copied().filter(|r| rules.has(*r)).collect()
    }
}

// By hand: derives would ask `R` itself for the traits.
impl<R> Clone for RuleSet<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for RuleSet<R> {}

impl<R> PartialEq for RuleSet<R> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<R> Eq for RuleSet<R> {}

impl<R> Hash for RuleSet<R> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bits.hash(state);
    }
}

impl<R: Rule> Debug for RuleSet<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(R::ALL.iter().filter(|r| self.has(**r)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{Rule, RuleSet};
    use crate::{leasequeue, lifecycle};

    fn each_rule_is_a_bit_of_its_own<R: Rule>() {
        let all = RuleSet::<R>::all();
        for &rule in R::ALL {
            let without = all.without(rule);
            assert!(!without.has(rule), "{rule:?}");
            assert!(R::ALL
                .iter()
                .filter(|r| **r != rule)
                .all(|r| without.has(*r)));
            let names = serde_json::to_string(&without).unwrap();
            assert_eq!(serde_json::from_str::<RuleSet<R>>(&names).unwrap(), without);
        }
    }

    #[test]
    fn every_rule_should_be_a_separate_bit_that_round_trips_by_name() {
        each_rule_is_a_bit_of_its_own::<leasequeue::Rule>();
        each_rule_is_a_bit_of_its_own::<lifecycle::Rule>();
    }
}
