//! Packaging conventions: `rtlab completions SHELL`, `rtlab manpage` and `--version`.
//! The scripts are checked by the shells themselves where they are installed (bash always;
//! zsh, fish and groff when present, otherwise those checks say they were skipped).

mod common;

use common::rtlab;
use std::path::Path;
use std::process::Command;

/// The subcommands users see (`help` is clap's own; `__load-host` is hidden).
const SUBCOMMANDS: [&str; 8] = ["run", "sysinfo", "report", "compare", "export", "import", "completions", "manpage"];

fn stdout_of(args: &[&str]) -> String {
    let output = rtlab().args(args).output().expect("rtlab runs");
    assert_eq!(output.status.code(), Some(0), "rtlab {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").output().map(|o| o.status.success()).unwrap_or(false)
}

fn write_script(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("script written");
    path
}

#[test]
fn completions_name_every_subcommand_and_option_but_not_the_hidden_one() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        assert!(!script.trim().is_empty(), "{shell}: empty script");
        // fish declares a long option as `-l NAME`, the others as `--NAME`.
        let option = |name: &str| if shell == "fish" { format!("-l {name} ") } else { format!("--{name}") };
        let words =
            [option("require"), option("from"), "cyclictest".into(), "jitterdebugger".into(), "openmetrics".into()];
        for word in SUBCOMMANDS.iter().copied().chain(words.iter().map(String::as_str)) {
            assert!(script.contains(word), "{shell}: {word} is not offered");
        }
        assert!(!script.contains("load-host"), "{shell}: offers the hidden __load-host");
    }
}

/// Completes the last of `words` the way bash does on <TAB>, with the generated script.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    const PROGRAM: &str = r#"source "$1"; shift
        COMP_WORDS=(rtlab "$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
        _rtlab rtlab "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}""#;
    let output =
        Command::new("bash").arg("-c").arg(PROGRAM).arg("bash").arg(script).args(words).output().expect("bash runs");
    assert!(output.status.success(), "bash: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

#[test]
fn bash_completion_registers_and_completes() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = write_script(dir.path(), "rtlab.bash", &stdout_of(&["completions", "bash"]));
    let registered = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p rtlab"#)
        .arg("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(String::from_utf8_lossy(&registered.stdout).contains("-F _rtlab rtlab"), "{registered:?}");

    let top = bash_completes(&script, &[""]);
    for sub in SUBCOMMANDS {
        assert!(top.iter().any(|w| w == sub), "rtlab <TAB> lacks {sub}: {top:?}");
    }
    assert!(!top.iter().any(|w| w.contains("load-host")), "{top:?}");
    assert_eq!(bash_completes(&script, &["im"]), ["import"]);
    assert_eq!(bash_completes(&script, &["run", "--req"]), ["--require"]);
    assert_eq!(
        bash_completes(&script, &["import", "--from", ""]),
        ["cyclictest", "rtla", "jitterdebugger", "xenomai", "oslat"]
    );
    assert!(bash_completes(&script, &["__lo"]).is_empty());
}

#[test]
fn zsh_and_fish_scripts_parse() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (shell, file) in [("zsh", "_rtlab"), ("fish", "rtlab.fish")] {
        if !installed(shell) {
            eprintln!("skipped: {shell} is not installed");
            continue;
        }
        let script = write_script(dir.path(), file, &stdout_of(&["completions", shell]));
        let output = Command::new(shell).arg("-n").arg(&script).output().expect("shell runs");
        assert!(output.status.success(), "{shell} -n: {}", String::from_utf8_lossy(&output.stderr));
    }
}

#[test]
fn fish_completes_from_the_script() {
    if !installed("fish") {
        eprintln!("skipped: fish is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let script = write_script(dir.path(), "rtlab.fish", &stdout_of(&["completions", "fish"]));
    let output = Command::new("fish")
        .arg("-c")
        .arg(r#"source $argv[1]; complete -C "rtlab import --from jit""#)
        .arg(&script)
        .output()
        .expect("fish runs");
    let offered = String::from_utf8_lossy(&output.stdout);
    assert!(offered.starts_with("jitterdebugger\t"), "{offered}");
}

#[test]
fn bad_shell_name_is_a_usage_error() {
    let output = rtlab().args(["completions", "tcsh"]).output().expect("rtlab runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("bash, zsh, fish"));
}

#[test]
fn manpage_is_one_page_with_every_subcommand() {
    let page = stdout_of(&["manpage"]);
    assert!(page.starts_with(".TH RTLAB 1 "), "{}", &page[..page.len().min(200)]);
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH COMMANDS", ".SH \"EXIT STATUS\"", ".SH VERSION"]
    {
        assert!(page.lines().any(|l| l == section), "no {section}");
    }
    for sub in SUBCOMMANDS {
        assert!(page.lines().any(|l| l == format!(".SS \"rtlab {sub}\"")), "no section for rtlab {sub}");
    }
    assert!(page.contains("\\-\\-require"));
    assert!(!page.contains("load\\-host") && !page.contains("load-host"));
    // One definition of \*(Aq, and only one title.
    assert_eq!(page.matches(".ds Aq").count(), 2);
    assert_eq!(page.lines().filter(|l| l.starts_with(".TH ")).count(), 1);
}

#[test]
fn manpage_renders_without_warnings() {
    if !installed("groff") {
        eprintln!("skipped: groff is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let page = write_script(dir.path(), "rtlab.1", &stdout_of(&["manpage"]));
    let output =
        Command::new("groff").args(["-man", "-Tutf8", "-ww", "-P-cbou"]).arg(&page).output().expect("groff runs");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stderr), "", "groff warnings");
    // -P-cbou: plain text, no bold or underline escapes inside the words.
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("rtlab import"), "rendered page lacks the import command");
}

#[test]
fn version_names_the_version_and_the_commit() {
    let line = stdout_of(&["--version"]);
    let expected_start = format!("rtlab {} (", env!("CARGO_PKG_VERSION"));
    let commit = line
        .trim_end()
        .strip_prefix(&expected_start)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `rtlab VERSION (COMMIT)`: {line:?}"));
    // A git checkout gives the abbreviated hash; a source tree without .git says "unknown";
    // a packager may set RTLAB_COMMIT to anything, but not to an empty string.
    let is_hash = commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit());
    let packaged = std::env::var("RTLAB_COMMIT").is_ok_and(|c| c.trim() == commit);
    assert!(is_hash || commit == "unknown" || packaged, "commit {commit:?}");
}
