//! Unit tests of the checkpoint format (round trip, corruption, refused old formats).

use super::*;

/// A resolved scene's JSON as `surge run` writes it (defaults filled in).
fn scene() -> Value {
    serde_json::from_str(
        r#"{"name": "t", "domain": {"lower": [0,0,0], "cell_size": 0.1, "resolution": [5,5,5]},
            "gravity": [0.0, 0.0, -9.80665], "density": 1000.0,
            "sources": [{"type": "box", "min": [0.1,0.1,0.1], "max": [0.3,0.3,0.3]}],
            "seed": 0, "time": {"fps": 30.0, "frames": 90},
            "solver": {"flip_ratio": 0.95}, "surface": {}, "render": {},
            "output": {"previews": true}}"#,
    )
    .unwrap()
}

#[test]
fn round_trip_and_corruption() {
    let s = scene();
    let mut p = Particles::default();
    p.push([0.1, 0.2, 0.3], [1.0, -2.0, 3.5]);
    p.push([0.15, 0.25, 0.35], [0.0, 0.0, -9.5]);
    let last = 1.0 / 30.0 / 7.0;
    let bytes = encode(
        &SceneRecord::new(s.clone(), 0, 2),
        4,
        [4.0 / 30.0, last],
        &p,
    );
    let c = decode(&bytes).unwrap();
    assert_eq!(c.particles, p);
    assert_eq!(c.meta.frame, 4);
    assert_eq!(c.meta.last_substep.to_bits(), last.to_bits());
    assert_eq!(c.meta.scene_hash, scene_hash(&s));
    for cut in [0, 10, 20, bytes.len() / 2, bytes.len() - 1] {
        let e = decode(&bytes[..cut]).unwrap_err();
        assert!(e.contains("truncated"), "{cut}: {e}");
    }
    for pos in [30, bytes.len() - 5] {
        let mut b = bytes.clone();
        b[pos] ^= 0x10;
        let e = decode(&b).unwrap_err();
        assert!(e.contains("checksum"), "{pos}: {e}");
    }
}

/// The pressure preconditioner is physics: a resume refuses a change of it (it is always
/// written into a run's scene, `sim::settings`: a checkpoint from before the default became
/// the multigrid, whose scene left it out, is refused rather than resumed with another solver).
#[test]
fn pressure_preconditioner_is_physics() {
    let a = scene();
    let mut b = a.clone();
    b["solver"]["pressure_preconditioner"] = "multigrid".into();
    assert_ne!(scene_hash(&a), scene_hash(&b));
    let d = diff(&physics_view(&a), &physics_view(&b));
    assert!(
        d.len() == 1
            && d[0].contains("solver.pressure_preconditioner")
            && d[0].contains("multigrid"),
        "{d:?}"
    );
}

/// The transfer is physics: a resume refuses a change of `solver.transfer`, naming it.
#[test]
fn transfer_is_physics() {
    let mut a = scene();
    a["solver"]["transfer"] = "flip".into();
    let mut b = a.clone();
    b["solver"]["transfer"] = "apic".into();
    assert_ne!(scene_hash(&a), scene_hash(&b));
    let d = diff(&physics_view(&a), &physics_view(&b));
    assert!(
        d.len() == 1 && d[0].contains("solver.transfer") && d[0].contains("apic"),
        "{d:?}"
    );
}

/// A checkpoint recorded before `solver.surface_wave_step` existed ran without that
/// substep bound: it reads as `0`, so a resume under a bound (0.47, the default until
/// session 8; 0.32 now) is refused by the scene comparison, naming the field, rather than
/// changing the substeps mid-run.
#[test]
fn checkpoint_from_before_the_surface_wave_bound_reads_as_unbounded() {
    let bytes = encode(
        &SceneRecord::new(scene(), 0, 2),
        4,
        [0.1, 0.004],
        &Particles::default(),
    );
    let c = decode(&bytes).unwrap();
    assert_eq!(c.meta.scene["solver"]["surface_wave_step"], 0.0);
    // Nor did it thin crowded cells.
    assert_eq!(c.meta.scene["solver"]["max_particles_per_cell"], 0);
    let mut now = c.meta.scene.clone();
    now["solver"]["surface_wave_step"] = 0.47.into();
    let d = diff(&physics_view(&c.meta.scene), &physics_view(&now));
    assert!(
        d.len() == 1 && d[0].contains("solver.surface_wave_step"),
        "{d:?}"
    );
    // A recorded value is kept as it is.
    let mut s = scene();
    s["solver"]["surface_wave_step"] = 0.47.into();
    let c = decode(&encode(
        &SceneRecord::new(s, 0, 2),
        4,
        [0.1, 0.004],
        &Particles::default(),
    ));
    assert_eq!(c.unwrap().meta.scene["solver"]["surface_wave_step"], 0.47);
}

