//! The etcd adapter: the etcd operations the leasequeue roles' effects name,
//! each bounded by a deadline so that an unreachable etcd never blocks a
//! driver, and etcd's answers read back in the spec's terms.
//!
//! Keys, each bound to its scheduler's lease:
//! - the endpoint key of an action is `<prefix>queue/<action>/leader`, its
//!   value the owning scheduler's name (the address it advertises) and the
//!   incarnation of it that created the key, as `<name> <incarnation>`;
//! - the member key of a scheduler is `<prefix>scheduler/<name>`, its value
//!   `<name> <incarnation>` again (OpenWhisk registers its schedulers so,
//!   with the name alone).
//!
//! Controllers list and watch both kinds with one range, from
//! `<prefix>queue/` to the end of `<prefix>scheduler/`; a key in between
//! that is neither (another system's, under the same prefix) is skipped.
//! A key of either kind whose value this runtime did not write is read as
//! [`Change::Unreadable`], with what is wrong with it, and every other key
//! is read on: the role decides (it forgets the key), not this adapter.

use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp,
    TxnOpResponse, WatchOptions, WatchStream,
};
use steadfast_spec::leasequeue::controller::{Change, Key};
use steadfast_spec::leasequeue::scheduler::{ClaimResult, Endpoint};
use steadfast_spec::leasequeue::trace::Named;
use steadfast_spec::leasequeue::KeyFault;

/// Where etcd is and how to talk to it.
///
/// ```
/// use std::time::Duration;
/// use steadfast::leasequeue::etcd::{EtcdOptions, EtcdTls};
///
/// # let ca_pem = Vec::new();
/// let options = EtcdOptions::new(["https://10.0.0.1:2379", "https://10.0.0.2:2379"])
///     .with_tls(EtcdTls::new(ca_pem))
///     .with_user("scheduler", "secret")
///     .with_request_timeout(Duration::from_secs(1));
/// ```
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs of the members (`http://host:port`, or `https://` with
    /// [`EtcdOptions::tls`]).
    pub endpoints: Vec<String>,
    /// TLS, for `https://` endpoints.
    pub tls: Option<EtcdTls>,
    /// User name and password, when etcd has authentication on.
    pub user: Option<(String, String)>,
    /// The deadline of every call. 2 s by default.
    pub request_timeout: Duration,
    /// The deadline of connecting. 2 s by default.
    pub connect_timeout: Duration,
    /// The prefix of every key. `steadfast/` by default.
    pub prefix: String,
}

impl EtcdOptions {
    /// Options for these members, with the defaults.
    pub fn new<S: Into<String>>(endpoints: impl IntoIterator<Item = S>) -> Self {
        EtcdOptions {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            tls: None,
            user: None,
            request_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            prefix: "steadfast/".into(),
        }
    }

    /// With TLS (every endpoint `https://`).
    #[must_use]
    pub fn with_tls(mut self, tls: EtcdTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Why these options cannot work, if they cannot.
    fn validate(&self) -> Result<(), EtcdError> {
        if self.endpoints.is_empty() {
            return Err(EtcdError::Options(
                "no endpoint: give the members' client URLs, e.g. http://127.0.0.1:2379".into(),
            ));
        }
        for endpoint in &self.endpoints {
            let (https, http) = (
                endpoint.starts_with("https://"),
                endpoint.starts_with("http://"),
            );
            if !https && !http {
                return Err(EtcdError::Options(format!(
                    "endpoint {endpoint:?} is not a URL: write http://host:port (or https://)"
                )));
            }
            if https && self.tls.is_none() {
                return Err(EtcdError::Options(format!(
                    "endpoint {endpoint} is https: give the CA that signed etcd's certificate \
                     with .with_tls(EtcdTls::new(ca_pem))"
                )));
            }
            if http && self.tls.is_some() {
                return Err(EtcdError::Options(format!(
                    "TLS is set but endpoint {endpoint} is plain http: write https://"
                )));
            }
        }
        Ok(())
    }

    /// With authentication.
    #[must_use]
    pub fn with_user(mut self, name: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = Some((name.into(), password.into()));
        self
    }

    /// With another deadline for every call.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// With another key prefix (tests use one each).
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
}

/// TLS to etcd: the CA that signed the members' certificates, and the
/// client's own certificate when etcd asks for one (`--client-cert-auth`).
///
/// ```no_run
/// use steadfast::leasequeue::etcd::{EtcdOptions, EtcdTls};
///
/// let tls = EtcdTls::new(std::fs::read("/etc/etcd/ca.crt")?)
///     .with_identity(std::fs::read("client.crt")?, std::fs::read("client.key")?);
/// let options = EtcdOptions::new(["https://etcd-0.etcd:2379"]).with_tls(tls);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone)]
pub struct EtcdTls {
    ca_pem: Vec<u8>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
    domain: Option<String>,
}

impl EtcdTls {
    /// Trusting the CA whose certificate `ca_pem` holds (PEM).
    pub fn new(ca_pem: impl Into<Vec<u8>>) -> Self {
        EtcdTls {
            ca_pem: ca_pem.into(),
            identity: None,
            domain: None,
        }
    }

