//! The leasequeue runtime: what a scheduler and a controller need to run the
//! spec's roles against real etcd.
//!
//! - [`etcd`]: the etcd adapter, the etcd operations the roles' effects name,
//!   each under a deadline, with etcd's answers read back in the spec's terms.

pub mod etcd;
