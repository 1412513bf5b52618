//! `scripts/slurm/bake.sbatch` as a plain script (no SLURM needed; the cluster tests are in
//! `tests/slurm.rs`): a retry of a bake, which runs `surge resume`, keeps the flags of the
//! first start that `surge resume` takes.

mod common;

use std::path::Path;
use std::process::Command;

/// A bake submitted with `--ignore-disk-check` on a disk that reports no free space, stopped
/// after its scene was written (as a preemption during start-up would), then started again:
/// the retry resumes with the same flag and finishes. Before, the retry ran `surge resume OUT`
/// without the run's flags, and its disk check refused the run, so the requeued job failed.
/// Also: retrying a finished bake leaves it as it is, whatever the disk reports.
#[test]
fn a_retried_bake_keeps_its_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scene = repo.join("scenes/tiny.json");
    let bake = |kill: Option<&str>, flags: &[&str]| {
        let mut c = Command::new("bash");
        c.arg(repo.join("scripts/slurm/bake.sbatch"))
            .arg(&scene)
            .arg("out")
            .args(flags)
            .current_dir(d)
            .env("SURGE", env!("CARGO_BIN_EXE_surge"))
            .env("SURGE_TEST_FREE_BYTES", "1")
            .env_remove("SLURM_JOB_ID")
            .env_remove("SLURM_RESTART_COUNT");
        if let Some(k) = kill {
            c.env("SURGE_TEST_KILL_AT", k);
        }
        let o = c.output().unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        (o.status.code(), text)
    };
    let flags = ["--frames", "2", "--ignore-disk-check", "-q"];
    let (code, text) = bake(Some("after-scene"), &flags);
    assert_ne!(code, Some(0), "the hook must stop the first start: {text}");
    assert!(d.join("out/scene.json").is_file(), "{text}");
    let (code, text) = bake(None, &flags);
    assert_eq!(code, Some(0), "the retry: {text}");
    assert!(text.contains("surge resume out"), "{text}");
    assert!(d.join("out/particles/frame_0002.bin").is_file(), "{text}");
    common::assert_all_whole(&d.join("out"));
    // Finished: a retry without the flag changes nothing and is not refused.
    let (code, text) = bake(None, &["--frames", "2", "-q"]);
    assert_eq!(code, Some(0), "retry of a finished bake: {text}");
}