    /// Presenting this client certificate and key (PEM).
    #[must_use]
    pub fn with_identity(
        mut self,
        cert_pem: impl Into<Vec<u8>>,
        key_pem: impl Into<Vec<u8>>,
    ) -> Self {
        self.identity = Some((cert_pem.into(), key_pem.into()));
        self
    }

    /// Checking the members' certificates for this name rather than the
    /// endpoints' host.
    #[must_use]
    pub fn with_domain_name(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    fn options(&self) -> etcd_client::TlsOptions {
        let mut tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(&self.ca_pem));
        if let Some((cert, key)) = &self.identity {
            tls = tls.identity(etcd_client::Identity::from_pem(cert, key));
        }
        if let Some(domain) = &self.domain {
            tls = tls.domain_name(domain.clone());
        }
        tls
    }
}

impl std::fmt::Debug for EtcdTls {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdTls")
            .field("ca_pem", &format_args!("{} bytes", self.ca_pem.len()))
            .field(
                "identity",
                &self.identity.as_ref().map(|_| "<certificate and key>"),
            )
            .field("domain", &self.domain)
            .finish()
    }
}

/// A failed etcd call. Every variant is retryable except `Options`, which
/// names a setting to fix, and `Corrupt`, which names a key whose value this
/// runtime did not write.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use steadfast::leasequeue::etcd::{Etcd, EtcdError, EtcdOptions};
///
/// let options = EtcdOptions::new(["https://127.0.0.1:2379"]);
/// let Err(error @ EtcdError::Options(_)) = Etcd::connect(&options).await else { panic!() };
/// assert!(error.to_string().contains("with_tls"), "{error}");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// The options cannot work; the message says why and what to do.
    #[error("invalid etcd options: {0}")]
    Options(String),
    /// No member could be reached.
    #[error("failed to connect to etcd at {endpoints:?}: {source}")]
    Connect {
        /// The members tried.
        endpoints: Vec<String>,
        /// Why.
        #[source]
        source: etcd_client::Error,
    },
    /// The call got no answer before its deadline (etcd frozen, the network
    /// holding, no leader).
    #[error("etcd did not answer {operation} within {after:?}")]
    Timeout {
        /// The call.
        operation: &'static str,
        /// Its deadline.
        after: Duration,
    },
    /// etcd or the connection refused the call.
    #[error("failed to {operation} in etcd: {source}")]
    Request {
        /// The call.
        operation: &'static str,
        /// Why.
        #[source]
        source: etcd_client::Error,
    },
    /// A key under the prefix holds what this runtime does not write.
    #[error("etcd key {key:?} is not an endpoint or member key this runtime wrote: {reason}")]
    Corrupt {
        /// The key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// etcd refused the call for good: this node's etcd user lacks the
    /// permission (etcd's `PermissionDenied`). Asking again does not help
    /// until an operator grants it.
    #[error(
        "etcd refused to {operation}: {reason}; grant this node's etcd user \
         read and write access to the keys under the prefix"
    )]
    Refused {
        /// The call.
        operation: &'static str,
        /// etcd's words.
        reason: String,
    },
}

