//! The exit statuses a batch scheduler's job script relies on (`scripts/slurm/bake.sbatch`
//! requeues on 75), checked without a scheduler: a signal makes `surge run` finish its frame,
//! write that frame's checkpoint and exit with the status README's "Command line" documents.

mod common;

use common::SURGE;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The newest particle frame of a run folder, if any.
fn newest_frame(out: &Path) -> Option<u32> {
    std::fs::read_dir(out.join("particles"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("frame_")?
                .strip_suffix(".bin")?
                .parse()
                .ok()
        })
        .max()
}

/// The exit contract `bake.sbatch` relies on, without SLURM: SIGTERM (even twice, as a job
/// script forwarding the scheduler's signal and the scheduler itself both send it) finishes the
/// frame, writes its checkpoint and exits 75; Ctrl-C (SIGINT) does the same with 130. The run
/// writes no scheduled checkpoint before frame 1000 (`--checkpoint-every 1000`), so the one
/// found can only be the signal's.
#[test]
fn sigterm_exits_75_with_a_checkpoint_and_sigint_130() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tiny.json");
    for (signals, code, says) in [
        (
            &["-TERM", "-TERM"][..],
            75,
            "stopped by SIGTERM after frame",
        ),
        (&["-INT"][..], 130, "interrupted after frame"),
    ] {
        let name = format!("s{code}");
        let out = dir.path().join(&name);
        let child = Command::new(SURGE)
            .current_dir(dir.path())
            .args([
                "run",
                tiny.to_str().unwrap(),
                "-o",
                &name,
                "--frames",
                "400",
                "--checkpoint-every",
                "1000",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let probe = out.join("particles/frame_0003.bin");
        let t = Instant::now();
        while !probe.exists() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        for s in signals {
            let sent = Command::new("kill")
                .args([*s, child.id().to_string().as_str()])
                .status()
                .unwrap();
            assert!(sent.success());
        }
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{signals:?}: {err}");
        assert!(err.contains(says) && err.contains("surge resume"), "{err}");
        // The checkpoint of the last frame written is there.
        let last = newest_frame(&out).unwrap();
        assert!(last < 400, "{err}");
        assert!(
            out.join(format!("checkpoints/checkpoint_{last:04}.bin"))
                .is_file(),
            "{signals:?}: no checkpoint of frame {last}: {err}"
        );
    }
}
