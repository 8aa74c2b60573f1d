//! Two schedulers and a controller on a local etcd: activations submitted,
//! their outcomes printed, then the scheduler that owns a queue crashes
//! and comes back, and the queue's activations still end.
//!
//! ```text
//! etcd &    # Debian's etcd-server, listening on http://127.0.0.1:2379
//! cargo run -p steadfast --example leasequeue -- http://127.0.0.1:2379
//! ```

use std::time::{Duration, Instant};

use serde_json::json;
use steadfast::leasequeue::etcd::{Etcd, EtcdOptions};
use steadfast::leasequeue::{
    ControllerBuilder, Invocation, Scheduler, SchedulerBuilder, StartError,
};

/// A scheduler whose actions greet whoever the payload names.
async fn scheduler(
    etcd: &EtcdOptions,
    name: &'static str,
    listen: &str,
) -> Result<Scheduler, StartError> {
    SchedulerBuilder::new(etcd.clone())
        .ttl(Duration::from_secs(2))
        .listen(listen)
        .start(move |invocation: Invocation| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            json!({
                "greeting": format!("hello, {}", invocation.payload["name"].as_str().unwrap_or("world")),
                "ran_on": name,
            })
        })
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoint = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:2379".into());
    let etcd = EtcdOptions::new([endpoint]).with_prefix("steadfast-example/");
    let a = scheduler(&etcd, "scheduler-a", "127.0.0.1:0").await?;
    let b = scheduler(&etcd, "scheduler-b", "127.0.0.1:0").await?;
    println!("schedulers at {} and {}", a.address(), b.address());
    let controller = ControllerBuilder::new(etcd.clone()).start().await?;

    let names = ["ada", "grace", "edsger", "barbara", "leslie", "tony"];
    let submissions: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(n, name)| controller.submit(format!("greet-{}", n % 3), json!({ "name": name })))
        .collect();
    for (n, submission) in submissions.into_iter().enumerate() {
        match submission.await {
            Ok(result) => println!("greet-{}: {result}", n % 3),
            Err(error) => println!("greet-{}: {error}", n % 3),
        }
    }

    // The owner of greet-0's queue crashes and restarts where it was.
    let owner = Etcd::connect(&etcd)
        .await?
        .lookup("greet-0")
        .await?
        .map(|key| key.owner)
        .ok_or("greet-0 has no queue")?;
    let (a, b) = if a.address() == owner {
        a.kill().await;
        println!("killed scheduler-a, which owned greet-0");
        (scheduler(&etcd, "scheduler-a", &owner).await?, b)
    } else {
        b.kill().await;
        println!("killed scheduler-b, which owned greet-0");
        (a, scheduler(&etcd, "scheduler-b", &owner).await?)
    };
    let started = Instant::now();
    let result = controller
        .submit("greet-0", json!({ "name": "again" }))
        .await;
    println!(
        "greet-0 after the crash, {:.1} s later: {}",
        started.elapsed().as_secs_f64(),
        match result {
            Ok(result) => result.to_string(),
            Err(error) => error.to_string(),
        }
    );
    drop((controller, a, b));
    Ok(())
}
