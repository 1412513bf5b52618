//! Unit tests of [`super`] (kept beside it to hold the file under 600 lines).
use super::*;
use crate::geometry::mesh_io::IndexedMesh;
use crate::geometry::mesh_io::test_meshes::{cuboid, icosphere};

const R: f64 = 0.3;
const H: f64 = 0.03;
const C: [f64; 3] = [0.013, -0.007, 0.021];

fn grid() -> GridSpec {
    GridSpec {
        origin: [-0.48; 3],
        spacing: H,
        dims: [33, 33, 33],
    }
}

fn analytic(p: [f64; 3]) -> f64 {
    let d = [0, 1, 2].map(|a| p[a] - C[a]);
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() - R
}

/// Level 5: 20,480 triangles, edges about a third of a cell, so the polyhedron is within
/// about 0.003 cells of the sphere: below the 1% tolerance.
fn sphere() -> IndexedMesh {
    icosphere(C, R, 5)
}

/// Direction of the hole: not along an axis, and on the low side of every axis so the
/// lower-end parity fallback would be wrong there.
const HOLE: [f64; 3] = [-0.267, -0.535, -0.802];

fn with_hole(mut m: IndexedMesh, angle: f64) -> IndexedMesh {
    let p = m.positions.clone();
    m.triangles.retain(|t| {
        let c = [0, 1, 2].map(|a| t.iter().map(|&i| p[i as usize][a]).sum::<f64>() / 3.0 - C[a]);
        let l = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
        (c[0] * HOLE[0] + c[1] * HOLE[1] + c[2] * HOLE[2]) / l < angle.cos()
    });
    m
}

/// Checks the sign at every node farther than one cell from the sphere, and the distance
/// within `tol` cells at nodes within 2 cells (inside the 3-cell band) where `near(p)`.
/// Returns (worst distance error in cells, nodes checked for distance).
fn check(sdf: &GridSdf, tol: f64, near: impl Fn([f64; 3]) -> bool) -> (f64, usize) {
    let g = sdf.grid;
    let mut worst: f64 = 0.0;
    let mut n = 0;
    for k in 0..g.dims[2] {
        for j in 0..g.dims[1] {
            for i in 0..g.dims[0] {
                let p = g.point(i, j, k);
                let (want, got) = (analytic(p), sdf.at(i, j, k) as f64);
                if want.abs() > H {
                    assert_eq!(want < 0.0, got < 0.0, "sign at {p:?}: {want} vs {got}");
                }
                if want.abs() < 2.0 * H && near(p) {
                    let e = (got - want).abs() / H;
                    assert!(e < tol, "distance at {p:?}: {got} vs {want} ({e} cells)");
                    worst = worst.max(e);
                    n += 1;
                }
                if want.abs() > 3.5 * H {
                    assert_eq!(got.abs(), (3.0 * H) as f32 as f64, "clamped at {p:?}");
                }
            }
        }
    }
    (worst, n)
}

#[test]
fn closed_sphere_sign_and_distance() {
    let m = sphere();
    let sdf = mesh_sdf(&Bvh::build(&m.positions, &m.triangles), &grid(), 3.0);
    let (worst, n) = check(&sdf, 0.01, |_| true);
    assert!(n > 3000, "{n}");
    eprintln!("closed sphere: worst distance error {worst:.5} cells over {n} nodes");
}

#[test]
fn sphere_with_half_its_triangles_flipped() {
    let mut m = sphere();
    for t in m.triangles.iter_mut().step_by(2) {
        t.swap(1, 2);
    }
    let sdf = mesh_sdf(&Bvh::build(&m.positions, &m.triangles), &grid(), 3.0);
    let (worst, n) = check(&sdf, 0.01, |_| true);
    eprintln!("flipped sphere: worst distance error {worst:.5} cells over {n} nodes");
}

#[test]
fn sphere_with_a_hole() {
    // A hole 4 cells in radius: nodes up to 1.8 cells under it have all three grid lines
    // through the hole (the votes tie), so they need the winding-number tie break; the
    // lower-end parity alone fails this test (tried).
    let angle = 4.0 * H / R;
    let m = with_hole(sphere(), angle);
    let bvh = Bvh::build(&m.positions, &m.triangles);
    let sdf = mesh_sdf(&bvh, &grid(), 3.0);
    // Distances are checked away from the hole (its rim changes the nearest surface).
    let far = |p: [f64; 3]| {
        let d = [0, 1, 2].map(|a| p[a] - C[a]);
        let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        (d[0] * HOLE[0] + d[1] * HOLE[1] + d[2] * HOLE[2]) / l < (angle + 4.0 * H / R).cos()
    };
    let (worst, n) = check(&sdf, 0.01, far);
    eprintln!("holed sphere: worst distance error {worst:.5} cells over {n} nodes");
}

