//! Unit tests of [`super`] (kept beside it to hold the file under 600 lines).
use super::*;

fn p() -> &'static Path {
    Path::new("test.mesh")
}

const QUAD_OBJ: &str = "# a unit square and a triangle\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nf 1 2 3 4\nf 1 2 5\n";

#[test]
fn obj_polygons_are_fan_triangulated() {
    let m = parse_mesh(QUAD_OBJ.as_bytes(), MeshFormat::Obj, p()).unwrap();
    assert_eq!(m.positions.len(), 5);
    assert_eq!(m.triangles, vec![[0, 1, 2], [0, 2, 3], [0, 1, 4]]);
    assert_eq!(m.positions[4], [0.0, 0.0, 1.0]);
}

#[test]
fn ply_ascii_and_binary_read_the_same_mesh() {
    let ascii = "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty double z\nproperty uchar red\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0 1\n1 0 0 1\n1 1 0 1\n0 1 0 1\n4 0 1 2 3\n";
    let a = parse_mesh(ascii.as_bytes(), MeshFormat::Ply, p()).unwrap();
    assert_eq!(a.triangles, vec![[0, 1, 2], [0, 2, 3]]);
    assert_eq!(a.positions[2], [1.0, 1.0, 0.0]);
    let mut bin = b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar uint vertex_indices\nend_header\n".to_vec();
    for v in [[0f32, 0., 0.], [2., 0., 0.], [0., 3., 0.]] {
        for c in v {
            bin.extend_from_slice(&c.to_le_bytes());
        }
    }
    bin.push(3);
    for i in [0u32, 1, 2] {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    let b = parse_mesh(&bin, MeshFormat::Ply, p()).unwrap();
    assert_eq!(b.triangles, vec![[0, 1, 2]]);
    assert_eq!(b.positions[2], [0.0, 3.0, 0.0]);
}

fn binary_stl(tris: &[[[f32; 3]; 3]]) -> Vec<u8> {
    let mut b = vec![0u8; 80];
    b.extend_from_slice(&(tris.len() as u32).to_le_bytes());
    for t in tris {
        b.extend_from_slice(&[0u8; 12]);
        for v in t {
            for c in v {
                b.extend_from_slice(&c.to_le_bytes());
            }
        }
        b.extend_from_slice(&[0u8; 2]);
    }
    b
}

#[test]
fn stl_ascii_and_binary_weld_vertices() {
    let ascii = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 1 1 0\nendloop\nendfacet\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 1 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n";
    let a = parse_mesh(ascii.as_bytes(), MeshFormat::Stl, p()).unwrap();
    assert_eq!(a.positions.len(), 4);
    assert_eq!(a.triangles, vec![[0, 1, 2], [0, 2, 3]]);
    let tris = [
        [[0., 0., 0.], [1., 0., 0.], [1., 1., 0.]],
        [[0., 0., 0.], [1., 1., 0.], [0., 1., 0.]],
    ];
    let b = parse_mesh(&binary_stl(&tris), MeshFormat::Stl, p()).unwrap();
    assert_eq!(b, a);
}

#[test]
fn binary_stl_whose_header_starts_with_solid_is_read_as_binary() {
    // Some exporters write "solid" into the binary header.
    let tris = [[[0., 0., 0.], [1., 0., 0.], [0., 1., 0.]]];
    let mut b = binary_stl(&tris);
    b[..10].copy_from_slice(b"solid blen");
    let m = parse_mesh(&b, MeshFormat::Stl, p()).unwrap();
    assert_eq!(m.triangles, vec![[0, 1, 2]]);
    assert_eq!(m.positions[1], [1.0, 0.0, 0.0]);
}

#[test]
fn stl_binary_count_larger_than_the_file_is_refused_before_reading() {
    let mut b = binary_stl(&[[[0., 0., 0.], [1., 0., 0.], [0., 1., 0.]]]);
    b[80..84].copy_from_slice(&1_000_000u32.to_le_bytes());
    let e = parse_mesh(&b, MeshFormat::Stl, p()).unwrap_err();
    assert!(matches!(e, MeshError::Parse { .. }), "{e}");
    b[80..84].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = parse_mesh(&b, MeshFormat::Stl, p()).unwrap_err();
    assert!(matches!(e, MeshError::TooMany { .. }), "{e}");
}

#[test]
fn ply_hostile_element_count_is_refused() {
    let s = "ply\nformat ascii 1.0\nelement vertex 4000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n0 0 0\n";
    let e = parse_mesh(s.as_bytes(), MeshFormat::Ply, p()).unwrap_err();
    assert!(e.to_string().contains("claims 4000000000"), "{e}");
}

#[test]
fn ply_hostile_list_length_is_an_error_not_an_allocation() {
    let mut b = b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uint uint vertex_indices\nend_header\n".to_vec();
    b.extend(std::iter::repeat_n(0u8, 36));
    b.extend_from_slice(&4_000_000_000u32.to_le_bytes());
    b.extend_from_slice(&[0u8; 12]);
    let e = parse_mesh(&b, MeshFormat::Ply, p()).unwrap_err();
    assert!(matches!(e, MeshError::Parse { .. }), "{e}");
}

#[test]
fn bad_meshes_get_their_own_errors() {
    let e = |s: &str| parse_mesh(s.as_bytes(), MeshFormat::Obj, p()).unwrap_err();
    assert!(matches!(e("v 0 0 0\nv 1 0 0\n"), MeshError::Empty { .. }));
    let nan = e("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n");
    assert!(
        matches!(nan, MeshError::NonFinite { vertex: 1, .. }),
        "{nan}"
    );
    let inf = e("v 0 0 0\nv 1 0 0\nv 0 inf 0\nf 1 2 3\n");
    assert!(
        matches!(inf, MeshError::NonFinite { vertex: 2, .. }),
        "{inf}"
    );
    let deg = e("v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\nf 1 1 2\n");
    assert!(
        matches!(deg, MeshError::AllDegenerate { triangles: 2, .. }),
        "{deg}"
    );
    assert!(deg.to_string().contains("test.mesh") && deg.to_string().contains("fix:"));
    // OBJ indices out of range are caught by tobj; PLY ones by validate.
    assert!(matches!(e("v 0 0 0\nf 1 2 3\n"), MeshError::Parse { .. }));
    let ply = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n";
    let r = parse_mesh(ply.as_bytes(), MeshFormat::Ply, p()).unwrap_err();
    assert!(
        matches!(
            r,
            MeshError::IndexOutOfRange {
                triangle: 0,
                index: 7,
                vertices: 3,
                ..
            }
        ),
        "{r}"
    );
    let neg = ply.replace("3 0 1 7", "3 0 1 -1");
    let r = parse_mesh(neg.as_bytes(), MeshFormat::Ply, p()).unwrap_err();
    assert!(matches!(r, MeshError::IndexOutOfRange { .. }), "{r}");
}

#[test]
fn degenerate_triangles_are_dropped_and_good_ones_kept() {
    let m = parse_mesh(
        b"v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n",
        MeshFormat::Obj,
        p(),
    )
    .unwrap();
    assert_eq!(m.triangles, vec![[0, 1, 3]]);
}

#[test]
fn shipped_glass_is_a_closed_outward_shell() {
    // inputs/glass.obj, written by scripts/make_glass.py.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("inputs/glass.obj");
    let m = read_mesh(&path).unwrap();
    let tri = crate::mesh::TriMesh {
        positions: m.positions.iter().map(|p| p.map(|c| c as f32)).collect(),
        triangles: m.triangles.clone(),
        ..Default::default()
    };
    assert!(tri.topology().is_closed_manifold(), "{:?}", tri.topology());
    let vol: f64 = m
        .triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
                + a[2] * (b[0] * c[1] - b[1] * c[0])
        })
        .sum::<f64>()
        / 6.0;
    // Outer cylinder minus the cavity: pi (0.08^2 0.15 - 0.07^2 0.14), less the 96-gon's
    // chord loss (0.07%).
    let want = std::f64::consts::PI * (0.08f64.powi(2) * 0.15 - 0.07f64.powi(2) * 0.14);
    assert!(vol > 0.998 * want && vol <= want, "{vol} vs {want}");
    let (lo, hi) = m.bounds();
    assert!(
        (lo[2] - 0.0).abs() < 1e-9 && (hi[2] - 0.15).abs() < 1e-9 && (hi[0] - 0.08).abs() < 1e-9
    );
}

#[test]
fn files_missing_or_of_unknown_type_are_named() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope.obj");
    let e = read_mesh(&missing).unwrap_err();
    assert!(
        matches!(e, MeshError::Io { .. }) && e.to_string().contains("nope.obj"),
        "{e}"
    );
    let fbx = d.path().join("cup.fbx");
    std::fs::write(&fbx, b"x").unwrap();
    let e = read_mesh(&fbx).unwrap_err();
    assert!(matches!(e, MeshError::UnsupportedExtension { .. }), "{e}");
    let ok = d.path().join("Quad.OBJ");
    std::fs::write(&ok, QUAD_OBJ).unwrap();
    assert_eq!(read_mesh(&ok).unwrap().triangles.len(), 3);
    let garbage = d.path().join("g.ply");
    std::fs::write(&garbage, b"not a ply").unwrap();
    assert!(matches!(
        read_mesh(&garbage).unwrap_err(),
        MeshError::Parse { .. }
    ));
}
