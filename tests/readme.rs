//! The README is the user's manual: every long flag of every command is in it.

use clap::CommandFactory;

fn longs(cmd: &clap::Command, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long() {
            out.push(format!("--{long}"));
        }
    }
    for sub in cmd.get_subcommands() {
        longs(sub, out);
    }
}

#[test]
fn the_readme_mentions_every_long_flag() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut flags = Vec::new();
    longs(&versus::cli::Cli::command(), &mut flags);
    assert!(flags.len() > 20);
    let missing: Vec<_> = flags
        .iter()
        .filter(|f| !readme.contains(f.as_str()))
        .collect();
    assert!(missing.is_empty(), "README.md does not mention {missing:?}");
}

#[test]
fn the_readme_names_every_exit_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for code in ["| 0 |", "| 1 |", "| 2 |", "| 130 |"] {
        assert!(readme.contains(code), "exit code row {code} missing");
    }
}