impl EtcdError {
    /// Why this node cannot read an owner from the key the call was
    /// about, when etcd's answer is final: the key holds what no steadfast
    /// node wrote ([`EtcdError::Corrupt`]), or etcd refuses this node
    /// ([`EtcdError::Refused`]). The roles take it in as an unreadable key
    /// (`GotUnreadable`, `ResolvedUnreadable`, [`ClaimResult::Unreadable`]).
    /// `None` for an error that may pass: no answer in time, a lost
    /// connection.
    pub fn unreadable(&self) -> Option<(KeyFault, String)> {
        match self {
            EtcdError::Corrupt { reason, .. } => Some((KeyFault::ForeignValue, reason.clone())),
            EtcdError::Refused { reason, .. } => Some((
                KeyFault::AccessDenied,
                format!("etcd refused this node: {reason}"),
            )),
            EtcdError::Options(_)
            | EtcdError::Connect { .. }
            | EtcdError::Timeout { .. }
            | EtcdError::Request { .. } => None,
        }
    }
}

/// How a create-if-absent of an endpoint key ended, as the scheduler's
/// [`steadfast_spec::leasequeue::scheduler::Input::Claimed`] carries it.
pub type Claim = ClaimResult<Named>;

/// An endpoint key as etcd holds it: owner and its incarnation, lease and
/// create revision.
pub type Holder = Endpoint<Named>;

/// A scheduler's member key as a lookup found it
/// ([`Etcd::member`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSeen {
    /// The run the key names; `None`: the scheduler has no member key, or
    /// one holding what this runtime does not write (`unreadable`).
    pub incarnation: Option<u64>,
    /// What is wrong with the key's value, if this runtime did not write
    /// it (another system's, or one edited by hand).
    pub unreadable: Option<String>,
    /// The raft term of the leader that answered.
    pub term: u64,
}

/// A lease etcd granted.
///
/// ```no_run
/// # async fn demo(mut etcd: steadfast::leasequeue::etcd::Etcd) -> Result<(), steadfast::leasequeue::etcd::EtcdError> {
/// let lease = etcd.grant(1).await?;
/// assert!(lease.ttl >= 2, "etcd raises a TTL below its floor");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Its id.
    pub id: i64,
    /// The TTL it was granted with, in seconds: what each keepalive renews
    /// it to.
    pub ttl: i64,
}

/// Every endpoint and member key, read at one revision.
///
/// ```no_run
/// # async fn demo(mut etcd: steadfast::leasequeue::etcd::Etcd) -> Result<(), steadfast::leasequeue::etcd::EtcdError> {
/// let listing = etcd.list().await?;
/// for (action, owner) in &listing.keys {
///     println!("{action} is served by {owner} as of revision {}", listing.revision);
/// }
/// println!("live schedulers: {:?}", listing.members);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The revision of the read.
    pub revision: i64,
    /// Per endpoint key: the action and its owner, sorted by action.
    pub keys: Vec<(String, String)>,
    /// The schedulers whose member keys exist, each with the incarnation
    /// its key names, sorted.
    pub members: Vec<(String, u64)>,
    /// The endpoint and member keys whose values this runtime did not
    /// write (a foreign writer's), each with what is wrong with it: left
    /// out of `keys` and `members`.
    pub unreadable: Vec<(Key<Named>, String)>,
}

impl Listing {
    /// Whether `scheduler`'s member key exists.
    pub fn is_member(&self, scheduler: &str) -> bool {
        self.members.iter().any(|(m, _)| m == scheduler)
    }
}

