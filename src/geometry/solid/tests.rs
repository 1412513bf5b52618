//! Unit tests of [`super`] (kept beside it to hold the file under 600 lines).
use super::*;
use crate::geometry::mesh_io::test_meshes::icosphere;
use crate::geometry::transform::Keyframe;

fn fixed(translate: [f64; 3], rotate: [f64; 3]) -> Motion {
    Motion::Static(Pose::new(translate, rotate))
}

/// Deterministic points in a cube of half-width `r` around `c`.
fn points(n: usize, c: [f64; 3], r: f64) -> Vec<[f64; 3]> {
    let mut s = 12345u64;
    let mut u = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| [0, 1, 2].map(|a| c[a] + r * (2.0 * u() - 1.0)))
        .collect()
}

#[test]
fn rotated_box_distance_is_exact() {
    // A 2 x 1 x 1 box centred at the origin, rotated 30 degrees about z, moved to (5, 0, 0).
    let b = Solid::new(
        Shape::Box {
            min: [-1.0, -0.5, -0.5],
            max: [1.0, 0.5, 0.5],
        },
        [1.0; 3],
        fixed([5.0, 0.0, 0.0], [0.0, 0.0, 30.0]),
        Liquid::Outside,
    )
    .unwrap();
    let (c, s) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
    // 0.25 beyond the +x face centre, along the rotated x axis.
    let p = [5.0 + 1.25 * c, 1.25 * s, 0.0];
    assert!((b.signed_distance(p, 0.0) - 0.25).abs() < 1e-12);
    let (_, n) = b.distance_and_normal(p, 0.0);
    assert!((n[0] - c).abs() < 1e-12 && (n[1] - s).abs() < 1e-12);
    // Centre: 0.5 deep (nearest faces are the y and z ones).
    assert!((b.signed_distance([5.0, 0.0, 0.0], 0.0) + 0.5).abs() < 1e-12);
    // Beyond a corner: Euclidean distance to it.
    let corner = Pose::new([5.0, 0.0, 0.0], [0.0, 0.0, 30.0]).to_world([1.3, 0.9, 0.5]);
    assert!((b.signed_distance(corner, 0.0) - (0.09f64 + 0.16).sqrt()).abs() < 1e-12);
}

#[test]
fn box_with_per_axis_scale_is_exact() {
    let b = Solid::new(
        Shape::Box {
            min: [0.0; 3],
            max: [1.0; 3],
        },
        [2.0, 3.0, 4.0],
        fixed([0.0; 3], [0.0; 3]),
        Liquid::Outside,
    )
    .unwrap();
    assert!((b.signed_distance([2.5, 1.0, 1.0], 0.0) - 0.5).abs() < 1e-12);
    assert!((b.signed_distance([1.0, 1.5, 3.9], 0.0) + 0.1).abs() < 1e-12);
    assert_eq!(b.bounds(0.0), ([0.0; 3], [2.0, 3.0, 4.0]));
}

#[test]
fn cylinder_regions() {
    let c = Solid::new(
        Shape::Cylinder {
            a: [0.0, 0.0, 0.0],
            b: [0.0, 0.0, 2.0],
            radius: 1.0,
        },
        [1.0; 3],
        fixed([0.0; 3], [0.0; 3]),
        Liquid::Outside,
    )
    .unwrap();
    let d = |p| c.signed_distance(p, 0.0);
    assert!((d([0.0, 0.0, 3.0]) - 1.0).abs() < 1e-12, "above the cap");
    assert!((d([0.0, 2.0, 1.0]) - 1.0).abs() < 1e-12, "beside the wall");
    assert!(
        (d([0.0, 2.0, 3.0]) - 2f64.sqrt()).abs() < 1e-12,
        "past the rim"
    );
    assert!(
        (d([0.0, 0.3, 1.0]) + 0.7).abs() < 1e-12,
        "inside, nearest the wall"
    );
    assert!(
        (d([0.0, 0.0, 0.2]) + 0.2).abs() < 1e-12,
        "inside, nearest a cap"
    );
    assert!(
        (d([0.0, 0.0, 1.0]) + 1.0).abs() < 1e-12,
        "on the axis, middle"
    );
    // A tilted cylinder gives the same numbers in its own frame.
    let t = Solid::new(
        Shape::Cylinder {
            a: [1.0, 1.0, 1.0],
            b: [2.0, 2.0, 2.0],
            radius: 0.5,
        },
        [1.0; 3],
        fixed([0.0; 3], [0.0; 3]),
        Liquid::Outside,
    )
    .unwrap();
    let beyond = [2.0 + 0.3 / 3f64.sqrt(); 3];
    assert!((t.signed_distance(beyond, 0.0) - 0.3).abs() < 1e-12);
}

