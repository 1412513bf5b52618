//! Tests of the cell sort: the parallel counting sort against the sequential one, and the
//! vectorised cell keys.

use super::*;

/// The parallel counting sort against the sequential one (a stable sort has one result):
/// several chunks of slots and groups of cells, keys spread, clustered in one cell and in
/// the last cell, no particles, and 1 and 3 threads.
#[test]
fn parallel_counting_sort_matches_serial() {
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let cases: Vec<(usize, Vec<u32>)> = vec![
        (5000, (0..200_000).map(|_| rnd() % 5000).collect()),
        (3_000_000, (0..150_001).map(|_| rnd() % 3_000_000).collect()),
        (
            70_000,
            (0..140_000)
                .map(|i| if i % 3 == 0 { 69_999 } else { 7 })
                .collect(),
        ),
        (1, vec![0; 70_000]),
        (900, Vec::new()),
    ];
    for (cells, keys) in cases {
        let (cs, src) = counting_sort_serial(&keys, cells);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut sp = SortedParticles::default();
            let n = keys.len();
            sp.ids = (0..n as u32).collect();
            sp.tmp = vec![0.0; n];
            sp.tmp_u = vec![0; n];
            sp.key = keys.clone();
            sp.cursor = vec![0; cells + 1];
            sp.cell_start = vec![0; cells + 1];
            pool.install(|| sp.counting_sort(None));
            assert_eq!(
                sp.cell_start, cs,
                "{cells} cells, {n} keys, {threads} threads"
            );
            assert_eq!(sp.tmp_u, src, "{cells} cells, {n} keys, {threads} threads");
        }
    }
}

#[test]
fn vectorised_keys_match_cell_of_everywhere() {
    let d = GridDims {
        n: [7, 5, 9],
        h: 0.1,
        lower: [-0.3, 0.2, 1.0],
        open: [[false; 2]; 3],
    };
    // Inside, on cell boundaries, outside on both sides, and non-finite values.
    let mut pts = Vec::new();
    for i in -30..=110 {
        let t = i as f32 * 0.0137;
        pts.push([d.lower[0] + t, d.lower[1] + 0.51 * t, d.lower[2] + 1.3 * t]);
    }
    pts.push([d.lower[0] + 0.2, d.lower[1] + 0.1, d.lower[2] + 0.3]);
    pts.push([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]);
    pts.push([1e30, -1e30, 0.0]);
    let col = |a: usize| pts.iter().map(|p| p[a]).collect::<Vec<f32>>();
    let mut keys = vec![0u32; pts.len()];
    cell_keys(&d, &col(0), &col(1), &col(2), &mut keys);
    for (p, k) in pts.iter().zip(&keys) {
        assert_eq!(*k as usize, d.cell_of(*p), "position {p:?}");
    }
}
