//! Meshes generated in code for tests and benchmarks (none are committed as files).

use super::IndexedMesh;

/// An icosphere: the icosahedron subdivided `levels` times (4^levels x 20 triangles), vertices
/// on the sphere of `radius` around `centre`, wound outward. For tests and benchmarks.
pub fn icosphere(centre: [f64; 3], radius: f64, levels: u32) -> IndexedMesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut pos: Vec<[f64; 3]> = vec![
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let mut tris: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    let unit = |p: [f64; 3]| {
        let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        p.map(|c| c / l)
    };
    for p in pos.iter_mut() {
        *p = unit(*p);
    }
    for _ in 0..levels {
        let mut mid = std::collections::HashMap::<(u32, u32), u32>::new();
        let mut next = Vec::with_capacity(tris.len() * 4);
        for t in &tris {
            let mut m = [0u32; 3];
            for e in 0..3 {
                let (a, b) = (t[e], t[(e + 1) % 3]);
                m[e] = *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                    let (pa, pb) = (pos[a as usize], pos[b as usize]);
                    pos.push(unit([0, 1, 2].map(|k| pa[k] + pb[k])));
                    pos.len() as u32 - 1
                });
            }
            next.push([t[0], m[0], m[2]]);
            next.push([t[1], m[1], m[0]]);
            next.push([t[2], m[2], m[1]]);
            next.push(m);
        }
        tris = next;
    }
    IndexedMesh {
        positions: pos
            .into_iter()
            .map(|p| [0, 1, 2].map(|k| centre[k] + radius * p[k]))
            .collect(),
        triangles: tris,
    }
}

/// The axis-aligned box `lo..hi` as 12 outward-wound triangles.
pub fn cuboid(lo: [f64; 3], hi: [f64; 3]) -> IndexedMesh {
    let positions = (0..8)
        .map(|i| [0, 1, 2].map(|a| if i >> a & 1 == 1 { hi[a] } else { lo[a] }))
        .collect();
    let quads = [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ];
    let triangles = quads
        .iter()
        .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
        .collect();
    IndexedMesh {
        positions,
        triangles,
    }
}