#[test]
fn gradients_match_finite_differences() {
    let shapes = [
        Shape::Box {
            min: [-0.3, -0.2, -0.1],
            max: [0.3, 0.2, 0.4],
        },
        Shape::Sphere {
            centre: [0.1, 0.0, 0.0],
            radius: 0.35,
        },
        Shape::Cylinder {
            a: [0.0, -0.3, 0.0],
            b: [0.1, 0.3, 0.05],
            radius: 0.2,
        },
    ];
    for (n, shape) in shapes.into_iter().enumerate() {
        for liquid in [Liquid::Outside, Liquid::Inside] {
            let s = Solid::new(
                shape.clone(),
                [1.5; 3],
                fixed([0.2, -0.1, 0.3], [20.0, -35.0, 50.0]),
                liquid,
            )
            .unwrap();
            let mut checked = 0;
            for p in points(300, [0.2, -0.1, 0.3], 1.0) {
                let (d, g) = s.distance_and_normal(p, 0.0);
                let e = 1e-6;
                let fd = [0, 1, 2].map(|a| {
                    let (mut hi, mut lo) = (p, p);
                    hi[a] += e;
                    lo[a] -= e;
                    (s.signed_distance(hi, 0.0) - s.signed_distance(lo, 0.0)) / (2.0 * e)
                });
                let len = (fd[0] * fd[0] + fd[1] * fd[1] + fd[2] * fd[2]).sqrt();
                // Skip the medial set (kinks), where the distance has no gradient.
                if (len - 1.0).abs() > 1e-4 || d.abs() < 1e-3 {
                    continue;
                }
                assert!(
                    (0..3).all(|a| (g[a] - fd[a]).abs() < 1e-4),
                    "shape {n} at {p:?}: {g:?} vs {fd:?}"
                );
                checked += 1;
            }
            assert!(checked > 200, "shape {n}: {checked}");
        }
    }
}

#[test]
fn container_negates_the_sign() {
    let shape = Shape::Sphere {
        centre: [0.0; 3],
        radius: 1.0,
    };
    let m = fixed([0.0; 3], [0.0; 3]);
    let out = Solid::new(shape.clone(), [1.0; 3], m.clone(), Liquid::Outside).unwrap();
    let inn = Solid::new(shape, [1.0; 3], m, Liquid::Inside).unwrap();
    for p in points(50, [0.0; 3], 2.0) {
        assert_eq!(out.signed_distance(p, 0.0), -inn.signed_distance(p, 0.0));
    }
    assert!(
        inn.signed_distance([0.0; 3], 0.0) > 0.0,
        "liquid side is positive"
    );
}

#[test]
fn per_axis_scaled_sphere_is_a_lower_bound_with_the_right_sign() {
    // An ellipsoid with semi-axes 0.5, 1, 1.5; compare with its densely sampled surface.
    let scale = [0.5, 1.0, 1.5];
    let s = Solid::new(
        Shape::Sphere {
            centre: [0.0; 3],
            radius: 1.0,
        },
        scale,
        fixed([0.0; 3], [0.0; 3]),
        Liquid::Outside,
    )
    .unwrap();
    let surf = icosphere([0.0; 3], 1.0, 5);
    let samples: Vec<[f64; 3]> = surf
        .positions
        .iter()
        .map(|p| [0, 1, 2].map(|a| p[a] * scale[a]))
        .collect();
    for p in points(200, [0.0; 3], 2.0) {
        let d = s.signed_distance(p, 0.0);
        let inside = (0..3).map(|a| (p[a] / scale[a]).powi(2)).sum::<f64>() < 1.0;
        let upper = samples
            .iter()
            .map(|q| (0..3).map(|a| (p[a] - q[a]).powi(2)).sum::<f64>().sqrt())
            .fold(f64::INFINITY, f64::min);
        assert_eq!(d < 0.0, inside, "{p:?}");
        assert!(d.abs() <= upper + 1e-9, "{p:?}: {d} vs {upper}");
    }
}