/// What a watch on the endpoint and member keys reports
/// ([`EndpointWatch::next`]).
///
/// ```no_run
/// # async fn demo(mut etcd: steadfast::leasequeue::etcd::Etcd) -> Result<(), steadfast::leasequeue::etcd::EtcdError> {
/// use std::time::Duration;
/// use steadfast::leasequeue::etcd::Watched;
///
/// let listing = etcd.list().await?;
/// let mut watch = etcd.watch(listing.revision + 1).await?;
/// watch.request_progress().await?;
/// match watch.next(Duration::from_secs(5)).await? {
///     Some(Watched::Changes { changes, .. }) => println!("{changes:?}"),
///     Some(Watched::Compacted { .. }) => println!("fell behind: list again"),
///     Some(Watched::Progress { revision, .. }) => println!("nothing new up to {revision}"),
///     None => println!("no word in 5 s: the watch may have stalled"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Watched {
    /// Every change of one response, each with its revision, in etcd's
    /// order: all of one revision, or, for a watch catching up on
    /// revisions it missed, of several.
    Changes {
        /// The changes and their revisions.
        changes: Vec<(i64, Change<Named>)>,
        /// The raft term of the leader when etcd sent them.
        term: u64,
    },
    /// The revision the watch started from is compacted away: re-list.
    Compacted {
        /// The oldest revision still kept.
        compact_revision: i64,
    },
    /// A progress notification: nothing changed that the watch has not
    /// reported, up to this revision.
    Progress {
        /// etcd's revision.
        revision: i64,
        /// The raft term of the leader when etcd sent it.
        term: u64,
    },
}

/// A client of etcd for the leasequeue roles. Cloning it is cheap: clones
/// share one connection, so that each effect can run as its own task.
///
/// ```no_run
/// # async fn demo() -> Result<(), steadfast::leasequeue::etcd::EtcdError> {
/// use steadfast::leasequeue::etcd::{Claim, Etcd, EtcdOptions};
/// use steadfast::spec::leasequeue::scheduler::ClaimResult;
///
/// let mut etcd = Etcd::connect(&EtcdOptions::new(["http://127.0.0.1:2379"])).await?;
/// let lease = etcd.grant(10).await?.id;
/// let incarnation = 7; // this run of the scheduler
/// match etcd.claim("hello", "scheduler-a:8081", incarnation, lease).await? {
///     ClaimResult::Created { .. } => println!("the queue of hello is ours"),
///     ClaimResult::Exists(key) => println!("forward to {} run {}", key.owner, key.incarnation),
///     ClaimResult::LeaseNotFound => println!("the lease is gone: take a new one"),
///     ClaimResult::Unreadable { why, reason } => println!("no owner to read ({why}): {reason}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Etcd {
    client: Client,
    timeout: Duration,
    prefix: String,
}

