//! Real etcd for tests: Debian's `etcd-server`, started on loopback with
//! free ports and a temporary data directory, stopped when dropped, and
//! faulted for real (SIGSTOP and SIGCONT, SIGKILL and restart).
//!
//! ```no_run
//! # async fn demo() -> Result<(), steadfast_tests::etcd_server::EtcdError> {
//! use steadfast_tests::etcd_server::EtcdServer;
//!
//! let mut etcd = EtcdServer::start().await?;
//! let client = etcd.client().await?;
//! etcd.pause()?; // requests now hang
//! etcd.resume()?;
//! etcd.kill();
//! etcd.restart().await?; // same data, same ports
//! # drop(client);
//! # Ok(())
//! # }
//! ```

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};

use crate::certs::TestCa;

/// How long a member may take to answer after it was started.
const STARTUP: Duration = Duration::from_secs(20);

/// Why etcd could not be run.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// The `etcd` binary is not installed.
    #[error(
        "failed to start etcd: no `etcd` binary on PATH ({0}); install Debian's etcd-server \
         (`apt-get install etcd-server`; scripts/test does it)"
    )]
    NotInstalled(#[source] std::io::Error),
    /// The process could not be started or signalled.
    #[error("failed to {what} etcd: {source}")]
    Process {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A member did not answer in time; its log is quoted.
    #[error("etcd at {endpoint} did not answer within {STARTUP:?}; its log ends with:\n{log}")]
    NotReady {
        /// The member's client URL.
        endpoint: String,
        /// The end of its log.
        log: String,
    },
    /// A client call failed.
    #[error("failed to talk to etcd: {0}")]
    Client(#[from] etcd_client::Error),
}

/// How many times a cluster is started on fresh ports when one it was
/// given was taken first.
const PORT_ATTEMPTS: u32 = 3;

impl EtcdError {
    /// Whether a member could not start because its port was taken.
    fn port_taken(&self) -> bool {
        matches!(self, EtcdError::NotReady { log, .. } if log.contains("address already in use"))
    }
}

/// A free port on 127.0.0.1, found by binding to port 0.
fn free_port() -> Result<u16, EtcdError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|source| EtcdError::Process {
            what: "find a free port for",
            source,
        })
}

/// TLS on the client port: a certificate for 127.0.0.1 signed by a CA of
/// the test's own ([`TestCa`]).
#[derive(Clone, Debug)]
struct ServerTls {
    /// The CA's certificate, PEM: what clients trust.
    ca_pem: Vec<u8>,
    cert: PathBuf,
    key: PathBuf,
}

impl ServerTls {
    /// Makes a CA and a server certificate for 127.0.0.1 in `dir`.
    fn make(dir: &Path) -> Result<Self, EtcdError> {
        let made = TestCa::make(dir, "ca").and_then(|ca| Ok((ca.issue("server")?, ca.ca_pem)));
        let (server, ca_pem) = made.map_err(|source| EtcdError::Process {
            what: "make TLS certificates for",
            source,
        })?;
        Ok(ServerTls {
            ca_pem,
            cert: server.cert,
            key: server.key,
        })
    }
}

/// One etcd member: its ports, its data and its process.
/// Waits (at most 2 s) until every thread of process `pid` is stopped: a
/// SIGSTOP reaches each thread of a Go process when it is next scheduled,
/// so a request sent at once could still be answered by one not stopped yet.
fn stopped(pid: u32) {
    let all_stopped = || {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return true;
        };
        tasks.flatten().all(|task| {
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // The state follows the command's closing parenthesis.
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next());
            matches!(state, None | Some('T' | 't'))
        })
    };
    for _ in 0..200 {
        if all_stopped() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    data: PathBuf,
    tls: Option<ServerTls>,
    child: Option<Child>,
}

impl Member {
    fn new(name: String, root: &Path, tls: Option<ServerTls>) -> Result<Self, EtcdError> {
        Ok(Member {
            data: root.join(&name),
            name,
            client_port: free_port()?,
            peer_port: free_port()?,
            tls,
            child: None,
        })
    }

    fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn log_path(&self) -> PathBuf {
        self.data.with_extension("log")
    }

