//! How the wavefront's slabs are planned (`slabs.rs`): their number, their cuts and the
//! groups of stages; none of it changes a bit (the parent tests' `rb_sweeps` checks).

use crate::sim::pressure::multigrid::level::Level;
use crate::sim::pressure::multigrid::slabs::{Plan, slab_plan, stage_groups};

/// Cost of each plane as the plan counts it: a row's fluid cells plus 8.
fn plane_costs(lv: &Level) -> Vec<u64> {
    let n = lv.n;
    (0..n[2])
        .map(|k| {
            (0..n[1])
                .map(|j| {
                    let [a, b] = lv.spans[j + n[1] * k];
                    if a < b { (b - a) as u64 + 8 } else { 0 }
                })
                .sum()
        })
        .collect()
}

/// The first pass's work on slab `[a, b)` by its definition (`sweeps::trapezoid`): stage `h`
/// on planes `a + 1 + h ..= b - 1 - h`.
fn trapezoid(cost: &[u64], stages: usize, a: usize, b: usize) -> u64 {
    (0..stages)
        .map(|h| {
            (a + 1 + h..b.saturating_sub(h))
                .map(|p| cost[p])
                .sum::<u64>()
        })
        .sum()
}

/// The costliest slab's first pass for the cut `starts`.
fn costliest(cost: &[u64], stages: usize, starts: &[u32]) -> u64 {
    starts
        .windows(2)
        .map(|w| trapezoid(cost, stages, w[0] as usize, w[1] as usize))
        .max()
        .unwrap()
}

/// The cut by liquid that the plan used before session 15: the first planes whose cost
/// reaches each even share (at least `min_per` planes a slab).
fn cut_by_liquid(cost: &[u64], (k0, k1): (usize, usize), slabs: usize, min_per: usize) -> Vec<u32> {
    let total: u64 = cost[k0..k1].iter().sum();
    let mut starts = vec![k0 as u32];
    let (mut k, mut acc) = (k0, 0);
    for s in 1..slabs {
        let target = total * s as u64 / slabs as u64;
        let (lo, hi) = (starts[s - 1] as usize + min_per, k1 - (slabs - s) * min_per);
        while k < hi && (k < lo || acc < target) {
            acc += cost[k];
            k += 1;
        }
        starts.push(k as u32);
    }
    starts.push(k1 as u32);
    starts
}

/// The wavefront's slabs: as many as the threads allow (a multiple of the thread count, each at
/// least `2 stages + 2` planes), cut so that the costliest slab's first pass (its trapezoid,
/// whose cut-off corners weigh what their planes hold) costs as little as a cut can make it.
/// On a level whose lower half of planes holds four times the liquid of its upper half (a dam
/// break's spread water under the column), with 8 to 21 slabs, the costliest first pass is
/// cheaper than with the cut by liquid the plan used before (by 8-20% when written). Few
/// possible slabs on many threads go stage by stage; one thread runs one wavefront.
#[test]
fn slab_plan_balances_the_first_pass() {
    let n = [40, 30, 400];
    let mut lv = Level::new(n);
    for k in 0..n[2] {
        for j in 0..n[1] {
            // Rows of 32 cells in the lower half, 8 in the upper one, none in the top 10 planes.
            let len = if k < 200 {
                32
            } else if k < 390 {
                8
            } else {
                0
            };
            lv.spans[j + n[1] * k] = [1, 1 + len];
        }
    }
    let cost = plane_costs(&lv);
    let stages = 7;
    let (plan, _) = slab_plan(&lv, 0, 390, stages, 1);
    assert_eq!(plan, Plan::Serial);
    // 390 planes of at least 16: at most 24 slabs.
    let (plan, _) = slab_plan(&lv, 0, 390, stages, 32);
    assert!(matches!(plan, Plan::Stagewise(_)), "{plan:?}");
    for (threads, want) in [(2, 8), (3, 12), (5, 20), (7, 21)] {
        let (plan, starts) = slab_plan(&lv, 0, 390, stages, threads);
        let Plan::Slabs(slabs) = plan else {
            panic!("{threads} threads: {plan:?}")
        };
        assert_eq!(slabs, want, "{threads} threads");
        let starts = &starts[..=slabs];
        assert_eq!((starts[0], starts[slabs]), (0, 390));
        assert!(
            starts
                .windows(2)
                .all(|w| w[1] - w[0] >= 2 * stages as u32 + 2),
            "{threads} threads: {starts:?}"
        );
        let most = costliest(&cost, stages, starts);
        let before = costliest(&cost, stages, &cut_by_liquid(&cost, (0, 390), slabs, 16));
        assert!(
            most < before,
            "{threads} threads: costliest first pass {most} (cut by liquid {before}), {starts:?}"
        );
    }
}

