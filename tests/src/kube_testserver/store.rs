//! The object store: every object, the one resourceVersion counter they all
//! share, and the bounded history of events that watches read from.
//!
//! Every write goes through [`Store::commit`], which takes the next revision,
//! stamps it on the object as its `resourceVersion` and appends exactly one
//! event to the history, so revisions and events correspond one to one (as
//! etcd's revisions do). Everything here is synchronous: the HTTP layer holds
//! the store's lock only for the length of one call.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::patch::{self, PatchKind};
use super::resource::{self, ResourceKey, ResourceType, CRD_GROUP};
use super::selector::{FieldSelector, LabelSelector};
use super::status::{ApiError, ApiResult, Cause};
use super::validation::{self, NameRule};

/// Where an object lives: its type, namespace (`""` if cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// Group and plural of its type.
    pub resource: ResourceKey,
    /// Its namespace, `""` for a cluster-scoped object.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What a request addresses: a resource type in one served version, in one
/// namespace or (with `None`) all of them.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The resource type.
    pub resource: ResourceType,
    /// The version the request was made in; objects go out in it.
    pub version: String,
    /// The namespace of the URL, if any.
    pub namespace: Option<String>,
}

impl Scope {
    /// The key of the object `name` in this scope.
    pub fn key(&self, name: &str) -> ObjectKey {
        ObjectKey {
            resource: self.resource.key.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name: name.to_owned(),
        }
    }

    /// Whether the object `key` is of this scope's type and namespace.
    pub fn contains(&self, key: &ObjectKey) -> bool {
        key.resource == self.resource.key
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == key.namespace)
    }

    /// `object` as the client asked for it: in the request's version.
    pub fn present(&self, mut object: Value) -> Value {
        object["apiVersion"] = Value::String(self.resource.api_version(&self.version));
        object
    }

    fn group(&self) -> &str {
        &self.resource.key.group
    }

    fn kind(&self) -> &str {
        &self.resource.kind
    }

    /// How names of this type are checked: namespaces are RFC 1123 labels,
    /// everything else served here RFC 1123 subdomains.
    fn name_rule(&self) -> NameRule {
        if self.resource.key == namespaces_key() {
            NameRule::Label
        } else {
            NameRule::Subdomain
        }
    }

    fn plural(&self) -> &str {
        &self.resource.key.plural
    }
}

/// The part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself: a change to `status` is ignored where the type has
    /// a status subresource.
    Main,
    /// `/status`: only `status` changes.
    Status,
}

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object was removed.
    Deleted,
}

/// One change to one object, at one revision.
#[derive(Debug)]
pub struct Event {
    /// The revision the change took; also the object's resourceVersion.
    pub revision: u64,
    /// Created, changed or removed.
    pub kind: EventKind,
    /// Which object.
    pub key: ObjectKey,
    /// The object after the change (its last state, for a removal).
    pub object: Value,
    /// The object before the change, so that a filtered watch can tell an
    /// object that stopped matching from one that never did.
    pub previous: Option<Value>,
}

/// What a delete did.
#[derive(Debug)]
pub enum Deletion {
    /// Finalizers remain: the object has a deletionTimestamp and stays.
    Pending(Value),
    /// The object is gone; this was its last state.
    Deleted(Value),
}

/// Which objects of a scope a list or watch wants.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Filter {
    fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }
}

/// Which state of the store a list serves: its `resourceVersion` and
/// `resourceVersionMatch` (the table "resourceVersionMatch and paging
/// parameters for list" of the API concepts page,
/// <https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list>).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListAt {
    /// No resourceVersion: the most recent state.
    Latest,
    /// `resourceVersion=0`: any state; this server serves the latest.
    Any,
    /// A resourceVersion, with `NotOlderThan` or no match: the latest
    /// state, once the store has reached that revision.
    NotOlderThan(u64),
    /// `resourceVersionMatch=Exact`: the state at exactly that revision,
    /// 410 once it is compacted.
    Exact(u64),
}

