//! A second worked example: two-phase commit, as in Lamport's TLA+
//! specification `TwoPhase`, with its resource managers declared
//! interchangeable and fair one by one, so that the checker's symmetry
//! reduction is exercised under per-process fairness; and two broken
//! transaction managers, one per property, which the checker catches.
//!
//! A transaction manager (TM) and `n` resource managers (RMs) share a set of
//! messages. An RM that is working either prepares (and says so) or aborts
//! on its own; the TM, once it has heard every RM prepared, may commit, and
//! may abort at any time before it decides; every RM then follows the TM's
//! decision. It is also the model stateright and TLC are often measured on.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::symmetry::{Interchangeable, Renaming};
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// The most resource managers a [`TwoPhase`] takes.
pub const MAX_RMS: u8 = 12;

/// The most resource managers declared interchangeable: the checker takes
/// groups of at most 65,536 renamings, and 8 RMs have 40,320 (9 have
/// 362,880). A larger model is explored whole.
pub const SYMMETRIC_RMS: u8 = 8;

/// How the transaction manager decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TmVariant {
    /// Commit only once every RM is heard prepared; abort at any time
    /// before deciding. Consistent, and every RM decides.
    TwoPhase,
    /// Commit once any RM is heard prepared: an RM that aborted on its own
    /// is then outvoted, and the RMs disagree.
    Hasty,
    /// Never abort: once an RM aborts on its own, the TM waits for its
    /// prepare forever, and the prepared RMs never learn the outcome.
    NoAbort,
}

/// Where one resource manager is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Rm {
    /// Has not voted.
    Working,
    /// Voted to commit, and waits for the decision.
    Prepared,
    /// Committed.
    Committed,
    /// Aborted.
    Aborted,
}

/// The transaction manager's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tm {
    /// Not decided.
    Init,
    /// Decided to commit.
    Committed,
    /// Decided to abort.
    Aborted,
}

/// The RMs, the TM and the messages between them. RM `i` is bit `i` of the
/// sets.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Debug)]
pub struct TwoPhaseState {
    /// How many RMs are in use.
    rms: u8,
    /// Each RM's state; only the first `n` are in use.
    pub rm: [Rm; MAX_RMS as usize],
    /// The TM's state.
    pub tm: Tm,
    /// The RMs the TM has heard prepared.
    pub tm_prepared: u16,
    /// The RMs whose "prepared" message was sent.
    pub prepared_sent: u16,
    /// The TM's decision was sent to the RMs.
    pub decision_sent: bool,
}

/// A step of the TM or of one RM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TwoPhaseAction {
    /// The TM takes in RM `i`'s "prepared".
    TmRcvPrepared(u8),
    /// The TM decides to commit.
    TmCommit,
    /// The TM decides to abort.
    TmAbort,
    /// RM `i` prepares.
    RmPrepare(u8),
    /// RM `i` aborts on its own.
    RmChooseToAbort(u8),
    /// RM `i`, working or prepared, takes in the TM's decision.
    RmRcvDecision(u8),
}

impl TwoPhaseAction {
    /// Whether this is a step of RM `I` (a fairness class).
    pub fn is_step_of_rm<const I: u8>(&self) -> bool {
        matches!(
            *self,
            TwoPhaseAction::RmPrepare(i)
                | TwoPhaseAction::RmChooseToAbort(i)
                | TwoPhaseAction::RmRcvDecision(i) if i == I
        )
    }

    /// Whether this is the TM taking in RM `I`'s vote (a fairness class).
    pub fn is_tm_hearing<const I: u8>(&self) -> bool {
        *self == TwoPhaseAction::TmRcvPrepared(I)
    }

    /// Whether this is the TM deciding (a fairness class).
    pub fn is_decision(&self) -> bool {
        matches!(*self, TwoPhaseAction::TmCommit | TwoPhaseAction::TmAbort)
    }
}

/// Two-phase commit among `rms` resource managers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoPhase {
    rms: u8,
    variant: TmVariant,
}

/// A [`TwoPhase`] was asked for with a number of RMs it cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RmCountError(pub u8);

impl std::fmt::Display for RmCountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "two-phase commit takes 1 to {MAX_RMS} resource managers, not {}",
            self.0
        )
    }
}

impl std::error::Error for RmCountError {}

