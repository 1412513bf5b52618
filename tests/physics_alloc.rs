//! The stepper allocates nothing inside its substeps: after the first frame (which sizes every
//! buffer), a frame's only heap allocation of its own is its report's per-substep list.
//!
//! A counting global allocator wraps the system one; this file holds a single test so that no
//! other test allocates concurrently.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use surge::scene::{Domain, PressurePreconditioner, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::Simulation;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn frames_after_the_first_do_not_allocate_in_substeps() {
    let h = 0.02;
    let mut s = Scene {
        name: "alloc".into(),
        domain: Domain {
            lower: [0.0; 3],
            cell_size: h,
            resolution: [24, 8, 16],
        },
        gravity: [0.0, 0.0, -surge::scene::STANDARD_GRAVITY],
        density: 1000.0,
        sources: vec![Source::Box {
            min: [h, h, h],
            max: [0.16, 0.14, 0.2],
            velocity: [0.0; 3],
        }],
        seed: 3,
        time: TimeSettings {
            fps: 30.0,
            frames: 6,
        },
        solver: SolverSettings::default(),
        surface: Default::default(),
        render: Default::default(),
        output: Default::default(),
    };
    s.solver.min_substeps = 12;
    let p0 = surge::sources::seed_particles(&s, &[]);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    // Both pressure preconditioners (the multigrid hierarchy is allocated by the first solve).
    for pc in [
        PressurePreconditioner::Mic0,
        PressurePreconditioner::Multigrid,
    ] {
        s.solver.pressure_preconditioner = pc;
        let p = p0.clone();
        pool.install(|| {
            let mut sim = Simulation::new(&s, p, 0).unwrap();
            sim.advance_frame();
            for _ in 0..4 {
                let before = ALLOCATIONS.load(Ordering::Relaxed);
                let r = sim.advance_frame();
                let n = ALLOCATIONS.load(Ordering::Relaxed) - before;
                assert!(r.substeps >= 12);
                // The report's substep list is the one allocation the stepper makes per frame;
                // rayon's work-stealing deques and epoch collector allocate now and then on their
                // own (0-3 times a frame here). Anything allocating once per substep would make at
                // least 12.
                assert!(
                    n < r.substeps as usize / 2,
                    "{pc:?}: a frame of {} substeps made {n} allocations",
                    r.substeps
                );
            }
        });
    }
}
