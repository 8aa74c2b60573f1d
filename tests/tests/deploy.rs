//! The example operator's manifests (`examples/deploy/`): the CRD is the one
//! the derive generates, and `kubectl apply` of the directory is accepted by
//! the Kubernetes API test server, which stores what they say.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::{Client, Config, CustomResourceExt};
use steadfast_tests::backup::Backup;
use steadfast_tests::kube_testserver::TestServer;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/deploy")
}

#[test]
fn the_crd_manifest_should_be_the_one_the_derive_generates() {
    let expected = serde_json::to_string_pretty(&Backup::crd()).unwrap() + "\n";
    let path = deploy().join("01-crd.json");
    if std::env::var_os("STEADFAST_WRITE_MANIFESTS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let found = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        found == expected,
        "{} is not the CRD the derive in tests/src/backup.rs generates: \
         run this test with STEADFAST_WRITE_MANIFESTS=1 to write it again",
        path.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_the_manifests_should_be_accepted() {
    if std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_err()
    {
        eprintln!("skipped: kubectl is not on PATH (scripts/test installs it)");
        return;
    }
    let server = TestServer::start().await.unwrap();
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), server.kubeconfig()).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(config.path())
        .arg("--cache-dir")
        .arg(cache.path())
        // The test server serves no OpenAPI documents.
        .args(["apply", "--validate=false", "-f"])
        .arg(deploy())
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kubectl apply: {said}");
    for created in [
        "namespace/steadfast-example created",
        "customresourcedefinition.apiextensions.k8s.io/backups.example.steadfast.dev created",
        "serviceaccount/backup-operator created",
        "clusterrole.rbac.authorization.k8s.io/backup-operator created",
        "clusterrolebinding.rbac.authorization.k8s.io/backup-operator created",
        "deployment.apps/backup-operator created",
        "poddisruptionbudget.policy/backup-operator created",
    ] {
        assert!(said.contains(created), "{created:?} not in: {said}");
    }

    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(Backup::crd_name())
        .await
        .unwrap();
    assert_eq!(crd.spec.group, "example.steadfast.dev");
    let deployment = Api::<Deployment>::namespaced(client.clone(), "steadfast-example")
        .get("backup-operator")
        .await
        .unwrap();
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let container = &pod.containers[0];
    let pod_name = container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "POD_NAME")
        .and_then(|e| e.value_from.as_ref()?.field_ref.as_ref())
        .map(|f| f.field_path.clone());
    assert_eq!(
        pod_name.as_deref(),
        Some("metadata.name"),
        "POD_NAME from the downward API"
    );
    let probe = |p: Option<&k8s_openapi::api::core::v1::Probe>| {
        p.and_then(|p| p.http_get.as_ref()?.path.clone())
    };
    assert_eq!(
        probe(container.liveness_probe.as_ref()).as_deref(),
        Some("/healthz")
    );
    assert_eq!(
        probe(container.readiness_probe.as_ref()).as_deref(),
        Some("/readyz")
    );
    assert_eq!(pod.service_account_name.as_deref(), Some("backup-operator"));
    Api::<PodDisruptionBudget>::namespaced(client.clone(), "steadfast-example")
        .get("backup-operator")
        .await
        .expect("the disruption budget is stored");

    // The least privilege README.md states: these verbs, nothing more.
    let role = Api::<ClusterRole>::all(client)
        .get("backup-operator")
        .await
        .unwrap();
    let granted: Vec<(String, String, Vec<String>)> = role
        .rules
        .unwrap_or_default()
        .into_iter()
        .flat_map(|rule| {
            let verbs = rule.verbs.clone();
            let groups = rule.api_groups.unwrap_or_default();
            let resources = rule.resources.unwrap_or_default();
            groups.into_iter().flat_map(move |g| {
                let verbs = verbs.clone();
                resources
                    .clone()
                    .into_iter()
                    .map(move |r| (g.clone(), r, verbs.clone()))
            })
        })
        .collect();
    let want = |g: &str, r: &str, verbs: &[&str]| {
        (
            g.to_owned(),
            r.to_owned(),
            verbs.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        granted,
        [
            want(
                "example.steadfast.dev",
                "backups",
                &["get", "list", "watch", "patch"]
            ),
            want("events.k8s.io", "events", &["create", "patch"]),
        ]
    );
    server.shutdown().await;
}