#[test]
fn axis_aligned_cube_with_lines_through_its_edges_and_corners() {
    // Grid lines hit the cube's edges and corners exactly: the tie-breaking rule must
    // count each line once, or whole rows flip sign.
    let m = cuboid([0.0; 3], [1.0; 3]);
    let g = GridSpec {
        origin: [-0.5; 3],
        spacing: 0.25,
        dims: [9, 9, 9],
    };
    let sdf = mesh_sdf(&Bvh::build(&m.positions, &m.triangles), &g, 2.0);
    for k in 0..9 {
        for j in 0..9 {
            for i in 0..9 {
                let p = g.point(i, j, k);
                let out = (0..3)
                    .map(|a| (-p[a]).max(p[a] - 1.0))
                    .fold(f64::MIN, f64::max);
                let got = sdf.at(i, j, k) as f64;
                if out < 0.0 {
                    assert!(
                        got < 0.0 && (got - out).abs() < 1e-6,
                        "{p:?}: {got} vs {out}"
                    );
                } else if out > 0.0 {
                    assert!(got > 0.0, "{p:?}: {got}");
                } else {
                    assert_eq!(got.abs(), 0.0);
                }
            }
        }
    }
}

#[test]
fn any_thread_count_and_either_band_method_give_the_same_values() {
    let m = with_hole(sphere(), 0.2);
    let bvh = Bvh::build(&m.positions, &m.triangles);
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| mesh_sdf(&bvh, &grid(), 3.0))
    };
    let (a, b) = (run(1), run(3));
    assert!(
        a.values
            .iter()
            .zip(&b.values)
            .all(|(x, y)| x.to_bits() == y.to_bits())
    );
}

#[test]
fn trilinear_sample_and_gradient_of_a_plane_are_exact() {
    let g = GridSpec {
        origin: [0.0; 3],
        spacing: 0.5,
        dims: [4, 5, 6],
    };
    let f = |p: [f64; 3]| 0.3 * p[0] - 0.2 * p[1] + 0.1 * p[2] - 0.05;
    let mut values = vec![0f32; g.len()];
    for k in 0..6 {
        for j in 0..5 {
            for i in 0..4 {
                values[g.index(i, j, k)] = f(g.point(i, j, k)) as f32;
            }
        }
    }
    let s = GridSdf {
        grid: g,
        band: 1.0,
        values,
    };
    let (v, grad) = s.sample([0.7, 1.1, 2.3]);
    assert!((v - f([0.7, 1.1, 2.3])).abs() < 1e-6, "{v}");
    for (a, w) in grad.iter().zip([0.3, -0.2, 0.1]) {
        assert!((a - w).abs() < 1e-6, "{grad:?}");
    }
    // Outside: value at the clamped point plus the distance out.
    let (v, grad) = s.sample([-2.0, 1.0, 1.0]);
    assert!((v - (f([0.0, 1.0, 1.0]) + 2.0)).abs() < 1e-6 && grad == [-1.0, 0.0, 0.0]);
}

/// Signed distance of the glass material (a CSG of two capped cylinders): exact sign, and a
/// magnitude that never exceeds the true distance.
fn glass_csg(p: [f64; 3]) -> f64 {
    let cyl = |r: f64, z0: f64, z1: f64| {
        let rho = (p[0] * p[0] + p[1] * p[1]).sqrt();
        let dr = rho - r;
        let dz = (z0 - p[2]).max(p[2] - z1);
        let o = (dr.max(0.0).powi(2) + dz.max(0.0).powi(2)).sqrt();
        o + dr.max(dz).min(0.0)
    };
    // Outer cup minus the cavity (open at the top: extend it past the rim).
    cyl(0.08, 0.0, 0.15).max(-cyl(0.07, 0.01, 1.0))
}

#[test]
fn shipped_glass_has_the_right_sign_everywhere_off_its_surface() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("inputs/glass.obj");
    let m = crate::geometry::mesh_io::read_mesh(&path).unwrap();
    let bvh = Bvh::build(&m.positions, &m.triangles);
    // At the wall thickness (one cell) and at 2.5 cells per wall.
    for h in [0.01, 0.004] {
        let n = (0.2 / h) as usize + 1;
        let g = GridSpec {
            origin: [-0.1 + 0.3 * h, -0.1 + 0.1 * h, -0.02 + 0.2 * h],
            spacing: h,
            dims: [n, n, n],
        };
        let sdf = mesh_sdf(&bvh, &g, 3.0);
        let mut checked = [0usize; 2];
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    let p = g.point(i, j, k);
                    let want = glass_csg(p);
                    if want.abs() > h {
                        let got = sdf.at(i, j, k);
                        assert_eq!(got < 0.0, want < 0.0, "h {h} at {p:?}: {got} vs {want}");
                        checked[(want < 0.0) as usize] += 1;
                    }
                }
            }
        }
        assert!(
            checked[0] > 1000 && (h > 0.005 || checked[1] > 100),
            "{checked:?}"
        );
    }
}