impl ListAt {
    /// Reads a list request's `resourceVersion`, `resourceVersionMatch` and
    /// `continue`, refusing what the real server refuses:
    /// `ValidateListOptions`
    /// (`staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/validation/validation.go`)
    /// with 422, and a resourceVersion beside a continue token with 400, as
    /// the etcd3 store does.
    pub fn parse(
        version: Option<&str>,
        matching: Option<&str>,
        continue_token: Option<&str>,
    ) -> ApiResult<Self> {
        let version = version.filter(|v| !v.is_empty());
        let matching = matching.filter(|m| !m.is_empty());
        let continued = continue_token.is_some_and(|c| !c.is_empty());
        if let Some(matching) = matching {
            let field = "resourceVersionMatch";
            let mut causes = Vec::new();
            if version.is_none() {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if continued {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if !matches!(matching, "Exact" | "NotOlderThan") {
                causes.push(Cause::not_supported(
                    field,
                    &format!("{matching:?}"),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if matching == "Exact" && version == Some("0") {
                causes.push(Cause::forbidden(
                    field,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            if !causes.is_empty() {
                return Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", causes));
            }
        }
        let Some(version) = version else {
            return Ok(Self::Latest);
        };
        if continued {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        if version == "0" {
            return Ok(Self::Any);
        }
        let revision = version.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resource version {version:?}: resourceVersions are the strings this server handed out"
            ))
        })?;
        Ok(match matching {
            Some("Exact") => Self::Exact(revision),
            _ => Self::NotOlderThan(revision),
        })
    }

    /// The revision the store must have reached before the list is served.
    pub fn minimum(self) -> Option<u64> {
        match self {
            Self::Latest | Self::Any => None,
            Self::NotOlderThan(revision) | Self::Exact(revision) => Some(revision),
        }
    }
}

/// The history no longer holds every event after the revision a watch asked
/// to start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    /// The revision the watch asked for.
    pub requested: u64,
    /// The oldest revision from which a watch can still start.
    pub oldest: u64,
}

/// Every object and the history of their changes.
#[derive(Debug, Clone)]
pub struct Store {
    types: Vec<ResourceType>,
    objects: BTreeMap<ObjectKey, Value>,
    revision: u64,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// Every event at or below this revision is gone from the history.
    compacted: u64,
    /// Injected faults: how many more writes of each object to refuse with 409.
    conflicts: HashMap<ObjectKey, u32>,
    /// Likewise, of writes of the object itself only (its `status`
    /// subresource's are served).
    main_conflicts: HashMap<ObjectKey, u32>,
}

impl Store {
    /// A store with the built-in types and the `default` and `kube-system`
    /// namespaces, keeping at most `history_limit` events.
    pub fn new(history_limit: usize) -> Self {
        let mut store = Self {
            types: ResourceType::builtins(),
            objects: BTreeMap::new(),
            revision: 0,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted: 0,
            conflicts: HashMap::new(),
            main_conflicts: HashMap::new(),
        };
        let namespaces = store
            .scope_of("namespaces", None)
            .expect("namespaces are built in");
        for name in ["default", "kube-system"] {
            let namespace =
                json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } });
            store
                .create(&namespaces, namespace)
                .expect("a fresh store takes its namespaces");
        }
        store
    }

    /// The current revision: the resourceVersion of the newest change.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Every served type.
    pub fn types(&self) -> &[ResourceType] {
        &self.types
    }

    /// The type served at `group/version` under `plural`.
    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> ApiResult<ResourceType> {
        self.types
            .iter()
            .find(|t| t.key.group == group && t.key.plural == plural && t.serves(version))
            .cloned()
            .ok_or_else(|| {
                ApiError::no_route(&format!(
                    "{}/{plural}",
                    resource::group_version(group, version)
                ))
            })
    }

    /// The scope of a type named as `kubectl` names it (`configmaps`,
    /// `widgets.example.com`), in its storage version, in `namespace`: which a
    /// namespaced type needs and a cluster-scoped one refuses.
    pub fn scope_of(&self, name: &str, namespace: Option<String>) -> ApiResult<Scope> {
        let resource = self
            .types
            .iter()
            .find(|t| t.is_named(name))
            .cloned()
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "no resource type is named {name:?}; name one as kubectl does (configmaps, widgets.example.com)"
                ))
            })?;
        match (&namespace, resource.namespaced) {
            (None, true) => Err(ApiError::bad_request(format!(
                "{name} are namespaced: give a namespace"
            ))),
            (Some(ns), false) => Err(ApiError::bad_request(format!(
                "{name} are cluster-scoped: give no namespace (not {ns:?})"
            ))),
            _ => Ok(Scope {
                version: resource.storage_version().to_owned(),
                resource,
                namespace,
            }),
        }
    }

    /// One object.
    pub fn get(&self, scope: &Scope, name: &str) -> ApiResult<Value> {
        let object = self.stored(scope, name)?;
        Ok(scope.present(object.clone()))
    }

    /// The objects of a scope that pass `filter`, ordered by namespace and
    /// name, as they were at the revision `at` names, `limit` at a time;
    /// `continue_token` resumes after the last page, at the first page's
    /// revision, so that every page is of one snapshot (as etcd serves them).
    ///
    /// `at` must not be ahead of the store: the HTTP layer waits for that
    /// revision first (see [`ListAt::minimum`]).
    pub fn list(
        &self,
        scope: &Scope,
        filter: &Filter,
        at: ListAt,
        limit: Option<usize>,
        continue_token: Option<&str>,
    ) -> ApiResult<Value> {
        let (revision, after) = match continue_token {
            None | Some("") => match at {
                ListAt::Exact(revision) => (revision, None),
                ListAt::Latest | ListAt::Any | ListAt::NotOlderThan(_) => (self.revision, None),
            },
            Some(token) => {
                let (revision, key) = decode_continue(token, scope)?;
                if revision < self.compacted {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter.",
                    ));
                }
                (revision, Some(key))
            }
        };
        let objects = self.objects_at(scope, revision).map_err(|_| {
            ApiError::expired("The resourceVersion for the provided list is too old.")
        })?;
        let mut matching = objects
            .iter()
            .filter(|(key, _)| after.as_ref().is_none_or(|after| *key > after))
            .filter(|(_, object)| filter.matches(object));
        let limit = limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let items: Vec<(&ObjectKey, &Value)> = matching.by_ref().take(limit).collect();
        let remaining = matching.count();
        let mut metadata = json!({ "resourceVersion": revision.to_string() });
        if remaining > 0 {
            let (last, _) = items
                .last()
                .expect("a page with more after it is not empty");
            metadata["continue"] =
                Value::String(format!("{revision}/{}/{}", last.namespace, last.name));
            if filter.labels == LabelSelector::default()
                && filter.fields == FieldSelector::default()
            {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        Ok(json!({
            "kind": scope.resource.list_kind,
            "apiVersion": scope.resource.api_version(&scope.version),
            "metadata": metadata,
            "items": items.into_iter().map(|(_, o)| scope.present(o.clone())).collect::<Vec<_>>(),
        }))
    }

    /// The objects of a scope as they were at `revision`: the current ones
    /// with every later change in the history undone, newest first. Refused
    /// when the history no longer holds every change after `revision`.
    fn objects_at(
        &self,
        scope: &Scope,
        revision: u64,
    ) -> Result<BTreeMap<ObjectKey, Value>, Expired> {
        if revision < self.compacted {
            return Err(Expired {
                requested: revision,
                oldest: self.compacted,
            });
        }
        let mut objects: BTreeMap<ObjectKey, Value> = self
            .objects_in(scope)
            .map(|(key, object)| (key.clone(), object.clone()))
            .collect();
        for event in self.history.iter().rev() {
            if event.revision <= revision {
                break;
            }
            if !scope.contains(&event.key) {
                continue;
            }
            match &event.previous {
                Some(previous) => objects.insert(event.key.clone(), previous.clone()),
                None => objects.remove(&event.key),
            };
        }
        Ok(objects)
    }

    /// Every object of a scope that passes `filter`, and the revision they
    /// were read at: what a watch without a resourceVersion starts with.
    pub fn snapshot(&self, scope: &Scope, filter: &Filter) -> (Vec<Value>, u64) {
        let objects = self
            .objects_in(scope)
            .filter(|(_, object)| filter.matches(object))
            .map(|(_, object)| scope.present(object.clone()))
            .collect();
        (objects, self.revision)
    }

    /// Creates an object (POST).
    pub fn create(&mut self, scope: &Scope, mut object: Value) -> ApiResult<Value> {
        if !scope.resource.custom {
            // A built-in type's decoder defaults the kind and version from
            // the URL (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go`
            // decodes with the URL's GroupVersionKind as default); a custom
            // resource's unstructured decoder does not.
            if let Some(map) = object.as_object_mut() {
                map.entry("apiVersion")
                    .or_insert_with(|| scope.resource.api_version(&scope.version).into());
                map.entry("kind")
                    .or_insert_with(|| scope.resource.kind.clone().into());
            }
        }
        check_identity(scope, &object, true)?;
        validation::check_types(&scope.resource.kind, &scope.version, &object)?;
        let metadata = metadata_of(&mut object)?;
        if let Some(namespace) = &scope.namespace {
            match metadata.get("namespace").and_then(Value::as_str) {
                Some(given) if !given.is_empty() && given != namespace => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {}
            }
            metadata.insert("namespace".into(), Value::String(namespace.clone()));
        } else {
            metadata.remove("namespace");
        }
        let name = match (
            metadata.get("name").and_then(Value::as_str),
            metadata.get("generateName").and_then(Value::as_str),
        ) {
            (Some(name), _) if !name.is_empty() => name.to_owned(),
            (_, Some(prefix)) if !prefix.is_empty() => format!(
                "{prefix}{}",
                &uuid::Uuid::new_v4().simple().to_string()[..5]
            ),
            _ => {
                return Err(ApiError::invalid(
                    scope.kind(),
                    scope.group(),
                    "",
                    vec![Cause::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ))
            }
        };
        metadata.insert("name".into(), Value::String(name.clone()));
        let causes = validation::meta_causes(&object, Some(scope.name_rule()));
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                scope.kind(),
                scope.group(),
                &name,
                causes,
            ));
        }
        let metadata = metadata_of(&mut object)?;
        if metadata
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty())
        {
            // The real server answers this with a 500 (its storage layer refuses it).
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        for system in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            metadata.remove(system);
        }
        let now = now();
        metadata.insert(
            "uid".into(),
            Value::String(uuid::Uuid::new_v4().to_string()),
        );
        metadata.insert("creationTimestamp".into(), Value::String(now.clone()));
        metadata.insert("generation".into(), json!(1));
        if scope.resource.namespaced {
            let namespace = scope.namespace.clone().unwrap_or_default();
            let namespaces = ObjectKey {
                resource: namespaces_key(),
                namespace: String::new(),
                name: namespace.clone(),
            };
            if !self.objects.contains_key(&namespaces) {
                return Err(ApiError::not_found("namespaces", "", &namespace));
            }
        }
        let key = scope.key(&name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(
                scope.plural(),
                scope.group(),
                &name,
            ));
        }
        let object_map = object.as_object_mut().expect("checked to be an object");
        if scope.resource.key.group == CRD_GROUP {
            let crd = Value::Object(object_map.clone());
            resource::from_crd(&crd)?;
            object_map.insert("status".into(), resource::crd_status(&crd, &now));
        } else if scope.resource.key == namespaces_key() {
            object_map.insert("status".into(), json!({ "phase": "Active" }));
        } else if scope.resource.has_status(&scope.version) {
            object_map.remove("status");
        }
        object_map.insert(
            "apiVersion".into(),
            Value::String(scope.resource.api_version(scope.resource.storage_version())),
        );
        let stored = self.commit(key, None, object, false);
        Ok(scope.present(stored))
    }

    /// Replaces an object (PUT), with optimistic concurrency when the body
    /// carries a resourceVersion.
    pub fn update(
        &mut self,
        scope: &Scope,
        name: &str,
        body: Value,
        subresource: Subresource,
    ) -> ApiResult<Value> {
        check_identity(scope, &body, false)?;
        check_name(&body, name)?;
        let old = self.stored(scope, name)?.clone();
        let unconditional = body["metadata"]["resourceVersion"]
            .as_str()
            .is_none_or(str::is_empty);
        if unconditional && scope.resource.custom {
            // Custom resources, unlike most built-in types, take no update
            // without a precondition.
            return Err(ApiError::invalid(
                scope.kind(),
                scope.group(),
                name,
                vec![Cause::invalid(
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                )],
            ));
        }
        self.write(scope, name, old, body, subresource)
    }

    /// Patches an object. Server-side apply creates a missing object and
    /// otherwise merges the applied configuration in (without field ownership).
    /// Returns the object and whether it was created.
    pub fn patch(
        &mut self,
        scope: &Scope,
        name: &str,
        kind: PatchKind,
        body: Value,
        subresource: Subresource,
    ) -> ApiResult<(Value, bool)> {
        let old = match self.stored(scope, name) {
            Ok(old) => old.clone(),
            Err(_) if kind == PatchKind::Apply && subresource == Subresource::Main => {
                let mut object = body;
                if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata
                        .entry("name")
                        .or_insert_with(|| Value::String(name.to_owned()));
                }
                check_name(&object, name)?;
                return self.create(scope, object).map(|created| (created, true));
            }
            Err(missing) => return Err(missing),
        };
        let patched = patch::apply(kind, scope.present(old.clone()), body)?;
        self.write(scope, name, old, patched, subresource)
            .map(|object| (object, false))
    }

    /// Deletes an object: gracefully, by setting its deletionTimestamp, while
    /// it has finalizers; at once otherwise. `options` is the request's
    /// `DeleteOptions`, whose `preconditions` are honoured.
    pub fn delete(&mut self, scope: &Scope, name: &str, options: &Value) -> ApiResult<Deletion> {
        let old = self.stored(scope, name)?.clone();
        let preconditions = &options["preconditions"];
        for field in ["uid", "resourceVersion"] {
            let (Some(wanted), Some(actual)) = (
                preconditions[field].as_str(),
                old["metadata"][field].as_str(),
            ) else {
                continue;
            };
            if wanted != actual {
                return Err(precondition_failed(field, wanted, actual));
            }
        }
        let key = scope.key(name);
        if self.take_conflict(&key, Subresource::Main) {
            return Err(ApiError::conflict(scope.plural(), scope.group(), name));
        }
        if !old["metadata"]["deletionTimestamp"].is_null() {
            return Ok(Deletion::Pending(scope.present(old)));
        }
        let mut next = old.clone();
        if has_finalizers(&old) {
            next["metadata"]["deletionTimestamp"] = Value::String(now());
            next["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            next["metadata"]["generation"] = json!(generation(&old) + 1);
            let stored = self.commit(key, Some(old), next, false);
            return Ok(Deletion::Pending(scope.present(stored)));
        }
        let last = self.commit(key, Some(old), next, true);
        Ok(Deletion::Deleted(scope.present(last)))
    }

    /// Writes as another controller would: a merge patch of `body` on the
    /// object, with no precondition, no injected conflict and no status
    /// isolation. Returns the new object.
    pub fn foreign_write(&mut self, scope: &Scope, name: &str, body: Value) -> ApiResult<Value> {
        let old = self.stored(scope, name)?.clone();
        let mut patched = patch::apply(PatchKind::Merge, scope.present(old.clone()), body)?;
        patched["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        match self.prepare(scope, name, &old, patched, None)? {
            Some(next) => self.commit_prepared(scope, name, old, next),
            None => Ok(scope.present(old)),
        }
    }

    /// Makes the next `count` writes of an object fail with 409 Conflict;
    /// if `spare_status`, writes of the object itself only.
    pub fn refuse_writes(&mut self, key: ObjectKey, count: u32, spare_status: bool) {
        let counts = if spare_status {
            &mut self.main_conflicts
        } else {
            &mut self.conflicts
        };
        *counts.entry(key).or_default() += count;
    }

    /// Forgets every event: a watch from any revision before now gets 410 Gone.
    pub fn compact_all(&mut self) {
        self.compacted = self.revision;
        self.history.clear();
    }

    /// The events after revision `after` that a watch of `scope` with
    /// `filter` sees, each as the type the watch reports it with (an object
    /// that stops matching a selector is reported `Deleted`, one that starts
    /// matching `Added`).
    pub fn events_after(
        &self,
        after: u64,
        scope: &Scope,
        filter: &Filter,
    ) -> Result<Vec<(EventKind, Arc<Event>)>, Expired> {
        if after < self.compacted {
            return Err(Expired {
                requested: after,
                oldest: self.compacted,
            });
        }
        let start = self
            .history
            .partition_point(|event| event.revision <= after);
        let events = self.history.range(start..).filter_map(|event| {
            if !scope.contains(&event.key) {
                return None;
            }
            let now = filter.matches(&event.object);
            let before = event.previous.as_ref().is_some_and(|p| filter.matches(p));
            let kind = match (event.kind, before, now) {
                (EventKind::Deleted, _, _) if before || now => EventKind::Deleted,
                (EventKind::Added, _, true) => EventKind::Added,
                (EventKind::Modified, true, true) => EventKind::Modified,
                (EventKind::Modified, false, true) => EventKind::Added,
                (EventKind::Modified, true, false) => EventKind::Deleted,
                _ => return None,
            };
            Some((kind, Arc::clone(event)))
        });
        Ok(events.collect())
    }

    fn stored(&self, scope: &Scope, name: &str) -> ApiResult<&Value> {
        self.objects
            .get(&scope.key(name))
            .ok_or_else(|| ApiError::not_found(scope.plural(), scope.group(), name))
    }

    fn objects_in<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
        let start = ObjectKey {
            resource: scope.resource.key.clone(),
            namespace: scope.namespace.clone().unwrap_or_default(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(move |(key, _)| scope.contains(key))
    }

    /// Whether an injected conflict refuses this write of an object, by
    /// `subresource` (a deletion is the object's own).
    fn take_conflict(&mut self, key: &ObjectKey, subresource: Subresource) -> bool {
        let take = |counts: &mut HashMap<ObjectKey, u32>| match counts.get_mut(key) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        };
        take(&mut self.conflicts)
            || (subresource == Subresource::Main && take(&mut self.main_conflicts))
    }

    /// Checks and commits `candidate` as the new state of `old`.
    fn write(
        &mut self,
        scope: &Scope,
        name: &str,
        old: Value,
        candidate: Value,
        subresource: Subresource,
    ) -> ApiResult<Value> {
        match self.prepare(scope, name, &old, candidate, Some(subresource))? {
            Some(next) => self.commit_prepared(scope, name, old, next),
            None => Ok(scope.present(old)),
        }
    }

    fn commit_prepared(
        &mut self,
        scope: &Scope,
        name: &str,
        old: Value,
        next: Value,
    ) -> ApiResult<Value> {
        let remove = !next["metadata"]["deletionTimestamp"].is_null() && !has_finalizers(&next);
        let stored = self.commit(scope.key(name), Some(old), next, remove);
        Ok(scope.present(stored))
    }

    /// What `candidate`, a client's new version of `old`, makes of the object:
    /// preconditions checked (resourceVersion, uid, injected conflicts;
    /// `subresource: None` skips them all), system metadata kept, status
    /// isolated, generation bumped when anything beyond metadata and status
    /// changed. `None` when nothing changes: a no-op write takes no revision.
    fn prepare(
        &mut self,
        scope: &Scope,
        name: &str,
        old: &Value,
        candidate: Value,
        subresource: Option<Subresource>,
    ) -> ApiResult<Option<Value>> {
        check_name(&candidate, name)?;
        validation::check_types(&scope.resource.kind, &scope.version, &candidate)?;
        if let Some(subresource) = subresource {
            for field in ["resourceVersion", "uid"] {
                match (
                    candidate["metadata"][field].as_str(),
                    old["metadata"][field].as_str(),
                ) {
                    (Some(wanted), Some(actual)) if !wanted.is_empty() && wanted != actual => {
                        return Err(if field == "uid" {
                            precondition_failed(field, wanted, actual)
                        } else {
                            ApiError::conflict(scope.plural(), scope.group(), name)
                        })
                    }
                    _ => {}
                }
            }
            if self.take_conflict(&scope.key(name), subresource) {
                return Err(ApiError::conflict(scope.plural(), scope.group(), name));
            }
        }
        let has_status = scope.resource.has_status(&scope.version);
        let mut next = match subresource {
            Some(Subresource::Status) => with_field(old.clone(), "status", candidate.get("status")),
            Some(Subresource::Main) if has_status => {
                with_field(candidate, "status", old.get("status"))
            }
            _ => candidate,
        };
        if !next.is_object() {
            return Err(ApiError::bad_request("the body must be a JSON object"));
        }
        let metadata = metadata_of(&mut next)?;
        for system in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
            "namespace",
            "name",
            "managedFields",
        ] {
            match old["metadata"].get(system) {
                Some(value) => metadata.insert(system.into(), value.clone()),
                None => metadata.remove(system),
            };
        }
        next["apiVersion"] = old["apiVersion"].clone();
        next["kind"] = old["kind"].clone();
        if !old["metadata"]["deletionTimestamp"].is_null() {
            let before = finalizers(old);
            let added: Vec<&str> = finalizers(&next)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::invalid(
                    scope.kind(),
                    scope.group(),
                    name,
                    vec![Cause::forbidden(
                        "metadata.finalizers",
                        &format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
                    )],
                ));
            }
        }
        let causes = validation::meta_causes(&next, None);
        if !causes.is_empty() {
            return Err(ApiError::invalid(scope.kind(), scope.group(), name, causes));
        }
        if scope.resource.key.group == CRD_GROUP {
            resource::from_crd(&next)?;
        }
        if next == *old {
            return Ok(None);
        }
        // Only `metadata`, and `status` where it is a subresource, leave the
        // generation alone (the custom resource strategy's
        // `PrepareForUpdate`, `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go`).
        if beyond_generation(&next, has_status) != beyond_generation(old, has_status) {
            next["metadata"]["generation"] = json!(generation(old) + 1);
        }
        Ok(Some(next))
    }

    /// Takes the next revision for one change: `object` stored (or removed,
    /// with `remove`) and one event appended.
    fn commit(
        &mut self,
        key: ObjectKey,
        old: Option<Value>,
        mut object: Value,
        remove: bool,
    ) -> Value {
        self.revision += 1;
        object["metadata"]["resourceVersion"] = Value::String(self.revision.to_string());
        let kind = if remove {
            self.objects.remove(&key);
            EventKind::Deleted
        } else {
            let kind = if old.is_some() {
                EventKind::Modified
            } else {
                EventKind::Added
            };
            self.objects.insert(key.clone(), object.clone());
            kind
        };
        self.record(Event {
            revision: self.revision,
            kind,
            key: key.clone(),
            object: object.clone(),
            previous: old,
        });
        if key.resource.group == CRD_GROUP {
            self.reregister(&object, remove);
        }
        object
    }

    fn record(&mut self, event: Event) {
        self.history.push_back(Arc::new(event));
        while self.history.len() > self.history_limit {
            let gone = self.history.pop_front().expect("longer than its limit");
            self.compacted = gone.revision;
        }
    }

    /// Serves what a CRD defines after it changed; after it was removed,
    /// stops serving its type and removes its objects, as the real server does.
    fn reregister(&mut self, crd: &Value, removed: bool) {
        let Ok(defined) = resource::from_crd(crd) else {
            return;
        };
        self.types.retain(|t| t.key != defined.key);
        if !removed {
            self.types.push(defined);
            return;
        }
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|k| k.resource == defined.key)
            .cloned()
            .collect();
        for key in gone {
            let old = self.objects.get(&key).cloned().expect("listed above");
            self.commit(key, Some(old.clone()), old, true);
        }
    }
}