impl Etcd {
    /// Connects to the members `options` names.
    ///
    /// # Errors
    ///
    /// [`EtcdError::Connect`] if none can be reached in time.
    pub async fn connect(options: &EtcdOptions) -> Result<Self, EtcdError> {
        options.validate()?;
        // etcd drops a client that pings more often than its
        // `--grpc-keepalive-min-time` (5 s by default): ping every 10 s.
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_timeout(options.request_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            // A member without a leader refuses every call, and closes a
            // watch a few election timeouts on, rather than answering from
            // what it last knew: the controllers count a member key's
            // absence only while etcd answers (`Rule::EtcdTime`), as the
            // model's etcd does.
            .with_require_leader(true);
        if let Some(tls) = &options.tls {
            connect = connect.with_tls(tls.options());
        }
        if let Some((name, password)) = &options.user {
            connect = connect.with_user(name.clone(), password.clone());
        }
        let endpoints = options.endpoints.clone();
        let client = Client::connect(&endpoints, Some(connect))
            .await
            .map_err(|source| EtcdError::Connect { endpoints, source })?;
        Ok(Etcd {
            client,
            timeout: options.request_timeout,
            prefix: options.prefix.clone(),
        })
    }

    /// The endpoint key of `action`.
    pub fn key(&self, action: &str) -> String {
        format!("{}queue/{action}/leader", self.prefix)
    }

    /// The member key of `scheduler`.
    pub fn member_key(&self, scheduler: &str) -> String {
        format!("{}scheduler/{scheduler}", self.prefix)
    }

    fn queues(&self) -> String {
        format!("{}queue/", self.prefix)
    }

    fn space(&self) -> KeySpace {
        KeySpace {
            queues: self.queues(),
            members: self.member_key(""),
        }
    }

    /// The value of an endpoint or member key that incarnation
    /// `incarnation` of scheduler `name` writes.
    fn value(name: &str, incarnation: u64) -> String {
        format!("{name} {incarnation}")
    }

    /// The scheduler and incarnation an endpoint or member key's `value`
    /// names, or what is wrong with it.
    fn owner_of(value: &[u8]) -> Result<(String, u64), String> {
        let parsed = std::str::from_utf8(value).ok().and_then(|value| {
            let (name, incarnation) = value.rsplit_once(' ')?;
            let incarnation = incarnation.parse().ok()?;
            (!name.is_empty()).then(|| (name.to_owned(), incarnation))
        });
        parsed.ok_or_else(|| {
            format!(
                "its value {:?} is not \"<scheduler name> <incarnation>\" (a scheduler of a \
                 steadfast before incarnations writes the name alone: run one version)",
                String::from_utf8_lossy(value)
            )
        })
    }

    /// Runs `call` under the deadline.
    async fn timed<T>(
        timeout: Duration,
        operation: &'static str,
        call: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, EtcdError> {
        match tokio::time::timeout(timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(etcd_client::Error::GRpcStatus(status)))
                if status.code() == tonic::Code::PermissionDenied =>
            {
                Err(EtcdError::Refused {
                    operation,
                    reason: status.message().to_owned(),
                })
            }
            Ok(Err(source)) => Err(EtcdError::Request { operation, source }),
            Err(_) => Err(EtcdError::Timeout {
                operation,
                after: timeout,
            }),
        }
    }

    /// Grants a lease of `ttl` seconds (etcd raises a TTL below its floor).
    ///
    /// # Errors
    ///
    /// If etcd does not grant it in time.
    pub async fn grant(&mut self, ttl: i64) -> Result<Lease, EtcdError> {
        let call = self.client.lease_grant(ttl, None);
        let granted = Self::timed(self.timeout, "grant a lease", call).await?;
        Ok(Lease {
            id: granted.id(),
            ttl: granted.ttl(),
        })
    }

    /// Renews `lease` once. `Ok(false)` when etcd no longer has it (etcd
    /// answers TTL 0, which must not be taken for success: #5286).
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn keep_alive(&mut self, lease: i64) -> Result<bool, EtcdError> {
        let call = self.client.lease_keep_alive(lease);
        match Self::timed(self.timeout, "keep a lease alive", call).await {
            Ok(_) => Ok(true),
            // etcd-client reports etcd's TTL-0 answer so.
            Err(EtcdError::Request {
                source: etcd_client::Error::LeaseKeepAliveError(message),
                ..
            }) if message.contains("lease not found") => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Revokes `lease`, deleting every key bound to it in one revision; a
    /// lease already gone is no error.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn revoke(&mut self, lease: i64) -> Result<(), EtcdError> {
        let call = self.client.lease_revoke(lease);
        match Self::timed(self.timeout, "revoke a lease", call).await {
            Ok(_) => Ok(()),
            Err(EtcdError::Request { source, .. }) if is_lease_not_found(&source) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Puts `scheduler`'s member key, naming `incarnation`, under `lease`
    /// (bound to another lease before, it now goes with this one).
    /// `Ok(false)` when etcd no longer has the lease.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn register(
        &mut self,
        scheduler: &str,
        incarnation: u64,
        lease: i64,
    ) -> Result<bool, EtcdError> {
        let options = PutOptions::new().with_lease(lease);
        let value = Self::value(scheduler, incarnation);
        let call = self
            .client
            .put(self.member_key(scheduler), value, Some(options));
        match Self::timed(self.timeout, "put a member key", call).await {
            Ok(_) => Ok(true),
            Err(EtcdError::Request { source, .. }) if is_lease_not_found(&source) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Creates `action`'s endpoint key for incarnation `incarnation` of
    /// `owner` under `lease`, if it is absent, in one transaction;
    /// otherwise reads who holds it.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time, or the key holds what this runtime
    /// does not write.
    pub async fn claim(
        &mut self,
        action: &str,
        owner: &str,
        incarnation: u64,
        lease: i64,
    ) -> Result<Claim, EtcdError> {
        let key = self.key(action);
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                Self::value(owner, incarnation),
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(key.clone(), None)]);
        let response =
            match Self::timed(self.timeout, "claim an endpoint key", self.client.txn(txn)).await {
                Ok(response) => response,
                Err(EtcdError::Request { source, .. }) if is_lease_not_found(&source) => {
                    return Ok(Claim::LeaseNotFound)
                }
                Err(error) => return unreadable_claim(error),
            };
        if response.succeeded() {
            let created = response.header().map_or(0, |h| h.revision());
            return Ok(Claim::Created { created });
        }
        for op in response.op_responses() {
            if let TxnOpResponse::Get(get) = op {
                if let Some(kv) = get.kvs().first() {
                    return match Self::holder(kv) {
                        Ok(holder) => Ok(Claim::Exists(holder)),
                        Err(error) => unreadable_claim(error),
                    };
                }
            }
        }
        // The compare and the read are one transaction: a key that failed
        // the compare is there to read.
        Err(EtcdError::Corrupt {
            key,
            reason: "the claim's transaction found the key taken, then could not read it".into(),
        })
    }

    /// Deletes `action`'s endpoint key only if revision `create_revision`
    /// created it (a conditional delete: never a key someone, or this
    /// scheduler, created since). Returns whether it deleted it.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn delete_created(
        &mut self,
        action: &str,
        create_revision: i64,
    ) -> Result<bool, EtcdError> {
        let key = self.key(action);
        let txn = Txn::new()
            .when([Compare::create_revision(
                key.clone(),
                CompareOp::Equal,
                create_revision,
            )])
            .and_then([TxnOp::delete(key, None)]);
        let call = self.client.txn(txn);
        Ok(Self::timed(self.timeout, "delete an endpoint key", call)
            .await?
            .succeeded())
    }

    /// Deletes `action`'s endpoint key whoever holds it (OpenWhisk's
    /// unconditional delete). Returns whether there was one.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn delete(&mut self, action: &str) -> Result<bool, EtcdError> {
        let call = self.client.delete(self.key(action), None);
        Ok(Self::timed(self.timeout, "delete an endpoint key", call)
            .await?
            .deleted()
            > 0)
    }

    /// Who holds `action`'s endpoint key, under which lease, since which
    /// revision.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time, or the key holds what this runtime
    /// does not write.
    pub async fn lookup(&mut self, action: &str) -> Result<Option<Holder>, EtcdError> {
        let call = self.client.get(self.key(action), None);
        let response = Self::timed(self.timeout, "look up an endpoint key", call).await?;
        response.kvs().first().map(Self::holder).transpose()
    }

    fn holder(kv: &etcd_client::KeyValue) -> Result<Holder, EtcdError> {
        let (owner, incarnation) =
            Self::owner_of(kv.value()).map_err(|reason| EtcdError::Corrupt {
                key: String::from_utf8_lossy(kv.key()).into_owned(),
                reason,
            })?;
        Ok(Holder {
            owner,
            incarnation,
            lease: kv.lease(),
            created: kv.create_revision(),
        })
    }

    /// Which run of `scheduler` its member key names, if it has one, and
    /// in which raft term etcd answered.
    ///
    /// ```no_run
    /// # async fn demo(mut etcd: steadfast::leasequeue::etcd::Etcd) -> Result<(), steadfast::leasequeue::etcd::EtcdError> {
    /// let seen = etcd.member("10.0.0.7:7070").await?;
    /// match seen.incarnation {
    ///     Some(run) => println!("run {run} is a member (term {})", seen.term),
    ///     None => println!("not a member (term {})", seen.term),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn member(&mut self, scheduler: &str) -> Result<MemberSeen, EtcdError> {
        let key = self.member_key(scheduler);
        let call = self.client.get(key.clone(), None);
        let response = Self::timed(self.timeout, "look up a member key", call).await?;
        let read = response
            .kvs()
            .first()
            .map(|kv| Self::incarnation_of(scheduler, kv.value()))
            .transpose();
        let (incarnation, unreadable) = match read {
            Ok(incarnation) => (incarnation, None),
            Err(reason) => (None, Some(reason)),
        };
        Ok(MemberSeen {
            incarnation,
            unreadable,
            term: response.header().map_or(0, |h| h.raft_term()),
        })
    }