impl TwoPhase {
    /// Two-phase commit among `rms` resource managers, 1 to [`MAX_RMS`].
    ///
    /// # Errors
    ///
    /// [`RmCountError`] when `rms` is out of that range.
    pub fn new(rms: u8, variant: TmVariant) -> Result<Self, RmCountError> {
        if (1..=MAX_RMS).contains(&rms) {
            Ok(TwoPhase { rms, variant })
        } else {
            Err(RmCountError(rms))
        }
    }

    fn all(&self) -> u16 {
        (1u16 << self.rms) - 1
    }

    fn rms<'s>(&self, s: &'s TwoPhaseState) -> &'s [Rm] {
        &s.rm[..usize::from(self.rms)]
    }
}

impl Model for TwoPhase {
    type State = TwoPhaseState;
    type Action = TwoPhaseAction;

    fn init_states(&self) -> Vec<TwoPhaseState> {
        vec![TwoPhaseState {
            rms: self.rms,
            rm: [Rm::Working; MAX_RMS as usize],
            tm: Tm::Init,
            tm_prepared: 0,
            prepared_sent: 0,
            decision_sent: false,
        }]
    }

    fn actions(&self, s: &TwoPhaseState, actions: &mut Vec<TwoPhaseAction>) {
        if s.tm == Tm::Init {
            let enough = match self.variant {
                TmVariant::Hasty => s.tm_prepared != 0,
                TmVariant::TwoPhase | TmVariant::NoAbort => s.tm_prepared == self.all(),
            };
            if enough {
                actions.push(TwoPhaseAction::TmCommit);
            }
            if self.variant != TmVariant::NoAbort {
                actions.push(TwoPhaseAction::TmAbort);
            }
        }
        for i in 0..self.rms {
            let bit = 1 << i;
            if s.tm == Tm::Init && s.prepared_sent & bit != 0 && s.tm_prepared & bit == 0 {
                actions.push(TwoPhaseAction::TmRcvPrepared(i));
            }
            match s.rm[usize::from(i)] {
                Rm::Working => {
                    actions.push(TwoPhaseAction::RmPrepare(i));
                    actions.push(TwoPhaseAction::RmChooseToAbort(i));
                }
                Rm::Prepared => {}
                Rm::Committed | Rm::Aborted => continue,
            }
            if s.decision_sent {
                actions.push(TwoPhaseAction::RmRcvDecision(i));
            }
        }
    }

    fn next_state(&self, s: &TwoPhaseState, action: TwoPhaseAction) -> Option<TwoPhaseState> {
        let mut next = s.clone();
        match action {
            TwoPhaseAction::TmRcvPrepared(i) => next.tm_prepared |= 1 << i,
            TwoPhaseAction::TmCommit => {
                next.tm = Tm::Committed;
                next.decision_sent = true;
            }
            TwoPhaseAction::TmAbort => {
                next.tm = Tm::Aborted;
                next.decision_sent = true;
            }
            TwoPhaseAction::RmPrepare(i) => {
                next.rm[usize::from(i)] = Rm::Prepared;
                next.prepared_sent |= 1 << i;
            }
            TwoPhaseAction::RmChooseToAbort(i) => next.rm[usize::from(i)] = Rm::Aborted,
            TwoPhaseAction::RmRcvDecision(i) => {
                next.rm[usize::from(i)] = if s.tm == Tm::Committed {
                    Rm::Committed
                } else {
                    Rm::Aborted
                };
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            // No RM commits while another aborts:
            // □¬(∃i, j : rm[i] = committed ∧ rm[j] = aborted).
            Property::always("consistent", |m: &TwoPhase, s: &TwoPhaseState| {
                let rms = m.rms(s);
                !(rms.contains(&Rm::Committed) && rms.contains(&Rm::Aborted))
            }),
            // A commit happens in some behaviour.
            Property::sometimes("some commit", |m: &TwoPhase, s: &TwoPhaseState| {
                m.rms(s).iter().all(|&rm| rm == Rm::Committed)
            }),
        ]
    }
}

/// Whether every RM has decided, one way for all.
fn decided(m: &TwoPhase, s: &TwoPhaseState) -> bool {
    let rms = m.rms(s);
    rms.iter().all(|&rm| rm == Rm::Committed) || rms.iter().all(|&rm| rm == Rm::Aborted)
}

impl TemporalModel for TwoPhase {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        /// Per RM, its own steps and the TM's taking in its vote.
        macro_rules! rm_classes {
            ($($i:literal),*) => {
                [$([
                    Fairness::weak(concat!("RM ", $i), TwoPhaseAction::is_step_of_rm::<$i>)
                        .of(0, $i),
                    Fairness::weak(
                        concat!("TM hears RM ", $i),
                        TwoPhaseAction::is_tm_hearing::<$i>,
                    )
                    .of(0, $i),
                ]),*]
            };
        }
        let per_rm = rm_classes!(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        let mut classes = vec![Fairness::weak("TM decides", TwoPhaseAction::is_decision)];
        classes.extend(per_rm.into_iter().take(usize::from(self.rms)).flatten());
        classes
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        // ◇□(∀i : rm[i] = committed ∨ ∀i : rm[i] = aborted): every RM
        // decides, and all alike.
        vec![Liveness::eventually_always("every RM decides", decided)]
    }

