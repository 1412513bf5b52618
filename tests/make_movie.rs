//! README claim about `scripts/make_movie.sh`: the encoder's command line and the message
//! when ffmpeg is missing.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README, `scripts/make_movie.sh OUT [FPS]`: encodes `OUT/previews` into `OUT/preview.mp4`
/// (H.264, yuv420p) and `OUT/preview.gif` (480 px wide, 15 fps) at the scene's `time.fps`
/// unless FPS is given, and says so when ffmpeg is missing. ffmpeg itself is replaced by a
/// stand-in on PATH that records its arguments (CI has no ffmpeg; what is tested is the
/// script's use of it).
#[test]
fn make_movie_calls_ffmpeg_with_the_scenes_rate_and_names_a_missing_ffmpeg() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("run");
    std::fs::create_dir_all(out.join("previews")).unwrap();
    std::fs::write(
        out.join("scene.json"),
        r#"{"time": {"fps": 24, "frames": 4}}"#,
    )
    .unwrap();
    for f in 2..=4 {
        std::fs::write(out.join(format!("previews/frame_{f:04}.png")), b"png").unwrap();
    }
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = d.join("ffmpeg.log");
    let fake = bin.join("ffmpeg");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nfor a; do last=$a; done\n: > \"$last\"\n",
            log.display()
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let script = root().join("scripts/make_movie.sh");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let which = |prog: &str| -> String {
        let o = Command::new("sh")
            .args(["-c", &format!("command -v {prog}")])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let bash = which("bash");
    let run = |args: &[&str], path: &str| {
        Command::new(&bash)
            .arg(&script)
            .args(args)
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let o = run(&[out.to_str().unwrap()], &path);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let o_ = out.display();
    for c in &calls {
        assert!(c.contains("-framerate 24 -start_number 2"), "{c}");
        assert!(
            c.contains(&format!("-i {o_}/previews/frame_%04d.png")),
            "{c}"
        );
    }
    assert!(calls[0].contains("-c:v libx264") && calls[0].contains("-pix_fmt yuv420p"));
    assert!(
        calls[0].ends_with(&format!("{o_}/preview.mp4")),
        "{}",
        calls[0]
    );
    assert!(calls[1].contains("fps=15,scale=480:-1"), "{}", calls[1]);
    assert!(
        calls[1].ends_with(&format!("{o_}/preview.gif")),
        "{}",
        calls[1]
    );
    // FPS given: it wins over the scene's.
    std::fs::remove_file(&log).unwrap();
    let o = run(&[out.to_str().unwrap(), "12"], &path);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("-framerate 12 ").count(), 2, "{calls}");
    // A gap in the previews: refused, naming the missing one (ffmpeg would stop the movie at it).
    std::fs::write(out.join("previews/frame_0006.png"), b"png").unwrap();
    std::fs::remove_file(&log).unwrap();
    let o = run(&[out.to_str().unwrap()], &path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("frame_0005.png") && err.contains("surge preview") && !log.exists(),
        "{err}"
    );
    std::fs::remove_file(out.join("previews/frame_0006.png")).unwrap();
    // No ffmpeg on PATH: an error naming it and how to install it.
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::os::unix::fs::symlink(which("cat"), empty.join("cat")).unwrap();
    let o = run(&[out.to_str().unwrap()], empty.to_str().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ffmpeg is not installed") && err.contains("sudo apt-get install ffmpeg"),
        "{err}"
    );
}
