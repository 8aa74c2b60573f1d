//! Where a Kubernetes test runs: a fresh [`TestServer`] on loopback, or,
//! with `STEADFAST_KUBE_TESTS=cluster`, the cluster the kubeconfig names
//! (`KUBECONFIG` or `~/.kube/config`), each test in a namespace of its own.
//! Cases that inject faults or rely on the test server's settings ask for
//! [`KubeTarget::server`] and are skipped, with a message, on a cluster.
//!
//! ```no_run
//! # async fn example() {
//! use steadfast_tests::kube_target::KubeTarget;
//!
//! let target = KubeTarget::start().await;
//! // ... kube::Api::namespaced(target.client.clone(), &target.namespace) ...
//! target.finish().await;
//! # }
//! ```

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Config, CustomResourceExt};
use serde_json::json;

use crate::kube_testserver::{ServerConfig, TestServer};

/// A test's API server and namespace.
pub struct KubeTarget {
    /// A client of it.
    pub client: Client,
    /// The test server, unless the test runs on a cluster.
    pub server: Option<TestServer>,
    /// The namespace the test works in.
    pub namespace: String,
}

impl KubeTarget {
    /// A fresh test server with its default settings, or the cluster.
    pub async fn start() -> Self {
        Self::start_with(ServerConfig::default()).await
    }

    /// A fresh test server set up as `config`, or the cluster.
    ///
    /// # Panics
    ///
    /// If the test server cannot start, or the cluster cannot be reached.
    pub async fn start_with(config: ServerConfig) -> Self {
        if std::env::var("STEADFAST_KUBE_TESTS").as_deref() == Ok("cluster") {
            let client = Client::try_default()
                .await
                .expect("STEADFAST_KUBE_TESTS=cluster needs a kubeconfig (KUBECONFIG or ~/.kube/config) for a reachable cluster");
            let namespace = format!(
                "steadfast-{}",
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            );
            let object: Namespace =
                serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &object)
                .await
                .expect("a test namespace");
            return Self {
                client,
                server: None,
                namespace,
            };
        }
        let server = TestServer::start_with(config)
            .await
            .expect("the test server starts on loopback");
        let client = Client::try_from(Config::new(server.url().parse().unwrap()))
            .expect("a client for the test server");
        Self {
            client,
            server: Some(server),
            namespace: "default".into(),
        }
    }

    /// A client of its own, with its own connections (for an operator
    /// replica that must not share another's).
    ///
    /// # Panics
    ///
    /// If the kubeconfig can no longer be read.
    pub async fn another_client(&self) -> Client {
        match &self.server {
            Some(server) => Client::try_from(Config::new(server.url().parse().unwrap()))
                .expect("a client for the test server"),
            None => Client::try_default()
                .await
                .expect("a client of the cluster"),
        }
    }

    /// The test server, for the cases that inject faults; `None` on a real
    /// cluster, where such a case reports that it was skipped.
    pub fn server(&self, case: &str) -> Option<&TestServer> {
        if self.server.is_none() {
            eprintln!(
                "{case}: skipped on a real cluster (it needs the test server's faults or settings)"
            );
        }
        self.server.as_ref()
    }

    /// Creates the CRD of `K` (if it is not there) and waits until it is
    /// established; returns the API of `K` in the test's namespace.
    ///
    /// # Panics
    ///
    /// If the CRD cannot be created, or is not established in 30 s.
    pub async fn install<K>(&self) -> Api<K>
    where
        K: CustomResourceExt + kube::Resource<Scope = kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        match crds.create(&PostParams::default(), &K::crd()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => panic!("the CRD {} cannot be created: {error}", K::crd_name()),
        }
        let established = kube::runtime::wait::conditions::is_crd_established();
        let wait = kube::runtime::wait::await_condition(crds, K::crd_name(), established);
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .expect("the CRD is established")
            .unwrap();
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Removes the test's namespace from a cluster, or stops the test
    /// server.
    pub async fn finish(self) {
        match self.server {
            Some(server) => server.shutdown().await,
            None => {
                let _ = Api::<Namespace>::all(self.client)
                    .delete(&self.namespace, &DeleteParams::default())
                    .await;
            }
        }
    }
}
