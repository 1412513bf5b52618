//! A bounding volume hierarchy over triangles: closest-point and winding-number queries.
//!
//! Written here rather than taken from a crate because the two queries surge needs are small and
//! specialised: the closest point within a cap distance (the narrow band of
//! [`super::mesh_sdf`], warm-started from the previous grid node's triangle, which prunes most of
//! the tree), and the fast generalised winding number of Barill, Dickson, Schmidt, Levin and
//! Jacobson, *Fast Winding Numbers for Soups and Clouds* (SIGGRAPH 2018), which needs per-node
//! dipole moments that a general collision crate (parry3d) does not keep. parry3d would also add
//! a large dependency tree for one query.
//!
//! Layout: a flat array of nodes in depth-first order (the left child of node `i` is `i + 1`,
//! the right child's index is stored), each with an f64 box; leaves hold up to [`LEAF_SIZE`]
//! triangles, whose corners are copied into one array in leaf order so a leaf is read from
//! consecutive memory. Built top-down by splitting at the median centroid along the longest axis
//! of the centroid bounds (deterministic: the same mesh gives the same tree).
//!
//! Closest point on a triangle: the Voronoi-region method of Ericson, *Real-Time Collision
//! Detection* (2005), section 5.1.5, with a segment fallback for slivers (a barycentric
//! projection that measures only the separating edges measured 20% slower).

/// Most triangles in one leaf.
pub const LEAF_SIZE: usize = 8;

/// One node: its box, and either its triangles (`count > 0`: `first..first + count` in leaf
/// order) or its right child (`count == 0`: `first`; the left child is the next node).
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub lo: [f64; 3],
    pub hi: [f64; 3],
    pub first: u32,
    pub count: u32,
}

/// Per-node dipole for the fast winding number: area-weighted centroid, summed area-weighted
/// normal (half the cross product) and radius of the ball around the centroid holding the node.
#[derive(Debug, Clone, Copy, Default)]
struct Dipole {
    centre: [f64; 3],
    normal: [f64; 3],
    radius: f64,
}

/// A BVH over a triangle soup.
#[derive(Debug, Clone)]
pub struct Bvh {
    pub nodes: Vec<Node>,
    /// Triangle corners in leaf order.
    pub tris: Vec<[[f64; 3]; 3]>,
    /// `order[k]`: the input index of leaf-order triangle `k`.
    pub order: Vec<u32>,
    dipoles: Vec<Dipole>,
}

pub fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn axpy(s: f64, a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [b[0] + s * a[0], b[1] + s * a[1], b[2] + s * a[2]]
}

