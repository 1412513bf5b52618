//! `surge mesh` and the PLY files: frame splitting, flags, errors, independent PLY readers.

use std::path::Path;
use std::process::Command;
use surge::output::{RunLayout, frame::ParticleFrame};
use surge::scene::Scene;
use surge::sim::Simulation;

mod common;
use common::venv_python;

const FRAMES: u32 = 9;

fn dam_break() -> Scene {
    serde_json::from_str(
        r#"{"name": "dam", "domain": {"lower": [0, 0, 0], "cell_size": 0.05, "resolution": [20, 8, 14]},
            "sources": [{"type": "box", "min": [0, 0, 0], "max": [0.35, 0.4, 0.45]}],
            "time": {"fps": 30, "frames": 9}}"#,
    )
    .unwrap()
}

/// A run folder with scene.json and particle frames 0..=9; frame 9 has no particles.
fn make_run(root: &Path) -> Scene {
    let s = dam_break();
    common::write_run(root, &s, FRAMES, FRAMES);
    s
}

fn surge(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_surge"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) {
    let o = surge(args);
    assert!(
        o.status.success(),
        "surge {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn meshes(root: &Path) -> Vec<Vec<u8>> {
    let l = RunLayout::new(root);
    (0..=FRAMES)
        .map(|f| std::fs::read(l.mesh(f)).unwrap())
        .collect()
}

#[test]
fn split_frames_give_the_same_bytes_as_one_run() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    make_run(a.path());
    make_run(b.path());
    let (pa, pb) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    ok(&["mesh", pa, "-q"]);
    ok(&["mesh", pb, "--frames", "0..4", "-q"]);
    ok(&["mesh", pb, "--frames", "5..9", "-q"]);
    let (ma, mb) = (meshes(a.path()), meshes(b.path()));
    assert_eq!(ma, mb);
    // Idempotent re-run of one frame.
    ok(&["mesh", pb, "--frames", "3", "-q"]);
    assert_eq!(ma, meshes(b.path()));
    // Non-empty frames, and the empty last frame is a valid empty PLY.
    for (f, bytes) in ma.iter().enumerate() {
        let (v, t) = surge::output::ply::header_counts(bytes).unwrap();
        if f as u32 == FRAMES {
            assert_eq!((v, t), (0, 0));
        } else {
            assert!(v > 100 && t > 100, "frame {f}: {v} vertices {t} faces");
        }
    }
}