    /// The incarnation `scheduler`'s member key's `value` names, or what
    /// is wrong with it.
    fn incarnation_of(scheduler: &str, value: &[u8]) -> Result<u64, String> {
        let (address, incarnation) = Etcd::owner_of(value)?;
        if address != scheduler {
            return Err(format!("its value names another scheduler ({address:?})"));
        }
        Ok(incarnation)
    }

    /// etcd's current revision.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn revision(&mut self) -> Result<i64, EtcdError> {
        let options = GetOptions::new().with_count_only();
        let call = self.client.get(self.queues(), Some(options));
        let response = Self::timed(self.timeout, "read etcd's revision", call).await?;
        Ok(response.header().map_or(0, |h| h.revision()))
    }

    /// Every endpoint and member key, in one read (so at one revision);
    /// those whose values this runtime did not write apart, with what is
    /// wrong with each.
    ///
    /// # Errors
    ///
    /// If etcd does not answer in time.
    pub async fn list(&mut self) -> Result<Listing, EtcdError> {
        let space = self.space();
        let options = GetOptions::new().with_range(space.end());
        let call = self.client.get(space.queues.clone(), Some(options));
        let response = Self::timed(self.timeout, "list the endpoint and member keys", call).await?;
        let mut keys = Vec::new();
        let mut members = Vec::new();
        let mut unreadable = Vec::new();
        for kv in response.kvs() {
            match space.change(kv.key(), Some(kv.value())) {
                Some(Change::Endpoint {
                    action,
                    owner: Some(owner),
                }) => keys.push((action, owner)),
                Some(Change::Member {
                    scheduler,
                    incarnation: Some(incarnation),
                }) => members.push((scheduler, incarnation)),
                Some(Change::Unreadable { key, reason }) => unreadable.push((key, reason)),
                // A listing reads only keys that exist.
                Some(
                    Change::Endpoint { owner: None, .. }
                    | Change::Member {
                        incarnation: None, ..
                    },
                )
                | None => {}
            }
        }
        keys.sort();
        members.sort();
        Ok(Listing {
            revision: response.header().map_or(0, |h| h.revision()),
            keys,
            members,
            unreadable,
        })
    }

    /// Watches the endpoint and member keys from revision `from` on, once
    /// etcd confirms it created the watch.
    ///
    /// # Errors
    ///
    /// If etcd does not confirm it in time, or refuses it (with no
    /// leader, for one: the client requires one).
    pub async fn watch(&mut self, from: i64) -> Result<EndpointWatch, EtcdError> {
        let space = self.space();
        let options = WatchOptions::new()
            .with_range(space.end())
            .with_start_revision(from)
            .with_prev_key()
            .with_progress_notify();
        let client = &mut self.client;
        let call = async move {
            let mut stream = client.watch(space.queues.clone(), Some(options)).await?;
            let created = stream.message().await?;
            match created {
                Some(response) if response.created() && !response.canceled() => {
                    let term = response.header().map_or(0, |h| h.raft_term());
                    Ok(EndpointWatch {
                        stream,
                        space,
                        term,
                    })
                }
                Some(response) => Err(etcd_client::Error::WatchError(format!(
                    "etcd did not create the watch: {}",
                    response.cancel_reason()
                ))),
                None => Err(etcd_client::Error::WatchError(
                    "the watch stream ended before etcd created the watch".into(),
                )),
            }
        };
        Self::timed(self.timeout, "watch the endpoint and member keys", call).await
    }
}

