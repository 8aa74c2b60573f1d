//! The report page of `steadfast explore` in a real browser: headless
//! Chromium (Debian's `chromium`, which the README's test command installs)
//! loads it as a person would, its script draws the report, and the tests
//! read what it drew, the page as the browser holds it once the script has
//! run. A screenshot of each page is kept under
//! `target/tmp/browser/` for people to look at.
//!
//! `STEADFAST_CHROMIUM` names another Chromium binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `steadfast explore`, stopped when dropped.
struct Explore {
    child: Child,
    address: String,
}

impl Explore {
    fn start(model: &str, variant: &str, scenario: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_steadfast"))
            .args([
                "explore",
                model,
                "--variant",
                variant,
                "--scenario",
                scenario,
            ])
            .args(["--bind", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("the steadfast binary runs");
        let mut line = String::new();
        BufReader::new(child.stderr.take().expect("stderr is piped"))
            .read_line(&mut line)
            .expect("explore says where it serves");
        let address = line
            .trim()
            .rsplit("http://")
            .next()
            .expect("an address")
            .trim_end_matches('/')
            .to_string();
        Explore { child, address }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The body of a GET of `path`.
    fn get(&self, path: &str) -> String {
        let mut stream = TcpStream::connect(&self.address).expect("explore listens");
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        let status = head.lines().next().unwrap_or_default();
        assert!(status.contains(" 200 "), "GET {path}: {head}");
        body.to_string()
    }

    /// The report once its check is done (the first request starts it).
    fn report(&self) -> serde_json::Value {
        let began = Instant::now();
        loop {
            let answer: serde_json::Value =
                serde_json::from_str(&self.get("/steadfast/report.json")).unwrap();
            match answer["status"].as_str() {
                Some("done") => return answer["report"].clone(),
                Some("checking") if began.elapsed() < Duration::from_secs(120) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => panic!("the check did not end well: {answer}"),
            }
        }
    }
}

impl Drop for Explore {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Chromium to drive.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("STEADFAST_CHROMIUM") {
        return path.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .expect(
            "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or \
             STEADFAST_CHROMIUM): install Debian's chromium, as scripts/test does",
        )
}

/// Headless Chromium on `url` with `args`, given the time its script needs;
/// what it printed on stdout.
fn browse(url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let output = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--virtual-time-budget=10000")
        .args(args)
        .arg(url)
        .output()
        .expect("Chromium runs");
    assert!(
        output.status.success(),
        "Chromium failed on {url}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the page is UTF-8")
}

/// The page at `url` as the browser holds it after its script ran.
fn page(url: &str) -> String {
    browse(url, &["--dump-dom"])
}

/// A screenshot of the page at `url`, kept as `name`.png.
fn screenshot(url: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&path);
    browse(
        url,
        &[
            "--window-size=1280,12000",
            "--hide-scrollbars",
            &format!("--screenshot={}", path.display()),
        ],
    );
    let png = std::fs::read(&path).expect("Chromium wrote the screenshot");
    assert!(
        png.starts_with(b"\x89PNG"),
        "{} is not a PNG",
        path.display()
    );
    // A blank page of this size compresses to about 10 KB.
    assert!(png.len() > 100_000, "{} looks blank", path.display());
    path
}

/// The opening tag of the element whose attributes include `attribute`.
fn tag<'a>(page: &'a str, attribute: &str) -> &'a str {
    let at = page
        .find(attribute)
        .unwrap_or_else(|| panic!("no element with {attribute}"));
    let start = page[..at].rfind('<').unwrap();
    let end = at + page[at..].find('>').unwrap();
    &page[start..=end]
}

/// The element `<tag ... attribute ...>` up to its closing `</tag>` (for
/// elements that do not nest).
fn element<'a>(page: &'a str, name: &str, attribute: &str) -> &'a str {
    let opening = tag(page, attribute);
    let start = page.find(opening).unwrap();
    let end = start + page[start..].find(&format!("</{name}>")).unwrap();
    &page[start..end]
}

/// A property's row in the table of verdicts: its kind and its verdict as
/// shown.
fn row(page: &str, property: &str) -> String {
    let row = element(page, "tr", &format!("data-property=\"{property}\""));
    let cells: Vec<&str> = row
        .split("<td")
        .skip(1)
        .map(|cell| {
            let text = &cell[cell.find('>').unwrap() + 1..];
            let text = text.split("</td>").next().unwrap();
            // A violated property's name is a link to its counterexample.
            text.rsplit("\">").next().unwrap().trim_end_matches("</a>")
        })
        .collect();
    cells.join(" | ")
}