#[test]
fn mesh_solid_matches_the_analytic_sphere_and_moves_with_its_keys() {
    // A unit icosphere scaled by 0.3 (radius 0.3 = 10 cells of 0.03), keyframed.
    let h = 0.03;
    let shape = MeshShape::build(&icosphere([0.0; 3], 1.0, 5), [0.3; 3], h, 3.0).unwrap();
    let keys = vec![
        Keyframe {
            time: 0.0,
            translate: [0.0; 3],
            rotate_deg: [0.0; 3],
        },
        Keyframe {
            time: 1.0,
            translate: [0.5, 0.0, 0.0],
            rotate_deg: [0.0, 0.0, 90.0],
        },
    ];
    let motion = Motion::keyframed(keys).unwrap();
    let mesh = Solid::new(
        Shape::Mesh(Arc::new(shape)),
        [0.3; 3],
        motion.clone(),
        Liquid::Outside,
    )
    .unwrap();
    let ball = Solid::new(
        Shape::Sphere {
            centre: [0.0; 3],
            radius: 0.3,
        },
        [1.0; 3],
        motion,
        Liquid::Outside,
    )
    .unwrap();
    let mut worst: f64 = 0.0;
    for t in [0.0, 0.37, 1.0] {
        let c = ball.pose(t).translate;
        for p in points(2000, [c.x, c.y, c.z], 0.45) {
            let (want, got) = (ball.signed_distance(p, t), mesh.signed_distance(p, t));
            if want.abs() > h {
                assert_eq!(got < 0.0, want < 0.0, "{p:?} at {t}");
            }
            if want.abs() < 2.0 * h {
                worst = worst.max((got - want).abs() / h);
            }
            assert_eq!(mesh.velocity(p, t), ball.velocity(p, t));
        }
    }
    // Deeper than the band the mesh distance is exact (BVH) with a direction out; far outside
    // it is a lower bound of at least the band.
    let c = ball.pose(0.37).translate;
    let (d, n) = mesh.distance_and_normal([c.x + 0.05, c.y, c.z], 0.37);
    assert!((d + 0.25).abs() < 0.003 && n[0] > 0.99, "{d} {n:?}");
    let far = [c.x + 0.8, c.y + 0.1, c.z];
    let want = ball.signed_distance(far, 0.37);
    let got = mesh.signed_distance(far, 0.37);
    assert!(
        got >= 3.0 * h * 0.999 && got <= want + 1e-9,
        "{got} vs {want}"
    );
    // Between nodes the trilinear interpolant of the exact node distances of a sphere of
    // radius 10 cells is off by about h^2 / (8 R) per direction: a few hundredths of a cell.
    eprintln!("mesh vs analytic sphere within 2 cells of the surface: worst {worst:.4} cells");
    assert!(worst < 0.05, "{worst}");
}