/// The keys of the roles under one prefix: `<prefix>queue/` for endpoint
/// keys, `<prefix>scheduler/` for member keys.
#[derive(Clone, Debug)]
struct KeySpace {
    queues: String,
    members: String,
}

impl KeySpace {
    /// The end of the range controllers list and watch (exclusive): just
    /// past every member key (`0` follows `/`).
    fn end(&self) -> String {
        let mut end = self.members.clone();
        end.pop();
        end.push('0');
        end
    }

    /// What `key`, put with `value` or deleted (`None`), changed: an
    /// endpoint or member key whose value this runtime did not write is
    /// [`Change::Unreadable`], for the role to decide on; `None` for a key
    /// of neither kind (another system's under the same prefix, such as
    /// `<prefix>queue/notes`), which names nothing the roles read.
    fn change(&self, key: &[u8], value: Option<&[u8]>) -> Option<Change<Named>> {
        let name = String::from_utf8_lossy(key);
        if let Some(rest) = name.strip_prefix(&self.queues) {
            let action = rest
                .strip_suffix("/leader")
                .filter(|a| !a.is_empty())?
                .to_owned();
            return Some(match value.map(Etcd::owner_of).transpose() {
                Ok(owner) => Change::Endpoint {
                    action,
                    owner: owner.map(|(owner, _)| owner),
                },
                Err(reason) => Change::Unreadable {
                    key: Key::Endpoint(action),
                    reason,
                },
            });
        }
        let scheduler = name.strip_prefix(&self.members)?.to_owned();
        let incarnation = |value| Etcd::incarnation_of(&scheduler, value);
        Some(match value.map(incarnation).transpose() {
            Ok(incarnation) => Change::Member {
                scheduler,
                incarnation,
            },
            Err(reason) => Change::Unreadable {
                key: Key::Member(scheduler),
                reason,
            },
        })
    }
}

