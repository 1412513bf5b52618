//! The 256-case marching-cubes table, generated (not typed in) from one face rule.
//!
//! Corner `k` of a cube sits at `(k & 1, (k >> 1) & 1, (k >> 2) & 1)`; a corner is *inside*
//! (liquid) when its level-set value is negative, and bit `k` of the case index is set then.
//! Edge `e` runs from corner [`EDGE_CORNER`]`[e]` along axis [`EDGE_AXIS`]`[e]`.
//!
//! Generation: on each of the six faces, walking the corners counter-clockwise as seen from
//! outside the cube, every sign change is a crossing. A segment runs from a crossing where the
//! walk enters the liquid to the next crossing where it leaves, so the liquid lies to the right
//! of the segment seen from outside. On an ambiguous face (diagonal corners inside) the inside
//! corners are kept apart. Because a face's segments depend only on that face's four signs, the
//! two cubes sharing a face produce the same segments in opposite directions, so the assembled
//! surface is closed, edge-manifold and consistently oriented with normals pointing from liquid
//! to air. Inside one cube the segments close into loops (each crossing edge lies on exactly two
//! faces); each loop is triangulated as a fan.

use std::sync::OnceLock;

/// Corner at which edge `e` starts.
pub const EDGE_CORNER: [u8; 12] = [0, 2, 4, 6, 0, 1, 4, 5, 0, 1, 2, 3];
/// Axis along which edge `e` runs.
pub const EDGE_AXIS: [u8; 12] = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2];

/// Triangles of one case, as edge ids, outward (liquid -> air) by the right-hand rule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Case {
    pub len: u8,
    pub tris: [[u8; 3]; 12],
}

impl Case {
    pub fn triangles(&self) -> &[[u8; 3]] {
        &self.tris[..self.len as usize]
    }
}

/// The table, built on first use.
pub fn cases() -> &'static [Case; 256] {
    static TABLE: OnceLock<[Case; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|c| build_case(c as u8)))
}

fn corner(k: u8) -> [u8; 3] {
    [k & 1, (k >> 1) & 1, (k >> 2) & 1]
}

/// The edge joining corners `a` and `b` (which differ in one bit).
fn edge_between(a: u8, b: u8) -> u8 {
    let lo = a.min(b);
    let axis = (a ^ b).trailing_zeros() as u8;
    (0..12u8)
        .find(|&e| EDGE_CORNER[e as usize] == lo && EDGE_AXIS[e as usize] == axis)
        .expect("corners differ in one bit")
}

/// Corners of the face `axis = side`, counter-clockwise seen from outside the cube.
pub fn face_corners(axis: usize, side: u8) -> [u8; 4] {
    let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
    let at = |cu: u8, cv: u8| -> u8 {
        let mut c = [0u8; 3];
        c[axis] = side;
        c[u] = cu;
        c[v] = cv;
        c[0] | (c[1] << 1) | (c[2] << 2)
    };
    // (u, v) -> (0,0), (1,0), (1,1), (0,1) is counter-clockwise seen from +axis.
    let ccw = [at(0, 0), at(1, 0), at(1, 1), at(0, 1)];
    if side == 1 {
        ccw
    } else {
        [ccw[0], ccw[3], ccw[2], ccw[1]]
    }
}

/// Directed segments (entering edge -> leaving edge) of one face for case `case`.
pub fn face_segments(case: u8, axis: usize, side: u8) -> Vec<(u8, u8)> {
    let c = face_corners(axis, side);
    let inside = |k: u8| case >> k & 1 == 1;
    let mut segs = Vec::new();
    // For every inside corner whose predecessor is outside, the run of inside corners that
    // starts there is cut off by one segment: from the edge entering the run to the edge
    // leaving it. Runs never wrap the whole face (that would be no crossing at all).
    for s in 0..4 {
        let prev = c[(s + 3) % 4];
        if inside(c[s]) && !inside(prev) {
            let mut e = s;
            while inside(c[(e + 1) % 4]) {
                e = (e + 1) % 4;
            }
            let enter = edge_between(prev, c[s]);
            let leave = edge_between(c[e], c[(e + 1) % 4]);
            segs.push((enter, leave));
        }
    }
    segs
}

/// Faces (as `2 * axis + side`) that edge `e` lies on, as a bit set.
fn edge_faces(e: u8) -> u8 {
    let c = corner(EDGE_CORNER[e as usize]);
    let axis = EDGE_AXIS[e as usize] as usize;
    (0..3)
        .filter(|&b| b != axis)
        .fold(0, |m, b| m | 1 << (2 * b + c[b] as usize))
}

/// A triangulation of the loop `poly` whose diagonals never join two vertices on a common
/// cube face: such a diagonal would lie in that face, and the neighbouring cube could use the
/// same vertex pair, making the edge non-manifold. Searches all triangulations (loops have at
/// most 12 vertices), preferring fans.
pub(super) fn triangulate(poly: &[u8]) -> Option<Vec<[u8; 3]>> {
    let n = poly.len();
    if n < 3 {
        return None;
    }
    if n == 3 {
        return Some(vec![[poly[0], poly[1], poly[2]]]);
    }
    let ok = |a: u8, b: u8| edge_faces(a) & edge_faces(b) == 0;
    // Triangle (p0, p1, pk) splits the polygon into [p1..=pk] and [pk..=p(n-1), p0].
    for k in 2..n {
        if k != 2 && !ok(poly[1], poly[k]) {
            continue;
        }
        if k != n - 1 && !ok(poly[k], poly[0]) {
            continue;
        }
        let mut out = vec![[poly[0], poly[1], poly[k]]];
        if k != 2 {
            match triangulate(&poly[1..=k]) {
                Some(t) => out.extend(t),
                None => continue,
            }
        }
        if k != n - 1 {
            let mut rest: Vec<u8> = poly[k..].to_vec();
            rest.push(poly[0]);
            match triangulate(&rest) {
                Some(t) => out.extend(t),
                None => continue,
            }
        }
        return Some(out);
    }
    // Complete: every triangulation has exactly one triangle on edge (p0, p1).
    None
}