fn namespaces_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "namespaces".into(),
    }
}

/// Now, as the API writes timestamps.
fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// A body must name the kind and version of the URL it is sent to (on
/// update, only where it names them at all).
fn check_identity(scope: &Scope, object: &Value, required: bool) -> ApiResult<()> {
    if !object.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    let expected = scope.resource.api_version(&scope.version);
    match object["apiVersion"].as_str() {
        Some(given) if given != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({given}) does not match the expected API version ({expected})"
            )))
        }
        None if required => return Err(ApiError::bad_request("Object 'apiVersion' is missing in the body")),
        _ => {}
    }
    match object["kind"].as_str() {
        Some(given) if given != scope.resource.kind => Err(ApiError::bad_request(format!(
            "the kind in the data ({given}) does not match the expected kind ({})",
            scope.resource.kind
        ))),
        None if required => Err(ApiError::bad_request(
            "Object 'Kind' is missing in the body",
        )),
        _ => Ok(()),
    }
}

fn check_name(object: &Value, name: &str) -> ApiResult<()> {
    match object["metadata"]["name"].as_str() {
        Some(given) if given != name => Err(ApiError::bad_request(format!(
            "the name of the object ({given}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

fn metadata_of(object: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body must be a JSON object"))?;
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    if metadata.is_null() {
        *metadata = json!({});
    }
    metadata
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn with_field(mut object: Value, field: &str, value: Option<&Value>) -> Value {
    if let Some(map) = object.as_object_mut() {
        match value {
            Some(value) => map.insert(field.into(), value.clone()),
            None => map.remove(field),
        };
    }
    object
}

/// The part of an object whose change bumps its generation: everything but
/// `metadata`, and but `status` when the type has a status subresource.
fn beyond_generation(object: &Value, status_subresource: bool) -> Value {
    let mut rest = object.clone();
    if let Some(map) = rest.as_object_mut() {
        map.remove("metadata");
        if status_subresource {
            map.remove("status");
        }
    }
    rest
}

fn generation(object: &Value) -> u64 {
    object["metadata"]["generation"].as_u64().unwrap_or(0)
}

fn finalizers(object: &Value) -> Vec<&str> {
    object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn has_finalizers(object: &Value) -> bool {
    !finalizers(object).is_empty()
}

fn precondition_failed(field: &str, wanted: &str, actual: &str) -> ApiError {
    let name = if field == "uid" {
        "UID"
    } else {
        "ResourceVersion"
    };
    ApiError {
        code: 409,
        reason: "Conflict",
        message: format!("Precondition failed: {name} in precondition: {wanted}, {name} in object meta: {actual}"),
        details: None,
        retry_after: None,
    }
}

/// Reads a continue token: `revision/namespace/name` of the last object listed.
fn decode_continue(token: &str, scope: &Scope) -> ApiResult<(u64, ObjectKey)> {
    let invalid = || {
        ApiError::bad_request(format!(
            "continue key is not valid: {token:?}; start a new list without it"
        ))
    };
    let mut parts = token.splitn(3, '/');
    let revision = parts
        .next()
        .and_then(|r| r.parse().ok())
        .ok_or_else(invalid)?;
    let namespace = parts.next().ok_or_else(invalid)?;
    let name = parts.next().ok_or_else(invalid)?;
    let key = ObjectKey {
        resource: scope.resource.key.clone(),
        namespace: namespace.into(),
        name: name.into(),
    };
    Ok((revision, key))
}