#[test]
fn flags_override_for_this_invocation_only_and_errors_name_the_fix() {
    let d = tempfile::tempdir().unwrap();
    make_run(d.path());
    let p = d.path().to_str().unwrap();
    let scene_before = std::fs::read(RunLayout::new(d.path()).scene()).unwrap();
    ok(&["mesh", p, "--frames", "0", "-q"]);
    let fine = std::fs::read(RunLayout::new(d.path()).mesh(0)).unwrap();
    ok(&[
        "mesh",
        p,
        "--frames",
        "0",
        "-q",
        "--cell-size-factor",
        "1",
        "--method",
        "spheres",
        "--smoothing-iterations",
        "0",
    ]);
    let coarse = std::fs::read(RunLayout::new(d.path()).mesh(0)).unwrap();
    let (tf, tc) = (
        surge::output::ply::header_counts(&fine).unwrap().1,
        surge::output::ply::header_counts(&coarse).unwrap().1,
    );
    assert!(
        tc * 2 < tf,
        "coarser cells should give far fewer triangles: {tc} vs {tf}"
    );
    assert_eq!(
        scene_before,
        std::fs::read(RunLayout::new(d.path()).scene()).unwrap()
    );

    let err = |args: &[&str]| {
        let o = surge(args);
        assert!(!o.status.success(), "surge {args:?} should fail");
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let e = err(&["mesh", p, "--frames", "8..12"]);
    assert!(e.contains("frame_0010.bin") && e.contains("0..9"), "{e}");
    let e = err(&["mesh", p, "--cell-size-factor=-2"]);
    assert!(e.contains("surface.cell_size_factor"), "{e}");
    // Used to abort on a 6 GB allocation.
    let e = err(&["mesh", p, "--cell-size-factor", "0.001", "--frames", "1"]);
    assert!(
        e.contains("surface.cell_size_factor is 0.001") && e.contains("fix:"),
        "{e}"
    );
    let e = err(&["mesh", p, "--particle-radius", "-1"]);
    assert!(e.contains("surface.particle_radius is -1"), "{e}");
    let e = err(&["mesh", p, "--method", "blobs"]);
    assert!(e.contains("zhu_bridson"), "{e}");
    let e = err(&["mesh", "/nonexistent/surge-run"]);
    assert!(e.contains("scene.json"), "{e}");
}

fn frame_bytes(f: u32) -> (Vec<u8>, surge::mesh::TriMesh) {
    let s = dam_break();
    let mut sim = Simulation::new(&s, surge::sources::seed_particles(&s, &[]), 0).unwrap();
    for _ in 0..f {
        sim.advance_frame();
    }
    let mesh = surge::surface::reconstruct(sim.particles(), &s.surface, &s.domain);
    let pf = ParticleFrame {
        frame: f,
        time: s.frame_time(f),
        particles: sim.particles().clone(),
    };
    (surge::run::frame_ply_bytes(&pf, &s).unwrap(), mesh)
}

#[test]
fn ply_reads_back_with_ply_rs_bw() {
    use ply_rs_bw::{parser::Parser, ply::DefaultElement, ply::Property};
    let (bytes, mesh) = frame_bytes(2);
    let ply = Parser::<DefaultElement>::new()
        .read_ply(&mut &bytes[..])
        .unwrap();
    assert!(
        ply.header.comments.iter().any(|c| c == "frame 2"),
        "{:?}",
        ply.header.comments
    );
    assert!(
        ply.header
            .comments
            .iter()
            .any(|c| c == &format!("time {:?}", dam_break().frame_time(2)))
    );
    let verts = &ply.payload["vertex"];
    let faces = &ply.payload["face"];
    assert_eq!(verts.len(), mesh.positions.len());
    assert_eq!(faces.len(), mesh.triangles.len());
    let f = |e: &DefaultElement, k: &str| match e[k] {
        Property::Float(v) => v,
        ref p => panic!("{k}: {p:?}"),
    };
    for (i, v) in verts.iter().enumerate() {
        assert_eq!([f(v, "x"), f(v, "y"), f(v, "z")], mesh.positions[i]);
        assert_eq!([f(v, "nx"), f(v, "ny"), f(v, "nz")], mesh.normals[i]);
        assert_eq!([f(v, "vx"), f(v, "vy"), f(v, "vz")], mesh.velocities[i]);
    }
    for (i, t) in faces.iter().enumerate() {
        match &t["vertex_indices"] {
            Property::ListUInt(l) => assert_eq!(l.as_slice(), &mesh.triangles[i][..]),
            p => panic!("{p:?}"),
        }
    }
    let empty = surge::output::ply::encode(&Default::default(), 0, 0.0);
    let ply = Parser::<DefaultElement>::new()
        .read_ply(&mut &empty[..])
        .unwrap();
    assert_eq!(ply.header.elements["vertex"].count, 0);
}

#[test]
fn ply_reads_back_with_python_plyfile() {
    let Some(py) = venv_python() else { return };
    let d = tempfile::tempdir().unwrap();
    let (bytes, mesh) = frame_bytes(4);
    let path = d.path().join("m.ply");
    std::fs::write(&path, &bytes).unwrap();
    let empty = d.path().join("e.ply");
    std::fs::write(
        &empty,
        surge::output::ply::encode(&Default::default(), 9, 0.3),
    )
    .unwrap();
    let script = r#"
import sys, plyfile
p = plyfile.PlyData.read(sys.argv[1])
v, f = p["vertex"], p["face"]
s = [sum(float(x) for x in v[k]) for k in ("x", "y", "z", "nx", "ny", "nz", "vx", "vy", "vz")]
tri = f["vertex_indices"]
assert all(len(t) == 3 for t in tri)
print(len(v.data), len(f.data), " ".join(repr(x) for x in s), sum(int(t[0]) + 2 * int(t[1]) + 3 * int(t[2]) for t in tri))
print(" ".join(p.comments))
e = plyfile.PlyData.read(sys.argv[2])
print(len(e["vertex"].data), len(e["face"].data))
"#;
    let o = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .arg(&empty)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let w: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!(w[0].parse::<usize>().unwrap(), mesh.positions.len());
    assert_eq!(w[1].parse::<usize>().unwrap(), mesh.triangles.len());
    let cols: [Vec<[f32; 3]>; 3] = [
        mesh.positions.clone(),
        mesh.normals.clone(),
        mesh.velocities.clone(),
    ];
    for k in 0..9 {
        let expect: f64 = cols[k / 3].iter().map(|v| v[k % 3] as f64).sum();
        let got: f64 = w[2 + k].parse().unwrap();
        assert!(
            (got - expect).abs() <= 1e-6 * (1.0 + expect.abs()),
            "column {k}: {got} vs {expect}"
        );
    }
    let idx: u64 = mesh
        .triangles
        .iter()
        .map(|t| t[0] as u64 + 2 * t[1] as u64 + 3 * t[2] as u64)
        .sum();
    assert_eq!(w[11].parse::<u64>().unwrap(), idx);
    assert!(lines[1].contains("frame 4"), "{}", lines[1]);
    assert_eq!(lines[2], "0 0");
}

#[test]
fn a_run_without_particle_frames_says_why() {
    let d = tempfile::tempdir().unwrap();
    let mut s = dam_break();
    s.output.particles = false;
    let layout = RunLayout::new(d.path());
    surge::output::atomic_write(
        &layout.scene(),
        serde_json::to_string_pretty(&s).unwrap().as_bytes(),
    )
    .unwrap();
    let p = d.path().to_str().unwrap();
    for cmd in ["mesh", "preview"] {
        let o = surge(&[cmd, p]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains("output.particles: false") && e.contains("\n  fix: re-run"),
            "{cmd}: {e}"
        );
    }
}
