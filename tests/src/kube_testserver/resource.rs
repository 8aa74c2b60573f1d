//! The resource types the server serves: the built-in ones, and those that
//! CustomResourceDefinitions register; and the discovery documents that list them.

use serde_json::{json, Value};

use super::status::{ApiError, ApiResult, Cause};

/// Identifies a resource type across its versions: API group (`""` for the
/// core group) and plural name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// API group, `""` for core.
    pub group: String,
    /// Plural resource name, as in the URL.
    pub plural: String,
}

/// One served version of a resource type.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    /// `v1`, `v1beta1`, ...
    pub name: String,
    /// Whether this version has the `status` subresource.
    pub status: bool,
}

/// A resource type: what its URLs are, what its objects are called, which
/// versions are served.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    /// Group and plural.
    pub key: ResourceKey,
    /// Lower-case singular name.
    pub singular: String,
    /// The `kind` of its objects.
    pub kind: String,
    /// The `kind` of its lists.
    pub list_kind: String,
    /// Short names (`cm`, ...).
    pub short_names: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Served versions; the first is the storage version.
    pub versions: Vec<Version>,
    /// Defined by a CustomResourceDefinition (deleting returns the object, as
    /// the real server does for custom resources; built-ins return a `Status`).
    pub custom: bool,
}

impl ResourceType {
    fn builtin(
        group: &str,
        version: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        status: bool,
    ) -> Self {
        Self {
            key: ResourceKey {
                group: group.into(),
                plural: plural.into(),
            },
            singular: kind.to_ascii_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            short_names: Vec::new(),
            namespaced,
            versions: vec![Version {
                name: version.into(),
                status,
            }],
            custom: false,
        }
    }

    /// The built-in types: core `v1` namespaces, configmaps, events and
    /// service accounts, `events.k8s.io/v1` events, RBAC's roles and
    /// bindings, `apps/v1` deployments, `policy/v1` pod disruption budgets
    /// (stored and served, not acted on: no pod is ever started), and
    /// CustomResourceDefinitions.
    pub fn builtins() -> Vec<Self> {
        let mut configmaps = Self::builtin("", "v1", "configmaps", "ConfigMap", true, false);
        configmaps.short_names = vec!["cm".into()];
        let mut namespaces = Self::builtin("", "v1", "namespaces", "Namespace", false, false);
        namespaces.short_names = vec!["ns".into()];
        let mut crds = Self::builtin(
            CRD_GROUP,
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            true,
        );
        crds.short_names = vec!["crd".into(), "crds".into()];
        let mut service_accounts =
            Self::builtin("", "v1", "serviceaccounts", "ServiceAccount", true, false);
        service_accounts.short_names = vec!["sa".into()];
        let mut deployments = Self::builtin("apps", "v1", "deployments", "Deployment", true, true);
        deployments.short_names = vec!["deploy".into()];
        let mut budgets = Self::builtin(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            true,
        );
        budgets.short_names = vec!["pdb".into()];
        let rbac = "rbac.authorization.k8s.io";
        vec![
            namespaces,
            configmaps,
            Self::builtin("", "v1", "events", "Event", true, false),
            service_accounts,
            Self::builtin("events.k8s.io", "v1", "events", "Event", true, false),
            Self::builtin(rbac, "v1", "roles", "Role", true, false),
            Self::builtin(rbac, "v1", "rolebindings", "RoleBinding", true, false),
            Self::builtin(rbac, "v1", "clusterroles", "ClusterRole", false, false),
            Self::builtin(
                rbac,
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                false,
                false,
            ),
            deployments,
            budgets,
            crds,
        ]
    }