/// The index of `property` in the report, and its evidence.
fn evidence<'a>(report: &'a serde_json::Value, property: &str) -> (usize, &'a serde_json::Value) {
    report["properties"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find(|(_, p)| p["name"] == property)
        .map(|(i, p)| (i, &p["evidence"]))
        .unwrap_or_else(|| panic!("no property {property}"))
}

/// The steps of a counterexample's section, each as its `li` element.
fn steps(section: &str) -> Vec<&str> {
    section.split("<li class=\"step").skip(1).collect()
}

#[test]
fn the_641_counterexample_should_show_its_cycle_in_the_browser() {
    let explore = Explore::start("lifecycle", "kopf", "seed641");
    let report = explore.report();
    let liveness = "handled on the final essence";
    let (index, lasso) = evidence(&report, liveness);
    let start = lasso["cycle_start"].as_u64().expect("a lasso") as usize;
    let last = lasso["steps"].as_array().unwrap().len() - 1;

    let url = explore.url(&format!("/steadfast/#property-{index}"));
    let page = page(&url);
    // Every verdict, liveness included: what stateright's Explorer lacks.
    assert_eq!(
        row(&page, liveness),
        format!("{liveness} | eventually-always | VIOLATED")
    );
    let taken_over = "a dead replica's objects are taken over";
    assert_eq!(
        row(&page, taken_over),
        format!("{taken_over} | leads-to | holds")
    );
    // The anchor the command prints shows that counterexample alone.
    assert_eq!(page.matches("<section").count(), 1, "{page}");
    let section = element(&page, "section", &format!("id=\"property-{index}\""));
    assert!(
        section.contains("Counterexample to “handled on the final essence” (eventually-always)")
    );
    assert!(section.contains(&format!(
        "its condition is false at step {start}, and the cycle from step {start} repeats forever"
    )));
    let steps = steps(section);
    assert_eq!(steps.len(), last + 1);
    // The cycle: the state it starts from, where the violation begins, then
    // the steps that repeat, then the way back.
    assert!(
        steps[start].starts_with(" cycle-start trigger\""),
        "{}",
        steps[start]
    );
    assert!(steps[start].contains("the cycle starts here"));
    for step in &steps[start + 1..] {
        assert!(step.starts_with(" cycle\""), "{step}");
    }
    for step in &steps[..start] {
        assert!(
            step.starts_with("\""),
            "a step before the cycle is plain: {step}"
        );
    }
    assert!(section.contains(&format!(
        "↻ back to the state of step {start}: the steps {} to {last} repeat forever",
        start + 1
    )));
    // Its fairness: every class the model declares, taken or disabled.
    let fairness = element(section, "table", "class=\"fairness\"");
    let classes = lasso["fairness"].as_array().unwrap();
    assert!(!classes.is_empty());
    assert_eq!(fairness.matches("<tr>").count(), classes.len() + 1);
    // The states open in the Explorer, at their path.
    let path: Vec<&str> = lasso["explorer_path"]
        .as_str()
        .unwrap()
        .trim_start_matches("#/steps/")
        .split('/')
        .collect();
    assert!(steps[start].contains(&format!("href=\"/#/steps/{}\"", path[..=start].join("/"))));

    let shot = screenshot(&url, "seed641-kopf");
    println!("screenshot: {}", shot.display());
}

#[test]
fn the_5286_counterexamples_should_show_trigger_and_cycle_in_the_browser() {
    let explore = Explore::start("leasequeue", "openwhisk", "seed5286");
    let report = explore.report();
    let page = page(&explore.url("/steadfast/"));
    for (property, kind) in [
        ("every activation submitted is executed", "leads-to"),
        ("routing restored", "eventually-always"),
        ("a probe submitted is executed", "leads-to"),
    ] {
        assert_eq!(
            row(&page, property),
            format!("{property} | {kind} | VIOLATED")
        );
    }
    // Every violated property's counterexample, on one page.
    let violated = report["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["verdict"] == "violated")
        .count();
    assert_eq!(page.matches("<section").count(), violated);

    // A probe's trigger holds before the cycle: both are marked, apart.
    let probe = "a probe submitted is executed";
    let (index, lasso) = evidence(&report, probe);
    let trigger = lasso["trigger"].as_u64().unwrap() as usize;
    let start = lasso["cycle_start"].as_u64().unwrap() as usize;
    assert!(trigger < start, "{lasso}");
    let section = element(&page, "section", &format!("id=\"property-{index}\""));
    let steps = steps(section);
    assert!(
        steps[trigger].starts_with(" trigger\""),
        "{}",
        steps[trigger]
    );
    assert!(steps[trigger].contains("the trigger holds here, and no response follows"));
    assert!(
        steps[start].starts_with(" cycle-start\""),
        "{}",
        steps[start]
    );
    assert!(section.contains(&format!(
        "its trigger holds at step {trigger}, and its response holds at no step from there on"
    )));
    // The outage's clock and the controller's watch, as the cycle takes them.
    let fairness = element(section, "table", "class=\"fairness\"");
    assert!(
        fairness.contains("<td>clock</td><td>weak</td><td>step 23</td>"),
        "{fairness}"
    );
    assert!(
        fairness.contains("<td>controller 0's watch</td>"),
        "{fairness}"
    );

    let shot = screenshot(
        &explore.url(&format!("/steadfast/#property-{index}")),
        "seed5286-openwhisk",
    );
    println!("screenshot: {}", shot.display());
}