#[test]
fn bad_shapes_are_refused() {
    let m = fixed([0.0; 3], [0.0; 3]);
    let new = |shape, scale| Solid::new(shape, scale, m.clone(), Liquid::Outside).unwrap_err();
    let e = new(
        Shape::Sphere {
            centre: [0.0; 3],
            radius: -1.0,
        },
        [1.0; 3],
    );
    assert_eq!(
        e,
        SolidError::NotPositive {
            field: "sphere radius",
            value: -1.0
        }
    );
    let e = new(
        Shape::Box {
            min: [0.0; 3],
            max: [1.0, 0.0, 1.0],
        },
        [1.0; 3],
    );
    assert!(matches!(e, SolidError::EmptyBox { .. }), "{e}");
    let e = new(
        Shape::Cylinder {
            a: [1.0; 3],
            b: [1.0; 3],
            radius: 1.0,
        },
        [1.0; 3],
    );
    assert!(matches!(e, SolidError::ZeroLengthCylinder(_)), "{e}");
    let e = new(
        Shape::Sphere {
            centre: [0.0; 3],
            radius: 1.0,
        },
        [1.0, 0.0, 1.0],
    );
    assert!(e.to_string().contains("scale = 0"), "{e}");
    let e = new(
        Shape::Sphere {
            centre: [f64::NAN; 3],
            radius: 1.0,
        },
        [1.0; 3],
    );
    assert!(matches!(e, SolidError::NotFinite { .. }));
    let big = MeshShape::build(&icosphere([0.0; 3], 1.0, 0), [1000.0; 3], 0.001, 3.0).unwrap_err();
    assert!(matches!(big, SolidError::MeshGridTooLarge { .. }), "{big}");
}

#[test]
fn distance_on_grid_is_the_minimum_over_solids_for_any_thread_count() {
    let m = Motion::keyframed(vec![
        Keyframe {
            time: 0.0,
            translate: [0.0; 3],
            rotate_deg: [0.0; 3],
        },
        Keyframe {
            time: 1.0,
            translate: [0.2, 0.0, 0.0],
            rotate_deg: [0.0, 0.0, 40.0],
        },
    ])
    .unwrap();
    let solids = vec![
        Solid::new(
            Shape::Sphere {
                centre: [0.0; 3],
                radius: 0.2,
            },
            [1.0; 3],
            m,
            Liquid::Outside,
        )
        .unwrap(),
        Solid::new(
            Shape::Box {
                min: [-0.5; 3],
                max: [0.5; 3],
            },
            [1.0; 3],
            fixed([0.0; 3], [0.0; 3]),
            Liquid::Inside,
        )
        .unwrap(),
    ];
    let g = GridSpec {
        origin: [-0.6; 3],
        spacing: 0.05,
        dims: [25, 24, 23],
    };
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| distance_on_grid(&solids, &g, 0.6))
    };
    let (a, b) = (run(1), run(4));
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    for (n, p) in [(0, 0, 0), (12, 12, 12), (20, 3, 7), (24, 23, 22)]
        .into_iter()
        .enumerate()
    {
        let q = g.point(p.0, p.1, p.2);
        let want = solids[0]
            .signed_distance(q, 0.6)
            .min(solids[1].signed_distance(q, 0.6));
        assert_eq!(a[g.index(p.0, p.1, p.2)], want as f32, "point {n}");
    }
    // The corner lies outside the container (solid), the centre region in the moving ball.
    assert!(a[0] < 0.0);
    assert!(
        distance_on_grid(&[], &g, 0.0)
            .iter()
            .all(|d| d.is_infinite())
    );
}

/// The signed distance to the nearest of `solids` (the minimum: a point is in solid if any
/// solid holds it) at the nodes of `grid` at time `t`, x fastest. Parallel over z-slabs, the
/// same for any thread count. With no solids every value is `+inf`. (The reference of the
/// test above.)
fn distance_on_grid(solids: &[Solid], grid: &GridSpec, t: f64) -> Vec<f32> {
    use rayon::prelude::*;
    let posed: Vec<PosedSolid<'_>> = solids.iter().map(|s| s.at(t)).collect();
    let [nx, ny, _] = grid.dims;
    let mut out = vec![f32::INFINITY; grid.len()];
    if out.is_empty() {
        return out;
    }
    out.par_chunks_mut(nx * ny)
        .enumerate()
        .for_each(|(k, slab)| {
            for j in 0..ny {
                for i in 0..nx {
                    let p = grid.point(i, j, k);
                    let d = posed
                        .iter()
                        .map(|s| s.signed_distance(p))
                        .fold(f64::INFINITY, f64::min);
                    slab[i + nx * j] = d as f32;
                }
            }
        });
    out
}
