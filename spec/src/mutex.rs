//! A worked example of the temporal language: the filter lock (Peterson's
//! algorithm generalised to `n` processes) and a broken lock that keeps only
//! the victim check.
//!
//! It is small, classic and has both kinds of verdict: mutual exclusion holds
//! in both variants, while "a process that tries eventually enters" holds for
//! the filter lock only under weak fairness and fails for the victim-only lock,
//! whose lasso is a process waiting forever while the others think.
//!
//! Process `i` climbs levels `1..n`; at level `l` it raises `level[i]` to `l`,
//! yields by writing `victim[l] = i`, then waits while it is the victim and
//! (filter lock only) some other process stands at level `l` or above.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use crate::symmetry::{Interchangeable, Renaming};
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// Which waiting rule the processes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockVariant {
    /// The filter lock: wait while `victim[l] = i` and another process is at
    /// level `l` or above. Mutually exclusive and starvation-free.
    Filter,
    /// Wait while `victim[l] = i`, whoever else is around. Mutually exclusive,
    /// but a lone contender waits forever.
    VictimOnly,
}

/// Where one process is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pc {
    /// Outside the lock, thinking; it may stay here forever.
    Idle,
    /// About to raise its level to the given one.
    Raise(u8),
    /// About to yield the given level by naming itself its victim.
    Yield(u8),
    /// Waiting to pass the given level.
    Wait(u8),
    /// In the critical section.
    Critical,
}

impl Pc {
    /// Whether the process has asked for the lock and not yet got it.
    pub fn is_trying(self) -> bool {
        matches!(self, Pc::Raise(_) | Pc::Yield(_) | Pc::Wait(_))
    }

    /// Whether the process holds the lock.
    pub fn is_critical(self) -> bool {
        self == Pc::Critical
    }
}

/// The most processes a [`Lock`] takes; states are fixed-size arrays so that
/// large instances stay small in memory.
pub const MAX_PROCESSES: u8 = 6;

/// The shared variables and every process's program counter.
///
/// Only the first `processes` entries of each array are in use; `Debug` shows
/// only those.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LockState {
    processes: u8,
    /// How often each process may enter; 0: without limit.
    rounds: u8,
    /// How often each process has entered (counted only under a limit).
    entries: [u8; MAX_PROCESSES as usize],
    /// Each process's program counter.
    pub pc: [Pc; MAX_PROCESSES as usize],
    /// `level[i]`: the highest level process `i` has raised to (0: none).
    pub level: [u8; MAX_PROCESSES as usize],
    /// `victim[l]`: the last process to yield level `l` (index 0 unused).
    pub victim: [u8; MAX_PROCESSES as usize],
}

impl LockState {
    /// The program counters of the processes in use.
    pub fn pcs(&self) -> &[Pc] {
        &self.pc[..usize::from(self.processes)]
    }
}

impl std::fmt::Debug for LockState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = usize::from(self.processes);
        let mut debug = f.debug_struct("LockState");
        debug
            .field("pc", &&self.pc[..n])
            .field("level", &&self.level[..n])
            .field("victim", &&self.victim[..n]);
        if self.rounds > 0 {
            debug.field("entries", &&self.entries[..n]);
        }
        debug.finish()
    }
}

/// A step of one process; the field is the process's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockAction {
    /// An idle process keeps thinking (a stutter step).
    ProcThink(u8),
    /// An idle process asks for the lock.
    ProcTry(u8),
    /// A process raises its level.
    ProcRaise(u8),
    /// A process names itself the victim of its level.
    ProcYield(u8),
    /// A waiting process passes its level (to the next, or into the critical
    /// section from the last).
    ProcPass(u8),
    /// A process leaves the critical section and drops its level.
    ProcExit(u8),
}

impl LockAction {
    /// The process whose lock step this is: a step the scheduler must keep
    /// giving that process a chance to take. Thinking and asking for the lock
    /// are the user's choice, not the lock's, and belong to no one.
    pub fn lock_step_of(&self) -> Option<u8> {
        match *self {
            LockAction::ProcRaise(i)
            | LockAction::ProcYield(i)
            | LockAction::ProcPass(i)
            | LockAction::ProcExit(i) => Some(i),
            LockAction::ProcThink(_) | LockAction::ProcTry(_) => None,
        }
    }