    /// Whether `version` is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v.name == version)
    }

    /// Whether `version` has the `status` subresource.
    pub fn has_status(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v.name == version && v.status)
    }

    /// `v1` for core, `group/version` otherwise.
    pub fn api_version(&self, version: &str) -> String {
        group_version(&self.key.group, version)
    }

    /// The storage version, which stored objects carry.
    pub fn storage_version(&self) -> &str {
        &self.versions[0].name
    }

    /// The `APIResource` entries of this type (and its status subresource) for
    /// an `APIResourceList`.
    pub fn discovery(&self, version: &str) -> Vec<Value> {
        let mut entries = vec![json!({
            "name": self.key.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            "shortNames": self.short_names,
        })];
        if self.has_status(version) {
            entries.push(json!({
                "name": format!("{}/status", self.key.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        entries
    }

    /// Whether `name` (as a test or `kubectl` would write it: `configmaps`,
    /// `widgets.example.com`) names this type.
    pub fn is_named(&self, name: &str) -> bool {
        name == self.key.plural
            || name == format!("{}.{}", self.key.plural, self.key.group)
            || name == self.singular
    }
}

/// The group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

/// `v1` for core, `group/version` otherwise.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// Reads the resource type a CustomResourceDefinition defines, refusing it
/// with 422 where the real server would.
pub fn from_crd(crd: &Value) -> ApiResult<ResourceType> {
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let invalid =
        |cause: Cause| ApiError::invalid("CustomResourceDefinition", CRD_GROUP, name, vec![cause]);
    let spec = &crd["spec"];
    let text = |value: &Value, field: &str| -> ApiResult<String> {
        match value.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_owned()),
            _ => Err(invalid(Cause::required(field, ""))),
        }
    };
    let group = text(&spec["group"], "spec.group")?;
    let names = &spec["names"];
    let plural = text(&names["plural"], "spec.names.plural")?;
    let kind = text(&names["kind"], "spec.names.kind")?;
    if name != format!("{plural}.{group}") {
        return Err(invalid(Cause::invalid(
            "metadata.name",
            &format!("{name:?}"),
            "must be spec.names.plural+\".\"+spec.group",
        )));
    }
    let namespaced = match spec["scope"].as_str() {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        None | Some("") => return Err(invalid(Cause::required("spec.scope", ""))),
        Some(other) => {
            return Err(invalid(Cause::not_supported(
                "spec.scope",
                &format!("{other:?}"),
                &["Cluster", "Namespaced"],
            )))
        }
    };
    let mut versions = Vec::new();
    let mut storage = None;
    for (i, version) in spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let version_name = text(&version["name"], &format!("spec.versions[{i}].name"))?;
        if version["storage"].as_bool() == Some(true) {
            if storage.is_some() {
                return Err(invalid(Cause::invalid(
                    "spec.versions",
                    &spec["versions"].to_string(),
                    "must have exactly one version marked as storage version",
                )));
            }
            storage = Some(versions.len());
        }
        if version["served"].as_bool() != Some(false) {
            versions.push(Version {
                name: version_name,
                status: version["subresources"].get("status").is_some(),
            });
        }
    }
    let Some(storage) = storage.filter(|&s| s < versions.len()) else {
        return Err(invalid(Cause::invalid(
            "spec.versions",
            &spec["versions"].to_string(),
            "must have exactly one served version marked as storage version",
        )));
    };
    versions.swap(0, storage);
    let string = |value: &Value| value.as_str().map(str::to_owned);
    Ok(ResourceType {
        key: ResourceKey { group, plural },
        singular: string(&names["singular"]).unwrap_or_else(|| kind.to_ascii_lowercase()),
        list_kind: string(&names["listKind"]).unwrap_or_else(|| format!("{kind}List")),
        kind,
        short_names: names["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(string)
            .collect(),
        namespaced,
        versions,
        custom: true,
    })
}

/// The status the real server gives an accepted CRD: names accepted, established.
pub fn crd_status(crd: &Value, now: &str) -> Value {
    let condition = |kind: &str, reason: &str| json!({ "type": kind, "status": "True", "reason": reason, "message": "", "lastTransitionTime": now });
    let storage: Vec<&Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| &v["name"])
        .collect();
    json!({
        "conditions": [condition("NamesAccepted", "NoConflicts"), condition("Established", "InitialNamesAccepted")],
        "acceptedNames": crd["spec"]["names"],
        "storedVersions": storage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, scope: &str, versions: Value) -> Value {
        json!({
            "metadata": { "name": name },
            "spec": {
                "group": "example.com",
                "names": { "plural": "widgets", "kind": "Widget", "shortNames": ["wd"] },
                "scope": scope,
                "versions": versions,
            }
        })
    }

    #[test]
    fn crd_should_define_a_type_with_its_storage_version_first() {
        let versions = json!([
            { "name": "v1beta1", "served": true, "storage": false },
            { "name": "v1", "served": true, "storage": true, "subresources": { "status": {} } },
        ]);
        let rt = from_crd(&crd("widgets.example.com", "Namespaced", versions)).unwrap();
        assert_eq!(rt.storage_version(), "v1");
        assert!(rt.has_status("v1") && !rt.has_status("v1beta1"));
        assert_eq!(rt.singular, "widget");
        assert_eq!(rt.list_kind, "WidgetList");
        assert!(rt.is_named("widgets.example.com") && rt.is_named("widgets"));
        assert_eq!(rt.discovery("v1").len(), 2);
    }

    #[test]
    fn crd_should_be_refused_as_the_real_server_refuses_it() {
        let one = json!([{ "name": "v1", "served": true, "storage": true }]);
        let wrong_name =
            from_crd(&crd("widgets.other.com", "Namespaced", one.clone())).unwrap_err();
        assert_eq!((wrong_name.code, wrong_name.reason), (422, "Invalid"));
        assert!(wrong_name.message.contains("must be spec.names.plural"));
        let scope = from_crd(&crd("widgets.example.com", "Galaxy", one)).unwrap_err();
        assert!(scope.message.contains("spec.scope"));
        let no_storage = json!([{ "name": "v1", "served": true, "storage": false }]);
        let error = from_crd(&crd("widgets.example.com", "Cluster", no_storage)).unwrap_err();
        assert!(error.message.contains("storage version"));
    }
}