/// A claim's answer when `error` says the key cannot be read by this node
/// ([`EtcdError::unreadable`]); else the error.
fn unreadable_claim(error: EtcdError) -> Result<Claim, EtcdError> {
    match error.unreadable() {
        Some((why, reason)) => Ok(Claim::Unreadable { why, reason }),
        None => Err(error),
    }
}

/// Whether etcd refused a call because a lease does not exist.
fn is_lease_not_found(error: &etcd_client::Error) -> bool {
    error.to_string().contains("requested lease not found")
}

/// A watch on the endpoint and member keys, from [`Etcd::watch`];
/// [`Watched`] shows one in use.
pub struct EndpointWatch {
    stream: WatchStream,
    space: KeySpace,
    term: u64,
}

impl EndpointWatch {
    /// The raft term of the leader when etcd created the watch.
    pub fn term(&self) -> u64 {
        self.term
    }

    /// Asks etcd for a progress notification ([`Watched::Progress`]) on this
    /// watch.
    ///
    /// # Errors
    ///
    /// If the watch is broken.
    pub async fn request_progress(&mut self) -> Result<(), EtcdError> {
        self.stream
            .request_progress()
            .await
            .map_err(|source| EtcdError::Request {
                operation: "ask the watch for progress",
                source,
            })
    }

    /// The next report, waiting at most `deadline`: `Ok(None)` when nothing
    /// came in time, which the caller may take for a stalled watch (etcd
    /// sends a progress notification now and then on a quiet one).
    ///
    /// # Errors
    ///
    /// If the watch broke, or a key is corrupt.
    pub async fn next(&mut self, deadline: Duration) -> Result<Option<Watched>, EtcdError> {
        let message = tokio::time::timeout(deadline, self.stream.message()).await;
        let response = match message {
            Err(_) => return Ok(None),
            Ok(Err(source)) => {
                return Err(EtcdError::Request {
                    operation: "watch the endpoint and member keys",
                    source,
                })
            }
            Ok(Ok(None)) => {
                return Err(EtcdError::Request {
                    operation: "watch the endpoint and member keys",
                    source: etcd_client::Error::WatchError("the watch stream ended".into()),
                })
            }
            Ok(Ok(Some(response))) => response,
        };
        let term = response.header().map_or(0, |h| h.raft_term());
        if response.compact_revision() > 0 {
            return Ok(Some(Watched::Compacted {
                compact_revision: response.compact_revision(),
            }));
        }
        // A progress notification carries no event (the creation
        // confirmation, which carries none either, was read by
        // `Etcd::watch`).
        if response.events().iter().all(|e| e.kv().is_none()) {
            if response.canceled() {
                let reason = response.cancel_reason().to_owned();
                return Err(EtcdError::Request {
                    operation: "watch the endpoint and member keys",
                    source: etcd_client::Error::WatchError(reason),
                });
            }
            let revision = response.header().map_or(0, |h| h.revision());
            return Ok(Some(Watched::Progress { revision, term }));
        }
        let mut changes = Vec::new();
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            let value = match event.event_type() {
                EventType::Put => Some(kv.value()),
                EventType::Delete => None,
            };
            let change = self.space.change(kv.key(), value);
            changes.extend(change.map(|c| (kv.mod_revision(), c)));
        }
        Ok(Some(Watched::Changes { changes, term }))
    }
}