    /// Starts the process (again); `cluster` is the `--initial-cluster` list.
    fn spawn(&mut self, cluster: &str) -> Result<(), EtcdError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|source| EtcdError::Process {
                what: "open the log of",
                source,
            })?;
        let stderr = log.try_clone().map_err(|source| EtcdError::Process {
            what: "open the log of",
            source,
        })?;
        let mut command = Command::new("etcd");
        if let Some(tls) = &self.tls {
            command.arg("--cert-file").arg(&tls.cert);
            command.arg("--key-file").arg(&tls.key);
        }
        let child = command
            .arg("--name")
            .arg(&self.name)
            .arg("--data-dir")
            .arg(&self.data)
            .args(["--listen-client-urls", &self.endpoint()])
            .args(["--advertise-client-urls", &self.endpoint()])
            .args(["--listen-peer-urls", &self.peer_url()])
            .args(["--initial-advertise-peer-urls", &self.peer_url()])
            .args(["--initial-cluster", cluster])
            .args(["--initial-cluster-token", "steadfast-tests"])
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => EtcdError::NotInstalled(source),
                _ => EtcdError::Process {
                    what: "start",
                    source,
                },
            })?;
        self.child = Some(child);
        Ok(())
    }

    fn signal(&self, signal: &str, what: &'static str) -> Result<(), EtcdError> {
        let Some(child) = &self.child else {
            return Ok(());
        };
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .map_err(|source| EtcdError::Process { what, source })?;
        if status.success() {
            if signal == "-STOP" {
                stopped(child.id());
            }
            Ok(())
        } else {
            Err(EtcdError::Process {
                what,
                source: std::io::Error::other(format!("kill {signal} exited with {status}")),
            })
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Already gone is as good as killed.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until the member answers a status request.
    async fn ready(&self) -> Result<(), EtcdError> {
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            let ca = self.tls.as_ref().map(|tls| tls.ca_pem.as_slice());
            if let Ok(mut client) = connect_with(&[self.endpoint()], ca).await {
                if client.status().await.is_ok() {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        Err(EtcdError::NotReady {
            endpoint: self.endpoint(),
            log: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

/// A client of `endpoints`, giving up on any call after 2 s.
///
/// # Errors
///
/// If no endpoint can be reached.
pub async fn connect(endpoints: &[String]) -> Result<Client, EtcdError> {
    connect_with(endpoints, None).await
}

/// Waits until etcd answers a read through `client` (each try waits at
/// most 100 ms): after an outage, the moment it is back.
pub async fn await_answer(client: &mut Client) {
    loop {
        let probe = client.get("steadfast/probe", None);
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(100), probe).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A client of `endpoints`, trusting the CA `ca_pem` when given.
async fn connect_with(endpoints: &[String], ca_pem: Option<&[u8]>) -> Result<Client, EtcdError> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(2));
    if let Some(ca_pem) = ca_pem {
        let ca = etcd_client::Certificate::from_pem(ca_pem);
        options = options.with_tls(etcd_client::TlsOptions::new().ca_certificate(ca));
    }
    Ok(Client::connect(endpoints, Some(options)).await?)
}

/// A cluster of etcd members on loopback. Dropping it kills every member
/// and removes their data.
pub struct EtcdCluster {
    members: Vec<Member>,
    cluster: String,
    // Last, so the data goes after the processes.
    _root: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts `size` members and waits until each answers.
    ///
    /// # Errors
    ///
    /// [`EtcdError::NotInstalled`] without Debian's etcd-server; otherwise
    /// if a member does not come up.
    pub async fn start(size: usize) -> Result<Self, EtcdError> {
        Self::start_with(size, false).await
    }

    /// Starts `size` members, with TLS on their client ports when `tls`. A
    /// port found free may be taken (another test's connection takes
    /// ports from the same range) before etcd binds it: the cluster is
    /// then started afresh on other ports, a few times.
    async fn start_with(size: usize, tls: bool) -> Result<Self, EtcdError> {
        let mut attempts = 1;
        loop {
            match Self::start_once(size, tls).await {
                Err(error) if error.port_taken() && attempts < PORT_ATTEMPTS => attempts += 1,
                result => return result,
            }
        }
    }

    /// One try of [`EtcdCluster::start_with`].
    async fn start_once(size: usize, tls: bool) -> Result<Self, EtcdError> {
        let root = tempfile::tempdir().map_err(|source| EtcdError::Process {
            what: "make a data directory for",
            source,
        })?;
        let tls = tls.then(|| ServerTls::make(root.path())).transpose()?;
        let members = (0..size.max(1))
            .map(|i| Member::new(format!("member{i}"), root.path(), tls.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let mut etcd = EtcdCluster {
            members,
            cluster,
            _root: root,
        };
        for member in &mut etcd.members {
            member.spawn(&etcd.cluster)?;
        }
        for member in &etcd.members {
            member.ready().await?;
        }
        Ok(etcd)
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(Member::endpoint).collect()
    }

    /// A client of every member.
    ///
    /// # Errors
    ///
    /// If none answers.
    pub async fn client(&self) -> Result<Client, EtcdError> {
        connect_with(&self.endpoints(), self.ca_pem()).await
    }

    /// The PEM certificate of the CA that signed the members' certificates,
    /// when they serve TLS.
    pub fn ca_pem(&self) -> Option<&[u8]> {
        self.members[0]
            .tls
            .as_ref()
            .map(|tls| tls.ca_pem.as_slice())
    }

    /// The index of the member that is leader now, if one is.
    /// `None` while no member that answers knows of one.
    pub async fn leader(&self) -> Option<usize> {
        // Each live member's id, and the leader it knows of.
        let mut seen = Vec::new();
        for (i, member) in self.members.iter().enumerate() {
            if member.child.is_none() {
                continue;
            }
            let Ok(mut client) = connect_with(&[member.endpoint()], self.ca_pem()).await else {
                continue;
            };
            if let Ok(status) = client.status().await {
                let id = status.header().map(|h| h.member_id());
                seen.push((i, id, status.leader()));
            }
        }
        seen.iter()
            .find(|(_, id, _)| seen.iter().any(|(_, _, leader)| *id == Some(*leader)))
            .map(|(i, _, _)| *i)
    }

    /// Freezes member `i` with SIGSTOP: it answers nothing, and its leases
    /// keep their time while it is the only member.
    ///
    /// # Errors
    ///
    /// If the signal cannot be sent.
    pub fn pause(&self, i: usize) -> Result<(), EtcdError> {
        self.members[i].signal("-STOP", "pause")
    }

    /// Thaws member `i` with SIGCONT.
    ///
    /// # Errors
    ///
    /// If the signal cannot be sent.
    pub fn resume(&self, i: usize) -> Result<(), EtcdError> {
        self.members[i].signal("-CONT", "resume")
    }

    /// Kills member `i` with SIGKILL.
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Starts member `i` again on its data and ports, and waits until it
    /// answers.
    ///
    /// # Errors
    ///
    /// If it does not come back.
    pub async fn restart(&mut self, i: usize) -> Result<(), EtcdError> {
        self.members[i].kill();
        let cluster = self.cluster.clone();
        self.members[i].spawn(&cluster)?;
        self.members[i].ready().await
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            // A stopped process cannot die of SIGKILL until it runs again.
            let _ = member.signal("-CONT", "resume");
            member.kill();
        }
    }
}

/// A user of etcd's authentication ([`EtcdServer::enable_auth`]): its name
/// and password, and the key prefixes it may only read, and read and write.
pub struct User<'a> {
    /// Its name, which is also the name of its one role.
    pub name: &'a str,
    /// Its password.
    pub password: &'a str,
    /// Prefixes of the keys it may read.
    pub reads: &'a [&'a str],
    /// Prefixes of the keys it may read and write.
    pub writes: &'a [&'a str],
}

/// One etcd member: an [`EtcdCluster`] of one, with a simpler interface.
pub struct EtcdServer(EtcdCluster);

impl EtcdServer {
    /// Starts etcd on free loopback ports with a temporary data directory.
    ///
    /// # Errors
    ///
    /// [`EtcdError::NotInstalled`] without Debian's etcd-server; otherwise
    /// if it does not come up.
    pub async fn start() -> Result<Self, EtcdError> {
        EtcdCluster::start(1).await.map(EtcdServer)
    }

    /// Starts etcd serving TLS on its client port (`https://`), with a
    /// certificate for 127.0.0.1 from a CA of its own ([`EtcdServer::ca_pem`]).
    ///
    /// # Errors
    ///
    /// As [`EtcdServer::start`], and if the `openssl` command cannot make
    /// the certificates.
    pub async fn start_tls() -> Result<Self, EtcdError> {
        EtcdCluster::start_with(1, true).await.map(EtcdServer)
    }

    /// The PEM certificate of the CA clients trust, when it serves TLS.
    pub fn ca_pem(&self) -> Option<&[u8]> {
        self.0.ca_pem()
    }

    /// Its client URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        self.0.members[0].endpoint()
    }

    /// A client of it, giving up on any call after 2 s.
    ///
    /// # Errors
    ///
    /// If it cannot be reached.
    pub async fn client(&self) -> Result<Client, EtcdError> {
        self.0.client().await
    }

    /// Turns etcd's authentication on, with `users`, each holding a role of
    /// its name with its permissions, and `root` (password `root`), which
    /// etcd asks for first. Every later client must name a user.
    ///
    /// # Errors
    ///
    /// If etcd refuses a step.
    pub async fn enable_auth(&self, users: &[User<'_>]) -> Result<(), EtcdError> {
        use etcd_client::Permission;
        let mut admin = self.client().await?;
        admin.user_add("root", "root", None).await?;
        admin.role_add("root").await?;
        admin.user_grant_role("root", "root").await?;
        for user in users {
            admin.user_add(user.name, user.password, None).await?;
            admin.role_add(user.name).await?;
            let reads = user.reads.iter().map(|p| Permission::read(*p));
            let writes = user.writes.iter().map(|p| Permission::read_write(*p));
            for permission in reads.chain(writes) {
                admin
                    .role_grant_permission(user.name, permission.with_prefix())
                    .await?;
            }
            admin.user_grant_role(user.name, user.name).await?;
        }
        admin.auth_enable().await?;
        Ok(())
    }

    /// Freezes it with SIGSTOP.
    ///
    /// # Errors
    ///
    /// If the signal cannot be sent.
    pub fn pause(&self) -> Result<(), EtcdError> {
        self.0.pause(0)
    }

    /// Thaws it with SIGCONT.
    ///
    /// # Errors
    ///
    /// If the signal cannot be sent.
    pub fn resume(&self) -> Result<(), EtcdError> {
        self.0.resume(0)
    }

    /// Kills it with SIGKILL.
    pub fn kill(&mut self) {
        self.0.kill(0);
    }

    /// Starts it again on the same data and port.
    ///
    /// # Errors
    ///
    /// If it does not come back.
    pub async fn restart(&mut self) -> Result<(), EtcdError> {
        self.0.restart(0).await
    }
}
