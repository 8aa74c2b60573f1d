//! The example operator's custom resource: a backup of some size. Its CRD,
//! generated from this derive, is `examples/deploy/crd.json` (a test keeps
//! the two equal).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A backup's desired state.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "example.steadfast.dev",
    version = "v1",
    kind = "Backup",
    namespaced
)]
pub struct BackupSpec {
    /// Gigabytes to keep.
    pub size: i64,
}