    /// Whether this is a lock step of process `I` (a fairness class).
    pub fn is_lock_step_of<const I: u8>(&self) -> bool {
        self.lock_step_of() == Some(I)
    }
}

/// The lock for a number of processes under one [`LockVariant`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    processes: u8,
    variant: LockVariant,
    rounds: u8,
}

/// A [`Lock`] was asked for with a number of processes it cannot take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessCountError(pub u8);

impl std::fmt::Display for ProcessCountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a lock takes 2 to {MAX_PROCESSES} processes, not {}",
            self.0
        )
    }
}

impl std::error::Error for ProcessCountError {}

impl Lock {
    /// A lock shared by `processes` processes, from 2 to [`MAX_PROCESSES`].
    ///
    /// # Errors
    ///
    /// [`ProcessCountError`] when `processes` is out of that range.
    pub fn new(processes: u8, variant: LockVariant) -> Result<Self, ProcessCountError> {
        if (2..=MAX_PROCESSES).contains(&processes) {
            Ok(Lock {
                processes,
                variant,
                rounds: 0,
            })
        } else {
            Err(ProcessCountError(processes))
        }
    }

    /// The same lock, where each process may enter at most `rounds` times (0:
    /// without limit). A limit makes the graph acyclic but for stutter steps,
    /// so that checkers without cycle detection can explore it too.
    pub fn with_rounds(self, rounds: u8) -> Self {
        Lock { rounds, ..self }
    }

    /// The highest level, from which passing leads into the critical section.
    fn top_level(&self) -> u8 {
        self.processes - 1
    }

    /// Whether process `i`, waiting at level `l`, must keep waiting.
    fn must_wait(&self, state: &LockState, i: u8, l: u8) -> bool {
        let is_victim = state.victim[usize::from(l)] == i;
        match self.variant {
            LockVariant::VictimOnly => is_victim,
            LockVariant::Filter => {
                is_victim
                    && (0..self.processes)
                        .filter(|&k| k != i)
                        .any(|k| state.level[usize::from(k)] >= l)
            }
        }
    }
}

impl Model for Lock {
    type State = LockState;
    type Action = LockAction;

    fn init_states(&self) -> Vec<LockState> {
        vec![LockState {
            processes: self.processes,
            rounds: self.rounds,
            entries: [0; MAX_PROCESSES as usize],
            pc: [Pc::Idle; MAX_PROCESSES as usize],
            level: [0; MAX_PROCESSES as usize],
            victim: [0; MAX_PROCESSES as usize],
        }]
    }

    fn actions(&self, state: &LockState, actions: &mut Vec<LockAction>) {
        for i in 0..self.processes {
            match state.pc[usize::from(i)] {
                Pc::Idle => {
                    actions.push(LockAction::ProcThink(i));
                    if self.rounds == 0 || state.entries[usize::from(i)] < self.rounds {
                        actions.push(LockAction::ProcTry(i));
                    }
                }
                Pc::Raise(_) => actions.push(LockAction::ProcRaise(i)),
                Pc::Yield(_) => actions.push(LockAction::ProcYield(i)),
                Pc::Wait(l) => {
                    if !self.must_wait(state, i, l) {
                        actions.push(LockAction::ProcPass(i));
                    }
                }
                Pc::Critical => actions.push(LockAction::ProcExit(i)),
            }
        }
    }

