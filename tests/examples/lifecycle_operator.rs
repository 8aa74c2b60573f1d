//! A small operator on steadfast's lifecycle runtime: backups with create,
//! field (with sub-handlers), update and delete handlers.
//!
//! ```sh
//! cargo run -p steadfast-tests --example lifecycle_operator
//! cargo run -p steadfast-tests --example lifecycle_operator -- --kubeconfig ~/.kube/config
//! ```
//!
//! With no argument it starts the Kubernetes API test server on loopback;
//! with `--kubeconfig` it runs against that cluster (the `Backup` CRD is
//! installed if missing). Either way it creates a backup, resizes it,
//! deletes it, and prints what each handler did.
//!
//! With `--serve [ADDR]` it is the operator that `examples/deploy/` runs in
//! a cluster: the in-cluster (or kubeconfig's) client, backups in every
//! namespace, metrics and probes on ADDR (default `0.0.0.0:9090`), until
//! stopped.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Config, CustomResourceExt};
use serde_json::json;
use steadfast::lifecycle::{Context, Handler, HandlerError, Operator};
use steadfast::metrics::MetricsEndpoint;
use steadfast_tests::backup::{Backup, BackupSpec};
use steadfast_tests::kube_testserver::TestServer;

/// A backup of a volume.
fn size(ctx: &Context<Backup>) -> i64 {
    ctx.new_value("spec.size")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or_default()
}

fn operator(api: Api<Backup>) -> Operator<Backup> {
    Operator::new(api)
        .on_create(
            "provision",
            Handler::new(|ctx: Context<Backup>| async move {
                println!("provision: a bucket for {} GB", size(&ctx));
                Ok::<(), HandlerError>(())
            }),
        )
        .on_field(
            "spec.size",
            "resize",
            Handler::new(|ctx: Context<Backup>| async move {
                let old = ctx.old_value("spec.size").cloned();
                println!("resize: {old:?} -> {} GB, in two steps", size(&ctx));
                ctx.sub("volume");
                ctx.sub("quota");
                Ok::<(), HandlerError>(())
            })
            .sub_handlers(|ctx: Context<Backup>| async move {
                let step = ctx.sub_name().unwrap_or_default().to_owned();
                if step == "quota" && ctx.retry() == 0 {
                    println!("resize/quota: the quota service is busy; again in 200 ms");
                    return Err(HandlerError::temporary("busy", Duration::from_millis(200)));
                }
                println!("resize/{step}: done for {} GB", size(&ctx));
                Ok(())
            })
            .retries(3),
        )
        .on_update(
            "label",
            Handler::new(|ctx: Context<Backup>| async move {
                let size = size(&ctx);
                println!("label: size={size}");
                ctx.patch(json!({ "metadata": { "labels": { "size": size.to_string() } } }));
                Ok::<(), HandlerError>(())
            }),
        )
        .on_delete(
            "cleanup",
            Handler::new(|_ctx: Context<Backup>| async move {
                println!("cleanup: bucket removed; the finalizer goes");
                Ok::<(), HandlerError>(())
            }),
        )
}

/// Waits until the backup is handled in full: no progress annotations, a
/// diff-base.
async fn handled(api: &Api<Backup>, name: &str) -> Result<(), Box<dyn std::error::Error>> {
    for _ in 0..200 {
        let backup = api.get(name).await?;
        let annotations = backup.metadata.annotations.unwrap_or_default();
        let busy = annotations
            .keys()
            .any(|k| k.starts_with("steadfast.dev/progress."));
        if !busy && annotations.contains_key("steadfast.dev/diff-base") {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("{name} was not handled in 10 s").into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(flag) = args.first().filter(|f| *f == "--serve") {
        let address = args.get(1).map_or("0.0.0.0:9090", String::as_str);
        if args.len() > 2 {
            return Err(format!("usage: lifecycle_operator {flag} [ADDR]").into());
        }
        let endpoint = MetricsEndpoint::bind(address).await?;
        println!("metrics and probes on {}", endpoint.local_addr());
        let client = steadfast::lifecycle::client(Config::infer().await?)?;
        operator(Api::all(client))
            .metrics(endpoint)
            .shutdown_on(steadfast::lifecycle::terminated())
            .run()
            .await?;
        return Ok(());
    }
    let (client, server) = match args.as_slice() {
        [] => {
            let server = TestServer::start().await?;
            println!("the Kubernetes API test server listens on {}", server.url());
            let client = steadfast::lifecycle::client(Config::new(server.url().parse()?))?;
            (client, Some(server))
        }
        [flag, path] if flag == "--kubeconfig" => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            let config =
                Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
            (steadfast::lifecycle::client(config)?, None)
        }
        _ => return Err("usage: lifecycle_operator [--kubeconfig PATH | --serve [ADDR]]".into()),
    };
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), &Backup::crd()).await {
        Ok(_) | Err(kube::Error::Api(_)) => {}
        Err(error) => return Err(error.into()),
    }
    let established = kube::runtime::wait::conditions::is_crd_established();
    let wait = kube::runtime::wait::await_condition(crds, Backup::crd_name(), established);
    tokio::time::timeout(Duration::from_secs(30), wait).await??;
    let api: Api<Backup> = Api::namespaced(client, "default");
    let running = tokio::spawn(operator(api.clone()).run());

    println!("-- create nightly, 10 GB");
    api.create(
        &PostParams::default(),
        &Backup::new("nightly", BackupSpec { size: 10 }),
    )
    .await?;
    handled(&api, "nightly").await?;
    println!("-- resize nightly to 20 GB");
    let resize = json!({ "spec": { "size": 20 } });
    api.patch("nightly", &PatchParams::default(), &Patch::Merge(&resize))
        .await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    handled(&api, "nightly").await?;
    let labels = api
        .get("nightly")
        .await?
        .metadata
        .labels
        .unwrap_or_default();
    println!("-- labels now {labels:?}; delete nightly");
    api.delete("nightly", &DeleteParams::default()).await?;
    for _ in 0..200 {
        if api.get_opt("nightly").await?.is_none() {
            println!("-- nightly is gone");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.abort();
    if let Some(server) = server {
        server.shutdown().await;
    }
    Ok(())
}