    /// Every RM, when there are at most [`SYMMETRIC_RMS`]: they run one
    /// program and the TM treats them alike.
    fn interchangeable(&self) -> Vec<Interchangeable> {
        if self.rms > SYMMETRIC_RMS {
            return Vec::new();
        }
        vec![Interchangeable::new("resource manager", 0..self.rms)]
    }

    fn rename(&self, s: &TwoPhaseState, renaming: &Renaming) -> TwoPhaseState {
        s.renamed(|i| renaming.id(0, i))
    }

    /// The RMs sorted by all each holds (their state, and whether their
    /// vote was sent and heard).
    fn canonical(&self, s: &TwoPhaseState) -> Option<(TwoPhaseState, Renaming)> {
        let renaming = Renaming::from_images(&self.interchangeable(), vec![s.sorting()])?;
        Some((self.rename(s, &renaming), renaming))
    }
}

impl TwoPhaseState {
    /// The state with RM `i` renamed `id(i)`.
    fn renamed(&self, id: impl Fn(u8) -> u8) -> TwoPhaseState {
        let bits = |set: u16| {
            (0..self.rms)
                .filter(|&i| set & 1 << i != 0)
                .fold(0u16, |acc, i| acc | 1 << id(i))
        };
        let mut renamed = self.clone();
        for i in 0..self.rms {
            renamed.rm[usize::from(id(i))] = self.rm[usize::from(i)];
        }
        renamed.tm_prepared = bits(self.tm_prepared);
        renamed.prepared_sent = bits(self.prepared_sent);
        renamed
    }

    /// Per RM, its place once the RMs are sorted by all each holds (its
    /// state, and whether its vote was sent and heard): two RMs that hold
    /// the same are alike, so the order of a tie does not matter.
    fn sorting(&self) -> Vec<u8> {
        let held = |i: u8| {
            let bit = 1 << i;
            (
                self.rm[usize::from(i)],
                self.prepared_sent & bit != 0,
                self.tm_prepared & bit != 0,
            )
        };
        let mut order: Vec<u8> = (0..self.rms).collect();
        order.sort_by_key(|&i| held(i));
        let mut places = vec![0; usize::from(self.rms)];
        for (place, &i) in order.iter().enumerate() {
            places[usize::from(i)] = place as u8;
        }
        places
    }
}

/// The same canonical form, for stateright's own symmetry reduction (of
/// safety), so that the two checkers can be measured reduced alike.
impl stateright::Representative for TwoPhaseState {
    fn representative(&self) -> Self {
        let places = self.sorting();
        self.renamed(|i| places[usize::from(i)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_phase_should_refuse_an_rm_count_out_of_range() {
        assert_eq!(TwoPhase::new(0, TmVariant::TwoPhase), Err(RmCountError(0)));
        assert!(TwoPhase::new(MAX_RMS + 1, TmVariant::TwoPhase).is_err());
    }

    #[test]
    fn renaming_should_move_each_rm_with_its_votes() {
        let model = TwoPhase::new(3, TmVariant::TwoPhase).unwrap();
        let sets = model.interchangeable();
        let mut s = model.init_states().remove(0);
        for action in [
            TwoPhaseAction::RmPrepare(0),
            TwoPhaseAction::TmRcvPrepared(0),
        ] {
            s = model.next_state(&s, action).unwrap();
        }
        let rotate = Renaming::from_images(&sets, vec![vec![1, 2, 0]]).unwrap();
        let renamed = model.rename(&s, &rotate);
        assert_eq!(renamed.rm[1], Rm::Prepared);
        assert_eq!(renamed.rm[0], Rm::Working);
        assert_eq!((renamed.tm_prepared, renamed.prepared_sent), (0b010, 0b010));
    }
}