    fn next_state(&self, state: &LockState, action: LockAction) -> Option<LockState> {
        let mut next = state.clone();
        match action {
            LockAction::ProcThink(_) => {}
            LockAction::ProcTry(i) => next.pc[usize::from(i)] = Pc::Raise(1),
            LockAction::ProcRaise(i) => {
                let Pc::Raise(l) = state.pc[usize::from(i)] else {
                    return None;
                };
                next.level[usize::from(i)] = l;
                next.pc[usize::from(i)] = Pc::Yield(l);
            }
            LockAction::ProcYield(i) => {
                let Pc::Yield(l) = state.pc[usize::from(i)] else {
                    return None;
                };
                next.victim[usize::from(l)] = i;
                next.pc[usize::from(i)] = Pc::Wait(l);
            }
            LockAction::ProcPass(i) => {
                let Pc::Wait(l) = state.pc[usize::from(i)] else {
                    return None;
                };
                next.pc[usize::from(i)] = if l == self.top_level() {
                    if self.rounds > 0 {
                        next.entries[usize::from(i)] += 1;
                    }
                    Pc::Critical
                } else {
                    Pc::Raise(l + 1)
                };
            }
            LockAction::ProcExit(i) => {
                next.level[usize::from(i)] = 0;
                next.pc[usize::from(i)] = Pc::Idle;
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            // At most one process is in the critical section:
            // □(|{i : pc[i] = Critical}| ≤ 1).
            Property::always("mutual exclusion", |_, s: &LockState| {
                s.pcs().iter().filter(|pc| pc.is_critical()).count() <= 1
            }),
            // Somebody gets the lock: ◇(∃i : pc[i] = Critical) is reachable.
            Property::sometimes("a process enters", |_, s: &LockState| {
                s.pcs().iter().any(|pc| pc.is_critical())
            }),
            // Two processes contend at once, so exclusion is really tested.
            Property::sometimes("two processes contend", |_, s: &LockState| {
                s.pcs().iter().filter(|pc| pc.is_trying()).count() >= 2
            }),
        ]
    }
}

impl TemporalModel for Lock {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        // One class per process: weak fairness of all lock steps together
        // would let one process run while another starves.
        let classes = [
            Fairness::weak("process 0", LockAction::is_lock_step_of::<0>),
            Fairness::weak("process 1", LockAction::is_lock_step_of::<1>).of(0, 1),
            Fairness::weak("process 2", LockAction::is_lock_step_of::<2>).of(0, 2),
            Fairness::weak("process 3", LockAction::is_lock_step_of::<3>).of(0, 3),
            Fairness::weak("process 4", LockAction::is_lock_step_of::<4>).of(0, 4),
            Fairness::weak("process 5", LockAction::is_lock_step_of::<5>).of(0, 5),
        ];
        classes
            .into_iter()
            .take(usize::from(self.processes))
            .collect()
    }

    /// Every process but 0, which the liveness property names: they run
    /// one program and differ only by their ids.
    fn interchangeable(&self) -> Vec<Interchangeable> {
        vec![Interchangeable::new("process", 1..self.processes)]
    }

    /// Moves each process's entries to its new index and renames the
    /// victims (a level no process yielded yet names process 0, which keeps
    /// its name).
    fn rename(&self, state: &LockState, renaming: &Renaming) -> LockState {
        let mut renamed = state.clone();
        for i in 0..self.processes {
            let to = usize::from(renaming.id(0, i));
            let from = usize::from(i);
            renamed.pc[to] = state.pc[from];
            renamed.level[to] = state.level[from];
            renamed.entries[to] = state.entries[from];
        }
        for victim in &mut renamed.victim[1..usize::from(self.processes)] {
            *victim = renaming.id(0, *victim);
        }
        renamed
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![
            // A process that asks for the lock gets it (process 0 stands for
            // all: the processes are symmetric): trying(0) ~> critical(0).
            Liveness::leads_to(
                "a trying process enters",
                |_, s: &LockState| s.pc[0].is_trying(),
                |_, s: &LockState| s.pc[0].is_critical(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The actions open to process 0 of two after it tried, raised and
    /// yielded while process 1 stayed idle.
    fn actions_of_lone_contender(variant: LockVariant) -> Vec<LockAction> {
        let model = Lock::new(2, variant).unwrap();
        let mut state = model.init_states().remove(0);
        for action in [
            LockAction::ProcTry(0),
            LockAction::ProcRaise(0),
            LockAction::ProcYield(0),
        ] {
            state = model.next_state(&state, action).unwrap();
        }
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        actions
    }

    #[test]
    fn lock_should_refuse_a_process_count_out_of_range() {
        assert_eq!(Lock::new(1, LockVariant::Filter), Err(ProcessCountError(1)));
        assert!(Lock::new(MAX_PROCESSES + 1, LockVariant::Filter).is_err());
    }

    #[test]
    fn lone_contender_should_pass_the_filter_lock() {
        let actions = actions_of_lone_contender(LockVariant::Filter);
        assert!(actions.contains(&LockAction::ProcPass(0)));
    }

    #[test]
    fn lone_contender_should_wait_at_the_victim_only_lock() {
        let actions = actions_of_lone_contender(LockVariant::VictimOnly);
        assert!(!actions.contains(&LockAction::ProcPass(0)));
    }
}