fn build_case(case: u8) -> Case {
    let mut next = [u8::MAX; 12];
    for axis in 0..3 {
        for side in 0..2 {
            for (a, b) in face_segments(case, axis, side) {
                assert_eq!(
                    next[a as usize],
                    u8::MAX,
                    "edge {a} leaves twice in case {case}"
                );
                next[a as usize] = b;
            }
        }
    }
    let mut out = Case::default();
    let mut seen = [false; 12];
    for start in 0..12u8 {
        if next[start as usize] == u8::MAX || seen[start as usize] {
            continue;
        }
        let mut lp = Vec::new();
        let mut e = start;
        while !seen[e as usize] {
            seen[e as usize] = true;
            lp.push(e);
            e = next[e as usize];
            assert_ne!(e, u8::MAX, "open loop in case {case}");
        }
        assert_eq!(e, start, "loop does not close in case {case}");
        let tris = triangulate(&lp)
            .unwrap_or_else(|| panic!("no face-safe triangulation of loop {lp:?} in case {case}"));
        for t in tris {
            out.tris[out.len as usize] = t;
            out.len += 1;
        }
    }
    let _ = corner; // used by tests
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn edge_point(e: u8) -> [f64; 3] {
        let c = corner(EDGE_CORNER[e as usize]);
        let mut p = c.map(|v| v as f64);
        p[EDGE_AXIS[e as usize] as usize] += 0.5;
        p
    }

    /// Every case: crossing edges are exactly the sign changes, the triangles' boundary is
    /// exactly the face segments, and orientation points from inside corners to outside ones.
    #[test]
    fn all_256_cases_are_consistent() {
        for case in 0..=255u8 {
            let t = cases()[case as usize];
            let inside = |k: u8| case >> k & 1 == 1;
            let crossing: Vec<u8> = (0..12u8)
                .filter(|&e| {
                    let a = EDGE_CORNER[e as usize];
                    inside(a) != inside(a | (1 << EDGE_AXIS[e as usize]))
                })
                .collect();
            let mut used: Vec<u8> = t.triangles().iter().flatten().copied().collect();
            used.sort();
            used.dedup();
            assert_eq!(used, crossing, "case {case}");
            // Directed boundary of the triangle fan = the union of the face segments.
            let mut directed: HashMap<(u8, u8), i32> = HashMap::new();
            for tri in t.triangles() {
                for k in 0..3 {
                    let (a, b) = (tri[k], tri[(k + 1) % 3]);
                    if directed.get(&(b, a)).copied().unwrap_or(0) > 0 {
                        *directed.get_mut(&(b, a)).unwrap() -= 1;
                    } else {
                        *directed.entry((a, b)).or_default() += 1;
                    }
                }
            }
            let mut boundary: Vec<(u8, u8)> = directed
                .into_iter()
                .filter(|&(_, n)| n > 0)
                .map(|(k, _)| k)
                .collect();
            boundary.sort();
            // Interior diagonals never lie in a cube face.
            for tri in t.triangles() {
                for k in 0..3 {
                    let (a, b) = (tri[k], tri[(k + 1) % 3]);
                    let is_boundary = boundary.contains(&(a, b));
                    assert!(
                        is_boundary || edge_faces(a) & edge_faces(b) == 0,
                        "case {case}: diagonal {a}-{b} lies in a face"
                    );
                }
            }
            let mut segs: Vec<(u8, u8)> = (0..3)
                .flat_map(|a| (0..2).flat_map(move |s| face_segments(case, a, s)))
                .collect();
            segs.sort();
            assert_eq!(boundary, segs, "case {case}");
            // Orientation: the summed area vector points from the inside corners' centroid
            // towards the outside ones' (for cases with a single loop).
            if t.len > 0 && case.count_ones() == 1 {
                let k = case.trailing_zeros() as u8;
                let c = corner(k).map(|v| v as f64);
                for tri in t.triangles() {
                    let [a, b, cc] = tri.map(edge_point);
                    let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
                    let v = [cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]];
                    let n = [
                        u[1] * v[2] - u[2] * v[1],
                        u[2] * v[0] - u[0] * v[2],
                        u[0] * v[1] - u[1] * v[0],
                    ];
                    let away = [a[0] - c[0], a[1] - c[1], a[2] - c[2]];
                    let d: f64 = (0..3).map(|i| n[i] * away[i]).sum();
                    assert!(d > 0.0, "case {case} triangle {tri:?} faces inward");
                }
            }
        }
        // Complementary cases use the same crossings.
        assert_eq!(cases()[0].len, 0);
        assert_eq!(cases()[255].len, 0);
        assert_eq!(cases()[1].len, 1);
    }
}