/// Closest point to `p` on the segment `a`-`b`.
fn closest_on_segment(p: [f64; 3], a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    let ab = sub(b, a);
    let l2 = dot(ab, ab);
    let t = if l2 > 0.0 {
        (dot(sub(p, a), ab) / l2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    axpy(t, ab, a)
}

/// Closest point to `p` on triangle `t` (Ericson 2005, 5.1.5).
pub fn closest_on_triangle(p: [f64; 3], t: &[[f64; 3]; 3]) -> [f64; 3] {
    let [a, b, c] = *t;
    let ab = sub(b, a);
    let ac = sub(c, a);
    let ap = sub(p, a);
    let d1 = dot(ab, ap);
    let d2 = dot(ac, ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = sub(p, b);
    let d3 = dot(ab, bp);
    let d4 = dot(ac, bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return axpy(d1 / (d1 - d3), ab, a);
    }
    let cp = sub(p, c);
    let d5 = dot(ab, cp);
    let d6 = dot(ac, cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return axpy(d2 / (d2 - d6), ac, a);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return axpy((d4 - d3) / ((d4 - d3) + (d5 - d6)), sub(c, b), b);
    }
    let denom = va + vb + vc;
    let q = if denom > 0.0 {
        axpy(vc / denom, ac, axpy(vb / denom, ab, a))
    } else {
        [f64::NAN; 3]
    };
    if q.iter().all(|x| x.is_finite()) {
        return q;
    }
    // A sliver whose area rounds to zero: the nearest of its edges.
    let mut best = a;
    let mut bd = f64::INFINITY;
    for (u, v) in [(a, b), (b, c), (c, a)] {
        let s = closest_on_segment(p, u, v);
        let d = dot(sub(p, s), sub(p, s));
        if d < bd {
            bd = d;
            best = s;
        }
    }
    best
}

/// Squared distance from `p` to the box `lo..hi` (0 inside).
fn box_dist2(p: [f64; 3], lo: [f64; 3], hi: [f64; 3]) -> f64 {
    let mut d = 0.0;
    for a in 0..3 {
        let e = (lo[a] - p[a]).max(p[a] - hi[a]).max(0.0);
        d += e * e;
    }
    d
}

/// The result of [`Bvh::closest`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Leaf-order triangle index (use [`Bvh::order`] for the input index).
    pub tri: u32,
    /// Squared distance.
    pub dist2: f64,
    /// The closest point.
    pub point: [f64; 3],
}

impl Bvh {
    /// Builds the tree over `triangles` (indices into `positions`; assumed in range).
    pub fn build(positions: &[[f64; 3]], triangles: &[[u32; 3]]) -> Bvh {
        let tris_in: Vec<[[f64; 3]; 3]> = triangles
            .iter()
            .map(|t| t.map(|i| positions[i as usize]))
            .collect();
        let cent: Vec<[f64; 3]> = tris_in
            .iter()
            .map(|t| [0, 1, 2].map(|a| (t[0][a] + t[1][a] + t[2][a]) / 3.0))
            .collect();
        let mut order: Vec<u32> = (0..triangles.len() as u32).collect();
        let mut nodes = Vec::with_capacity(2 * triangles.len() / LEAF_SIZE + 1);
        if !triangles.is_empty() {
            Self::build_node(&tris_in, &cent, &mut order, 0, &mut nodes);
        }
        let tris: Vec<[[f64; 3]; 3]> = order.iter().map(|&i| tris_in[i as usize]).collect();
        let mut bvh = Bvh {
            nodes,
            tris,
            order,
            dipoles: Vec::new(),
        };
        bvh.dipoles = vec![Dipole::default(); bvh.nodes.len()];
        if !bvh.nodes.is_empty() {
            bvh.fit_dipoles(0);
        }
        bvh
    }

    fn build_node(
        tris: &[[[f64; 3]; 3]],
        cent: &[[f64; 3]],
        order: &mut [u32],
        offset: usize,
        nodes: &mut Vec<Node>,
    ) -> usize {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        let mut clo = [f64::INFINITY; 3];
        let mut chi = [f64::NEG_INFINITY; 3];
        for &i in order.iter() {
            for v in &tris[i as usize] {
                for a in 0..3 {
                    lo[a] = lo[a].min(v[a]);
                    hi[a] = hi[a].max(v[a]);
                }
            }
            let c = cent[i as usize];
            for a in 0..3 {
                clo[a] = clo[a].min(c[a]);
                chi[a] = chi[a].max(c[a]);
            }
        }
        let me = nodes.len();
        nodes.push(Node {
            lo,
            hi,
            first: offset as u32,
            count: order.len() as u32,
        });
        let ext = [0, 1, 2].map(|a| chi[a] - clo[a]);
        if order.len() <= LEAF_SIZE || ext.iter().all(|&e| e <= 0.0) {
            return me;
        }
        let axis = (0..3).fold(0, |b, a| if ext[a] > ext[b] { a } else { b });
        let mid = order.len() / 2;
        order.select_nth_unstable_by(mid, |&x, &y| {
            cent[x as usize][axis].total_cmp(&cent[y as usize][axis])
        });
        let (left, right) = order.split_at_mut(mid);
        Self::build_node(tris, cent, left, offset, nodes);
        let r = Self::build_node(tris, cent, right, offset + mid, nodes);
        nodes[me].first = r as u32;
        nodes[me].count = 0;
        me
    }

    /// Fills the dipole of node `n` and its subtree; returns (area, area * centroid, normal).
    fn fit_dipoles(&mut self, n: usize) -> (f64, [f64; 3], [f64; 3]) {
        let node = self.nodes[n];
        let (area, moment, normal) = if node.count > 0 {
            let mut area = 0.0;
            let mut moment = [0.0; 3];
            let mut normal = [0.0; 3];
            for t in &self.tris[node.first as usize..(node.first + node.count) as usize] {
                let nn = cross(sub(t[1], t[0]), sub(t[2], t[0]));
                let a = 0.5 * dot(nn, nn).sqrt();
                for k in 0..3 {
                    moment[k] += a * (t[0][k] + t[1][k] + t[2][k]) / 3.0;
                    normal[k] += 0.5 * nn[k];
                }
                area += a;
            }
            (area, moment, normal)
        } else {
            let (a1, m1, n1) = self.fit_dipoles(n + 1);
            let (a2, m2, n2) = self.fit_dipoles(node.first as usize);
            (
                a1 + a2,
                [0, 1, 2].map(|k| m1[k] + m2[k]),
                [0, 1, 2].map(|k| n1[k] + n2[k]),
            )
        };
        let centre = if area > 0.0 {
            moment.map(|m| m / area)
        } else {
            [0, 1, 2].map(|a| 0.5 * (node.lo[a] + node.hi[a]))
        };
        let mut radius: f64 = 0.0;
        for corner in 0..8 {
            let q = [0, 1, 2].map(|a| {
                if corner >> a & 1 == 1 {
                    node.hi[a]
                } else {
                    node.lo[a]
                }
            });
            radius = radius.max(dot(sub(q, centre), sub(q, centre)).sqrt());
        }
        self.dipoles[n] = Dipole {
            centre,
            normal,
            radius,
        };
        (area, moment, normal)
    }

    /// The closest triangle to `p` nearer than `sqrt(max_dist2)`, if any. `hint` (a leaf-order
    /// triangle, e.g. the previous query's) tightens the cap before the descent.
    pub fn closest(&self, p: [f64; 3], max_dist2: f64, hint: Option<u32>) -> Option<Hit> {
        let mut best: Option<Hit> = None;
        let mut cap = max_dist2;
        if let Some(h) = hint {
            let q = closest_on_triangle(p, &self.tris[h as usize]);
            let d = dot(sub(p, q), sub(p, q));
            if d < cap {
                cap = d;
                best = Some(Hit {
                    tri: h,
                    dist2: d,
                    point: q,
                });
            }
        }
        if self.nodes.is_empty() {
            return best;
        }
        let mut stack = [0u32; 64];
        let mut sp = 0;
        let mut n = 0usize;
        loop {
            let node = &self.nodes[n];
            if node.count > 0 {
                for k in node.first..node.first + node.count {
                    let q = closest_on_triangle(p, &self.tris[k as usize]);
                    let d = dot(sub(p, q), sub(p, q));
                    if d < cap || (d == cap && best.is_some_and(|b| k < b.tri)) {
                        cap = d;
                        best = Some(Hit {
                            tri: k,
                            dist2: d,
                            point: q,
                        });
                    }
                }
            } else {
                let (l, r) = (n + 1, node.first as usize);
                let dl = box_dist2(p, self.nodes[l].lo, self.nodes[l].hi);
                let dr = box_dist2(p, self.nodes[r].lo, self.nodes[r].hi);
                let (near, dn, far, df) = if dl <= dr {
                    (l, dl, r, dr)
                } else {
                    (r, dr, l, dl)
                };
                if df <= cap && sp < stack.len() {
                    stack[sp] = far as u32;
                    sp += 1;
                }
                if dn <= cap {
                    n = near;
                    continue;
                }
            }
            // Pop the next node still closer than the cap.
            loop {
                if sp == 0 {
                    return best;
                }
                sp -= 1;
                n = stack[sp] as usize;
                let b = &self.nodes[n];
                if box_dist2(p, b.lo, b.hi) <= cap {
                    break;
                }
            }
        }
    }

    /// Whether any triangle's bounding box overlaps the box `lo..hi` (a conservative "is any
    /// triangle near this box" test).
    pub fn overlaps_box(&self, lo: [f64; 3], hi: [f64; 3]) -> bool {
        let overlap = |a: &[f64; 3], b: &[f64; 3]| (0..3).all(|k| a[k] <= hi[k] && b[k] >= lo[k]);
        let mut stack = vec![0usize];
        while let Some(n) = stack.pop() {
            let Some(node) = self.nodes.get(n) else { break };
            if !overlap(&node.lo, &node.hi) {
                continue;
            }
            if node.count == 0 {
                stack.push(node.first as usize);
                stack.push(n + 1);
                continue;
            }
            for t in &self.tris[node.first as usize..(node.first + node.count) as usize] {
                let tlo = [0, 1, 2].map(|a| t[0][a].min(t[1][a]).min(t[2][a]));
                let thi = [0, 1, 2].map(|a| t[0][a].max(t[1][a]).max(t[2][a]));
                if overlap(&tlo, &thi) {
                    return true;
                }
            }
        }
        false
    }

    /// Generalised winding number of the triangle soup at `p` (Jacobson, Kavan and
    /// Sorkine-Hornung 2013): the sum of signed solid angles over 4 pi, about 1 inside a closed,
    /// outward-wound surface and 0 outside. Subtrees farther than `beta` times their radius are
    /// replaced by their dipole (Barill et al. 2018, first order); `beta = 2` gives errors of a
    /// few percent, far from the 0.5 threshold.
    pub fn winding_number(&self, p: [f64; 3], beta: f64) -> f64 {
        if self.nodes.is_empty() {
            return 0.0;
        }
        let mut w = 0.0;
        let mut stack = vec![0usize];
        while let Some(n) = stack.pop() {
            let node = self.nodes[n];
            let d = self.dipoles[n];
            let r = sub(d.centre, p);
            let dist = dot(r, r).sqrt();
            if dist > beta * d.radius && dist > 0.0 {
                w += dot(d.normal, r) / (dist * dist * dist) / (4.0 * std::f64::consts::PI);
            } else if node.count > 0 {
                for t in &self.tris[node.first as usize..(node.first + node.count) as usize] {
                    w += solid_angle(p, t) / (4.0 * std::f64::consts::PI);
                }
            } else {
                stack.push(n + 1);
                stack.push(node.first as usize);
            }
        }
        w
    }
}

/// Signed solid angle of triangle `t` seen from `p` (Van Oosterom and Strackee 1983), positive
/// when `p` is behind the triangle (on the side its normal points away from).
pub fn solid_angle(p: [f64; 3], t: &[[f64; 3]; 3]) -> f64 {
    let a = sub(t[0], p);
    let b = sub(t[1], p);
    let c = sub(t[2], p);
    let (la, lb, lc) = (dot(a, a).sqrt(), dot(b, b).sqrt(), dot(c, c).sqrt());
    let num = dot(a, cross(b, c));
    let den = la * lb * lc + dot(a, b) * lc + dot(b, c) * la + dot(c, a) * lb;
    2.0 * num.atan2(den)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic soup of random triangles in the unit cube.
    fn soup(n: usize, seed: u64) -> (Vec<[f64; 3]>, Vec<[u32; 3]>) {
        let mut s = seed;
        let mut r = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut pos = Vec::new();
        let mut tri = Vec::new();
        for k in 0..n {
            let c = [r(), r(), r()];
            for _ in 0..3 {
                pos.push([0, 1, 2].map(|a| c[a] + 0.1 * (r() - 0.5)));
            }
            tri.push([3 * k as u32, 3 * k as u32 + 1, 3 * k as u32 + 2]);
        }
        (pos, tri)
    }

    #[test]
    fn closest_matches_brute_force_and_respects_the_cap() {
        let (pos, tri) = soup(500, 7);
        let bvh = Bvh::build(&pos, &tri);
        let (qs, _) = soup(100, 99);
        for (i, q) in qs.iter().enumerate() {
            let q = [0, 1, 2].map(|a| q[a] * 1.4 - 0.2);
            let brute = tri
                .iter()
                .map(|t| {
                    let c = closest_on_triangle(q, &t.map(|i| pos[i as usize]));
                    dot(sub(q, c), sub(q, c))
                })
                .fold(f64::INFINITY, f64::min);
            let hint = Some((i * 37 % tri.len()) as u32);
            let hit = bvh.closest(q, f64::INFINITY, hint).unwrap();
            assert_eq!(hit.dist2, brute, "query {i}");
            let t = bvh.order[hit.tri as usize] as usize;
            let c = closest_on_triangle(q, &tri[t].map(|i| pos[i as usize]));
            assert_eq!(c, hit.point);
            assert!(bvh.closest(q, brute * 0.999, None).is_none());
        }
    }

    #[test]
    fn closest_point_agrees_with_a_dense_sampling_of_the_triangle() {
        let (pos, _) = soup(60, 3);
        let (qs, _) = soup(60, 5);
        let n = 300;
        for (k, q) in qs.iter().take(60).enumerate() {
            let t = [pos[3 * k], pos[3 * k + 1], pos[3 * k + 2]];
            // Spread the query around the triangle so every region is hit.
            let p = [0, 1, 2].map(|a| t[0][a] + 3.0 * (q[a] - 0.5) * 0.1);
            let c = closest_on_triangle(p, &t);
            let d = dot(sub(p, c), sub(p, c)).sqrt();
            // c lies on the triangle (in its plane, non-negative barycentrics).
            let mut sampled = f64::INFINITY;
            for i in 0..=n {
                for j in 0..=n - i {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    let s = [0, 1, 2]
                        .map(|a| t[0][a] + u * (t[1][a] - t[0][a]) + v * (t[2][a] - t[0][a]));
                    sampled = sampled.min(dot(sub(p, s), sub(p, s)).sqrt());
                }
            }
            // Sampling never beats the exact answer, and is within a sample spacing of it.
            let edge = (0..3)
                .map(|e| dot(sub(t[(e + 1) % 3], t[e]), sub(t[(e + 1) % 3], t[e])).sqrt())
                .fold(0.0, f64::max);
            assert!(d <= sampled + 1e-12, "{k}: {d} vs {sampled}");
            assert!(
                sampled - d <= 2.0 * edge / n as f64,
                "{k}: {d} vs {sampled}"
            );
        }
    }

    #[test]
    fn closest_point_regions_of_one_triangle() {
        let t = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
        let f = closest_on_triangle([0.2, 0.2, 5.0], &t);
        assert!(
            (0..3).all(|a| (f[a] - [0.2, 0.2, 0.0][a]).abs() < 1e-15),
            "{f:?}"
        );
        assert_eq!(closest_on_triangle([-1.0, -1.0, 0.0], &t), [0.0, 0.0, 0.0]);
        assert_eq!(closest_on_triangle([2.0, -0.5, 1.0], &t), [1.0, 0.0, 0.0]);
        assert_eq!(closest_on_triangle([0.5, -2.0, 0.0], &t), [0.5, 0.0, 0.0]);
        let e = closest_on_triangle([1.0, 1.0, 0.0], &t);
        assert!((e[0] - 0.5).abs() < 1e-15 && (e[1] - 0.5).abs() < 1e-15);
        // A sliver (collinear corners) falls back to its edges.
        let s = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]];
        assert_eq!(closest_on_triangle([1.5, 1.0, 0.0], &s), [1.5, 0.0, 0.0]);
    }

    #[test]
    fn winding_number_of_a_cube_is_one_inside_and_zero_outside() {
        // Unit cube, 12 outward triangles.
        let pos: Vec<[f64; 3]> = (0..8)
            .map(|i| [(i & 1) as f64, (i >> 1 & 1) as f64, (i >> 2 & 1) as f64])
            .collect();
        let quads = [
            [0, 2, 3, 1],
            [4, 5, 7, 6],
            [0, 1, 5, 4],
            [2, 6, 7, 3],
            [0, 4, 6, 2],
            [1, 3, 7, 5],
        ];
        let tri: Vec<[u32; 3]> = quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect();
        let bvh = Bvh::build(&pos, &tri);
        for (p, want) in [
            ([0.5, 0.5, 0.5], 1.0),
            ([0.9, 0.1, 0.2], 1.0),
            ([1.5, 0.5, 0.5], 0.0),
            ([-3.0, 7.0, 2.0], 0.0),
        ] {
            let exact = bvh.winding_number(p, f64::INFINITY);
            assert!((exact - want).abs() < 1e-9, "{p:?}: {exact}");
            let fast = bvh.winding_number(p, 2.0);
            assert!((fast - want).abs() < 0.1, "{p:?}: {fast}");
        }
    }
}
