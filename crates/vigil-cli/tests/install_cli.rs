//! What a packager takes from the binary: `--version` with the revision and
//! the build date, shell completions and manual pages, through the real
//! binary.

use std::process::{Command, Output};

fn vigil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vigil")).args(args).output().expect("the vigil binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

#[test]
fn the_version_names_the_revision_and_the_build_date() {
    let o = vigil(&["--version"]);
    assert!(o.status.success());
    let line = text(&o.stdout);
    // "vigil 0.1.0 (0123456789ab 2026-12-02)"
    let rest = line.trim().strip_prefix(concat!("vigil ", env!("CARGO_PKG_VERSION"), " (")).expect(&line);
    let (revision, date) = rest.trim_end_matches(')').split_once(' ').expect(&line);
    let date: Vec<&str> = date.split('-').collect();
    assert!(date.len() == 3 && date[0].len() == 4 && date[1].len() == 2 && date[2].len() == 2, "{line}");
    // Built from this checkout: the revision is its HEAD (the binary was
    // built from these sources), unless git is missing here.
    match Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output() {
        Ok(head) if head.status.success() => {
            let head = text(&head.stdout);
            assert!(revision.starts_with(head.trim()), "{line} built from {head}");
        }
        _ => println!("git is not available: the revision ({revision}) is not compared with HEAD"),
    }
    // Subcommands say the same.
    let agent = text(&vigil(&["agent", "--version"]).stdout);
    assert!(agent.contains(revision), "{agent}");
}

#[test]
fn the_bash_completion_script_completes_the_subcommands_and_the_agents_flags() {
    let o = vigil(&["completions", "bash"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dir = tempdir("completions");
    let script = dir.join("vigil.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    // What bash offers after `vigil ` and after `vigil agent --jo`, asked of
    // the loaded script as bash asks it.
    // Bash calls the function with the command, the word being completed
    // and the word before it.
    let ask = |words: &str, cword: usize| {
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; \
             _vigil vigil \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = Command::new("bash").args(["-c", &probe]).output().expect("bash runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let subcommands = ask("vigil ''", 1);
    for sub in ["agent", "members", "keys", "lab", "sim", "completions", "man"] {
        assert!(subcommands.lines().any(|l| l == sub), "{sub} not offered: {subcommands}");
    }
    let flags = ask("vigil agent --jo", 2);
    assert_eq!(flags.trim(), "--join", "{flags}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = vigil(&["completions", shell]);
        assert!(o.status.success() && o.stdout.len() > 1000, "{shell}: {}", text(&o.stderr));
    }
    let o = vigil(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("'tcsh'"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_manual_has_a_page_per_command_written_whole() {
    let o = vigil(&["man"]);
    assert!(o.status.success());
    let top = text(&o.stdout);
    assert!(top.contains(".TH vigil 1") && top.contains("agent"), "{}", &top[..top.len().min(400)]);

    let dir = tempdir("man");
    let o = vigil(&["man", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut pages: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    for page in ["vigil.1", "vigil-agent.1", "vigil-keys-install.1", "vigil-lab-run.1", "vigil-sim-run.1"] {
        assert!(pages.iter().any(|p| p == page), "{page} missing from {pages:?}");
    }
    assert!(pages.iter().all(|p| p.ends_with(".1")), "a partial file was left: {pages:?}");
    let agent = std::fs::read_to_string(dir.join("vigil-agent.1")).unwrap();
    assert!(agent.contains("\\-\\-join") && agent.contains("\\-\\-data\\-dir"), "{agent}");

    // A file where the directory should be: refused, named, nothing written.
    let file = dir.join("vigil.1");
    let o = vigil(&["man", "--out", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("not a directory") && text(&o.stderr).contains("vigil.1"), "{}", text(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vigil-install-cli-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