/// A checkpoint carries APIC's affine matrices (`AFFN`) and reads them back; an APIC
/// checkpoint without them is refused; an unknown newer version is refused.
#[test]
fn affine_section_and_unknown_version() {
    let mut s = scene();
    s["solver"]["transfer"] = "apic".into();
    let mut p = Particles::default();
    p.push([0.1, 0.2, 0.3], [1.0, -2.0, 3.5]);
    p.push([0.15, 0.25, 0.35], [0.0, 0.0, -9.5]);
    p.affine = std::array::from_fn(|k| vec![k as f32, -0.5 * k as f32]);
    let bytes = encode(&SceneRecord::new(s.clone(), 0, 2), 4, [0.1, 0.004], &p);
    assert_eq!(decode(&bytes).unwrap().particles, p);
    let mut flat = p.clone();
    flat.affine = Default::default();
    let e = decode(&encode(&SceneRecord::new(s, 0, 2), 4, [0.1, 0.004], &flat)).unwrap_err();
    assert!(e.contains("AFFN") && e.contains("apic"), "{e}");
    let mut newer = encode(&SceneRecord::new(scene(), 0, 2), 4, [0.1, 0.004], &flat);
    newer[8..12].copy_from_slice(&4u32.to_le_bytes());
    assert!(decode(&newer).unwrap_err().contains("version 4"));
}

/// A checkpoint written before the leapfrog integrator (formats 1 and 2) holds symplectic
/// Euler's velocities and no last substep length: it is refused, saying why and to rerun
/// from frame 0, never resumed with mismatched velocities. `surge resume` reports the
/// refusal with the file's path (`run::resume`, "checkpoint PATH is unusable (...)").
#[test]
fn checkpoint_from_before_the_leapfrog_integrator_is_refused() {
    let mut p = Particles::default();
    p.push([0.1, 0.2, 0.3], [1.0, -2.0, 3.5]);
    let mut bytes = encode(&SceneRecord::new(scene(), 0, 2), 4, [0.1, 0.004], &p);
    assert!(decode(&bytes).is_ok());
    for v in [1u32, 2] {
        bytes[8..12].copy_from_slice(&v.to_le_bytes());
        let e = decode(&bytes).unwrap_err();
        assert!(
            e.contains(&format!("version {v}"))
                && e.contains("before the leapfrog integrator")
                && e.contains("rerun the scene from frame 0"),
            "{e}"
        );
    }
    // Read from a file, the refusal is the same.
    let dir = std::env::temp_dir().join(format!("surge_ckpt_leapfrog_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("checkpoint_0004.bin");
    std::fs::write(&f, &bytes).unwrap();
    assert!(read(&f).unwrap_err().contains("leapfrog"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn physics_diff_ignores_output_fields() {
    let a = scene();
    let mut b = a.clone();
    b["time"]["frames"] = 500.into();
    b["output"]["previews"] = false.into();
    assert_eq!(scene_hash(&a), scene_hash(&b));
    b["solver"]["flip_ratio"] = 0.5.into();
    assert_ne!(scene_hash(&a), scene_hash(&b));
    let va = physics_view(&a);
    let vb = physics_view(&b);
    let d = diff(&va, &vb);
    assert_eq!(d.len(), 1);
    assert!(
        d[0].contains("solver.flip_ratio") && d[0].contains("0.5"),
        "{d:?}"
    );
}
