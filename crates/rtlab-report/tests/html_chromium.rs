//! The HTML report as a browser shows it: headless Chromium loads a report of the fixtures
//! (with a verdict, so the requirement lines are drawn) and a small script, added only to
//! this test's copy of the page, measures every figure. Each must be laid out with a
//! non-zero size and hold drawn lines, and the warning banner must sit above the first
//! figure. Skipped, with a note, when neither `chromium` nor `chromium-browser` is on PATH
//! (./run-tests installs it when run as root; CI does).

mod common;

use rtlab_analysis::requirement::parse_requirement;
use rtlab_report::html::HtmlReport;
use rtlab_report::verdict::judge;
use rtlab_results::run::RunResult;
use rtlab_results::set::{ReportExporter, ReportSet, SourcedRun};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes one line per figure ("id width height drawn-elements"), then the banner's and the
/// first figure's distance from the top, into a <pre> that --dump-dom prints.
const PROBE: &str = r#"<script>
(function () {
  const lines = [];
  for (const f of document.querySelectorAll('figure.rtlab-figure')) {
    const svg = f.querySelector('svg');
    const r = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
    const drawn = svg ? svg.querySelectorAll('polyline, path, line, rect, polygon, circle').length : 0;
    lines.push(f.id + ' ' + Math.round(r.width) + ' ' + Math.round(r.height) + ' ' + drawn);
  }
  const top = (el) => el ? Math.round(el.getBoundingClientRect().top + window.scrollY) : -1;
  lines.push('banner-top ' + top(document.querySelector('.not-real-time')));
  lines.push('first-figure-top ' + top(document.querySelector('figure.rtlab-figure')));
  const pre = document.createElement('pre');
  pre.id = 'rtlab-probe';
  pre.textContent = 'RTLAB-PROBE-BEGIN\n' + lines.join('\n') + '\nRTLAB-PROBE-END';
  document.body.appendChild(pre);
})();
</script>"#;

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

fn fixture(name: &str) -> SourcedRun {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    SourcedRun { source: path.display().to_string(), run: RunResult::load(&path).expect("the fixture loads") }
}

/// Runs Chromium on `page` and returns what --dump-dom printed; None after `limit`.
fn dump_dom(chromium: &Path, page: &Path, profile: &Path, limit: Duration) -> Option<String> {
    let mut child = Command::new(chromium)
        .args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--window-size=1200,2000"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let start = Instant::now();
    loop {
        if child.try_wait().expect("chromium can be waited for").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().ok()
}

#[test]
fn every_figure_is_rendered_with_a_size_in_chromium() {
    let Some(chromium) = find_chromium() else {
        eprintln!(
            "html_chromium: SKIPPED: neither chromium nor chromium-browser is on PATH (apt-get install chromium)"
        );
        return;
    };
    let mut set = ReportSet {
        runs: vec![fixture("simulated-2cpu.run.json"), fixture("simulated-two-scenarios.run.json")],
        verdict: None,
    };
    let requirement = parse_requirement("timer max < 500us").unwrap();
    set.verdict = Some(judge(&set, &[requirement]).unwrap());
    check_in_chromium(&chromium, &set, 16);
    // The new probes' figures: the per-sample plot, and the charts beside the jitter and
    // sweep tables (laid out at half the column's width beside a narrow table).
    let probes = SourcedRun { source: "probes/run.json".into(), run: common::derived_probes_run() };
    let mut set = ReportSet { runs: vec![probes], verdict: None };
    set.verdict = Some(judge(&set, &[parse_requirement("sleep max < 2ms").unwrap()]).unwrap());
    let seen = check_in_chromium(&chromium, &set, 3);
    for id in ["fig-per-sample-sleep-overshoot", "fig-per-period-jitter-jitter", "fig-per-rate-sweep-latency"] {
        assert!(seen.iter().any(|s| s == id), "{id} not rendered");
    }
}

/// Renders `set`, loads it in Chromium and checks every figure's size and content; returns
/// the ids of the figures seen.
fn check_in_chromium(chromium: &Path, set: &ReportSet, at_least: usize) -> Vec<String> {
    let html = HtmlReport.render(set).expect("the report renders");
    let expected: Vec<String> = html
        .match_indices("<figure class=\"rtlab-figure\" id=\"")
        .map(|(at, prefix)| {
            let rest = &html[at + prefix.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect();
    assert!(expected.len() >= at_least, "{} figures in the page", expected.len());

    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, html.replace("</body>", &format!("{PROBE}\n</body>"))).unwrap();
    let dom = dump_dom(chromium, &page, &dir.path().join("profile"), Duration::from_secs(120))
        .expect("chromium finished within 2 minutes");
    // The script's own text holds the markers too: read the <pre> it wrote.
    let output =
        dom.find("<pre id=\"rtlab-probe\">").unwrap_or_else(|| panic!("the probe did not run; DOM:\n{dom:.2000}"));
    let begin = dom[output..].find("RTLAB-PROBE-BEGIN").expect("probe output begins") + output;
    let end = dom[begin..].find("RTLAB-PROBE-END").expect("probe output ends") + begin;
    let lines: Vec<&str> = dom[begin..end].lines().skip(1).collect();

    let mut seen = Vec::new();
    let mut tops = std::collections::HashMap::new();
    for line in &lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [name, top] => {
                tops.insert(name.to_string(), top.parse::<i64>().unwrap());
            }
            [id, width, height, drawn] => {
                let (w, h, n): (u32, u32, u32) =
                    (width.parse().unwrap(), height.parse().unwrap(), drawn.parse().unwrap());
                assert!(w >= 300 && h >= 150, "{id} is rendered {w}x{h}");
                assert!(n >= 10, "{id} has {n} drawn elements");
                seen.push(id.to_string());
            }
            _ => panic!("unexpected probe line {line:?}"),
        }
    }
    assert_eq!(seen, expected, "figures in the rendered page");
    let (banner, first) = (tops["banner-top"], tops["first-figure-top"]);
    assert!(banner >= 0 && banner < first, "banner at {banner} px, first figure at {first} px");
    eprintln!(
        "html_chromium: {} figures rendered with a size; banner at {banner} px, first figure at {first} px",
        seen.len()
    );
    seen
}