/// The plan's cut is the best one: on levels of 40 to 60 planes of liquid starting above the
/// floor (`k0` 3), whose rows hold a random amount of it, the costliest first pass of the
/// plan's 2 and 3 slabs equals the least that any cut into slabs of at least `2 stages + 2`
/// planes gives (every cut tried), and the slabs start at `k0` and end at `k1`.
#[test]
fn slab_plan_cut_is_the_best_cut() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let stages = 5;
    let min_per = 2 * stages + 2;
    for (planes, threads) in [(40, 2), (47, 2), (60, 3), (55, 3)] {
        let n = [130, 130, planes + 5];
        let mut lv = Level::new(n);
        let (k0, k1) = (3, 3 + planes);
        for k in k0..k1 {
            for j in 1..n[1] - 1 {
                let len = (next() % 127) as u32;
                lv.spans[j + n[1] * k] = [1, 1 + len];
            }
        }
        let cost = plane_costs(&lv);
        let (plan, starts) = slab_plan(&lv, k0, k1, stages, threads);
        assert_eq!(plan, Plan::Slabs(threads), "{planes} planes");
        let starts = &starts[..=threads];
        assert_eq!((starts[0], starts[threads]), (k0 as u32, k1 as u32));
        let got = costliest(&cost, stages, starts);
        let mut best = u64::MAX;
        for c1 in k0 + min_per..=k1 - min_per {
            if threads == 2 {
                best = best.min(costliest(&cost, stages, &[k0 as u32, c1 as u32, k1 as u32]));
                continue;
            }
            for c2 in c1 + min_per..=k1.saturating_sub(min_per) {
                let cut = [k0 as u32, c1 as u32, c2 as u32, k1 as u32];
                best = best.min(costliest(&cost, stages, &cut));
            }
        }
        assert_eq!(got, best, "{planes} planes, {threads} slabs: {starts:?}");
    }
}

/// A wavefront whose first slab must hold most of the liquid (86% of it in 14 planes, a slab
/// of 7 stages needs 16) runs in groups of stages (of 4 and 3, slabs of 10 and 8 planes, the
/// first with 60% and 48% of the liquid); the same level with the liquid spread evenly over its
/// planes runs as one wavefront (two slabs of half of it).
#[test]
fn stage_groups_split_a_slab_holding_most_of_the_liquid() {
    let n = [130, 60, 60];
    let mut lv = Level::new(n);
    for (deep, want_groups) in [(true, true), (false, false)] {
        for k in 1..50 {
            for j in 1..n[1] - 1 {
                let len = if !deep || k < 15 { 128 } else { 2 };
                lv.spans[j + n[1] * k] = [1, 1 + len];
            }
        }
        let (plan, _) = slab_plan(&lv, 1, 50, 7, 2);
        assert!(matches!(plan, Plan::Slabs(_)), "{plan:?}");
        let groups = stage_groups(lv.n, &lv.spans, (1, 50), 7, 2, plan);
        assert_eq!(groups.is_some(), want_groups, "deep {deep}: {groups:?}");
    }
}
