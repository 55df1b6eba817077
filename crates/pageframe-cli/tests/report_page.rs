//! `pageframe run --out DIR`, `--config`, `--proc` and `pageframe config`,
//! run as a user runs them; and the report page opened in a real browser
//! (headless Chromium, installed by .ci/run; `cargo test` skips that test,
//! `.ci/run` runs it with `--include-ignored`).

mod common;

use common::{pageframe, stdout_of, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Small parameters, so that the tests run in seconds.
const SMALL: &str = "[bulk]\npages_per_round = 4096\nrounds = 3\npeers = false\n\n[scaling]\npages_per_thread = 8192\nmax_threads = 2\n\n[unmapped-populate]\nregion_mib = 8\nsamples = 3\nsim_region_gib = 1\n";

fn small_config(dir: &Path) -> String {
    let path = dir.join("small.toml");
    std::fs::write(&path, SMALL).expect("temp dir is writable");
    path.display().to_string()
}

#[test]
fn out_dir_has_json_csv_plots_and_the_page() {
    let dir = temp_dir("out");
    let config = small_config(&dir);
    let site = dir.join("site");
    // `conform --out` saves a suite for the page (exit 1 would be an
    // unlisted DIFF on this host: still written).
    let conform = pageframe(&["conform", "slab", "--out", &site.display().to_string()]);
    assert!(matches!(conform.status.code(), Some(0 | 1)), "{conform:?}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(site.join("conform.json")).unwrap()).unwrap();
    assert_eq!(saved["suites"][0]["suite"], "slab");
    let stdout = stdout_of(&[
        "run",
        "all",
        "--config",
        &config,
        "--out",
        &site.display().to_string(),
        "--proc",
        "buddyinfo",
        "--quiet",
    ]);
    // Not a terminal: no progress bar escapes; the summary closes the run.
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    let summary = stdout
        .split("# summary: ours beside the source documents\n")
        .nth(1)
        .expect("a summary table");
    assert!(
        summary.contains("bulk ") && summary.contains("matches"),
        "{summary}"
    );
    assert!(stdout.contains("==> /proc/buddyinfo (bulk: "), "{stdout}");
    for name in ["bulk", "scaling"] {
        let json: Value = serde_json::from_str(
            &std::fs::read_to_string(site.join(name).join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(json["experiment"], name);
        assert!(!json["rows"].as_array().unwrap().is_empty());
        let csv = std::fs::read_to_string(site.join(name).join(format!("{name}.csv"))).unwrap();
        assert!(csv.lines().count() > 1);
    }
    for plot in ["bulk/cycles-per-page", "bulk/knobs", "scaling/throughput"] {
        let svg = std::fs::read_to_string(site.join(format!("{plot}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{plot}");
        let png = std::fs::read(site.join(format!("{plot}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{plot}");
    }
    let page = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        page.contains("pages_per_round = 4096"),
        "the parameters used"
    );
    assert!(page.contains("<th>seed</th><td>42</td>"));
    // One <img class="plot"> per plot file, all embedded.
    let svgs = std::fs::read_dir(site.join("bulk")).unwrap().count();
    assert!(svgs >= 4);
    assert!(page.matches("class=\"plot\"").count() >= 3);
    assert!(!page.contains("src=\"http"), "self-contained");
    conform_section_shows_each_suite(&page);
    assert!(
        page.contains("<td class=\"text\">slab</td>")
            && page.contains("from conform.json")
            && page.contains("id=\"conform-listed\""),
        "slab from the saved file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The suites `pageframe conform all` runs.
const SUITES: [&str; 7] = [
    "mempolicy",
    "zoneinfo",
    "slab",
    "zsmalloc",
    "buddy",
    "sysctl",
    "pagecache",
];

/// The page's conformance section has one row per suite, each with its
/// counts (cases = MATCH + DIFF) or `skipped: ` and a reason.
fn conform_section_shows_each_suite(page: &str) {
    let section = page
        .split("<h2 id=\"conform\">")
        .nth(1)
        .expect("a conformance section");
    for suite in SUITES {
        let row = section
            .split(&format!("<tr data-suite=\"{suite}\" "))
            .nth(1)
            .and_then(|rest| rest.split("</tr>").next())
            .unwrap_or_else(|| panic!("no row for {suite}: {section}"));
        if row.starts_with("data-status=\"ran\"") {
            let numbers: Vec<u64> = row
                .split("<td>")
                .skip(1)
                .take(3)
                .map(|cell| cell.split('<').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(numbers[0], numbers[1] + numbers[2], "{suite}: {row}");
            assert!(numbers[0] > 0, "{suite}: {row}");
        } else {
            assert!(row.starts_with("data-status=\"skipped\""), "{suite}: {row}");
            let reason = row.split("skipped: ").nth(1).expect("a reason");
            assert!(reason.len() > "</td>".len() + 3, "{suite}: {row}");
        }
    }
}

#[test]
fn config_prints_defaults_that_run_back() {
    let text = stdout_of(&["config", "bulk"]);
    assert!(text.starts_with("# bulk: "), "{text}");
    assert!(text.contains("[bulk]\n"));
    assert!(text.contains("\nrounds = 41\n"), "{text}");
    let all = stdout_of(&["config", "all", "--scale", "full"]);
    assert!(
        all.contains("[scaling]") && all.contains("rounds = 201"),
        "{all}"
    );
    // The printed defaults are a valid config file.
    let dir = temp_dir("config");
    let path = dir.join("defaults.toml");
    std::fs::write(
        &path,
        all.replace("max_threads = 4", "max_threads = 1")
            .replace("pages_per_thread = 16777216", "pages_per_thread = 4096"),
    )
    .unwrap();
    let report = stdout_of(&[
        "run",
        "scaling",
        "--config",
        &path.display().to_string(),
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_str(report.trim()).unwrap();
    assert_eq!(
        json["rows"].as_array().unwrap().len(),
        2,
        "1 thread x 2 patterns"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_configs_name_the_key() {
    let dir = temp_dir("bad");
    let error = |text: &str| {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let output = pageframe(&["run", "bulk", "--config", &path.display().to_string()]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(output.stdout.is_empty());
        stderr
    };
    assert!(error("[bulk]\nround = 3\n").contains("unknown key 'bulk.round'"));
    assert!(error("[scaling]\nmax_threads = 0\n")
        .contains("'scaling.max_threads': expected an integer from 1 to 64, got 0"));
    assert!(error("[bulk]\npeers = 1\n").contains("'bulk.peers': expected true or false"));
    assert!(error("[nosuch]\n").contains("unknown experiment table '[nosuch]'"));
    assert!(error("[bulk\n").contains("bad.toml:1:"));
    let output = pageframe(&["run", "bulk", "--proc", "buddyinf"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown view 'buddyinf'"));
    let output = pageframe(&["config", "nosuch"]);
    assert_eq!(output.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The browser: `chromium` on PATH (Debian's package).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Loads the page in headless Chromium and returns what the page's own
/// check script wrote into `<pre id="page-check">`.
fn page_check(index: &Path) -> Value {
    let browser = chromium().expect("chromium is installed (.ci/run installs it)");
    let profile = temp_dir("chromium-profile");
    let output = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", index.display()))
        .output()
        .expect("chromium runs");
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&output.stdout);
    let start = dom.find("<pre id=\"page-check\"").unwrap_or_else(|| {
        panic!(
            "no page check in the DOM; chromium said: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let text = &dom[start..];
    let text = &text[text.find('>').unwrap() + 1..text.find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

#[test]
#[ignore = "needs chromium; .ci/run runs it"]
fn report_page_renders_in_chromium() {
    let dir = temp_dir("browser");
    let config = small_config(&dir);
    let site = dir.join("site");
    stdout_of(&[
        "run",
        "all",
        "--config",
        &config,
        "--out",
        &site.display().to_string(),
        "--quiet",
    ]);
    let check = page_check(&site.join("index.html"));
    let images = check["images"].as_array().expect("images");
    let tables = check["tables"].as_array().expect("tables");
    let experiments = stdout_of(&["config", "all"]).matches("\n[").count();
    assert!(
        images.len() >= experiments,
        "a plot per experiment at least: {check}"
    );
    for image in images {
        assert_eq!(image["loaded"], true, "plot did not load: {image}");
        assert!(image["width"].as_u64().unwrap() > 100, "{image}");
    }
    assert_eq!(
        tables.len(),
        experiments + 1,
        "summary and one per experiment: {check}"
    );
    for table in tables {
        assert!(table["rows"].as_u64().unwrap() > 0, "empty table: {table}");
    }
    let conform = check["conform"].as_array().expect("conform rows");
    let shown: Vec<&str> = conform
        .iter()
        .map(|row| row["suite"].as_str().unwrap())
        .collect();
    assert_eq!(shown, SUITES, "{check}");
    for row in conform {
        assert!(
            row["status"] == "ran" || row["status"] == "skipped",
            "{row}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn numa_balancing_takes_a_config_and_reports_its_timeline() {
    let defaults = stdout_of(&["config", "numa-balancing"]);
    assert!(defaults.contains("[numa-balancing]\n"), "{defaults}");
    assert!(defaults.contains("\npattern = \"uniform\"\n"), "{defaults}");
    assert!(defaults.contains("\neater_exit_s = 100\n"), "{defaults}");
    let dir = temp_dir("numa");
    let path = dir.join("numa.toml");
    std::fs::write(
        &path,
        "[numa-balancing]\nnode_mib = 128\ncpus_per_node = 2\nprocesses = 2\nmap_mib = 24\neater_mib = 100\nscan_size_mb = 8\neater_exit_s = 10\nduration_s = 40\ntick_ms = 40\nsample_s = 4\n",
    )
    .unwrap();
    let config = path.display().to_string();
    let report = stdout_of(&[
        "run",
        "numa-balancing",
        "--config",
        &config,
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_str(report.trim()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let (timeline, results): (Vec<&Value>, Vec<&Value>) =
        rows.iter().partition(|row| row["series"] == "timeline");
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|row| row["improvement"].is_number()));
    assert_eq!(timeline.len(), 3 * 10, "3 runs x 40 s / 4 s");
    let times: Vec<f64> = timeline[..10]
        .iter()
        .map(|row| row["t_s"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "{times:?}");
    std::fs::write(&path, "[numa-balancing]\nscan_size = 8\n").unwrap();
    let output = pageframe(&["run", "numa-balancing", "--config", &config]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("unknown key 'numa-balancing.scan_size'"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
