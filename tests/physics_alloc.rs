//! The stepper allocates nothing inside its substeps: after the first frame (which sizes every
//! buffer), a frame's only heap allocation of its own is its report's per-substep list (one
//! `reserve` before the first substep), with and without obstacles.
//!
//! A counting global allocator wraps the system one and counts the allocations of the threads
//! of the pool being measured only: this file holds a single test so that no other test
//! allocates concurrently, and the worker threads of the pool measured before, which exit on
//! their own after it is dropped (crossbeam's epoch collector may allocate as a thread exits:
//! a frame once counted 2 at 1 thread), are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use surge::scene::{Domain, PressurePreconditioner, Scene, SolverSettings, Source, TimeSettings};
use surge::sim::settings::FreeSurface;
use surge::sim::{Particles, Simulation, Transfer};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// The pool being measured (1, 2, ...: one per `frame_allocations` call).
static MEASURED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The pool this thread works for (0: none).
    static POOL: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    if POOL.with(Cell::get) == MEASURED.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `(substeps, allocations)` of frames 2..=6 of `scene` on a pool of `threads` (frame 1 sizes
/// every buffer).
fn frame_allocations(scene: &Scene, p: &Particles, threads: usize) -> Vec<(u32, usize)> {
    let id = MEASURED.fetch_add(1, Ordering::Relaxed) + 1;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(move |_| POOL.with(|p| p.set(id)))
        .build()
        .unwrap();
    pool.install(|| {
        let mut sim = Simulation::new(scene, p.clone(), 0).unwrap();
        sim.advance_frame();
        (0..5)
            .map(|_| {
                let before = ALLOCATIONS.load(Ordering::Relaxed);
                let r = sim.advance_frame();
                (r.substeps, ALLOCATIONS.load(Ordering::Relaxed) - before)
            })
            .collect()
    })
}

#[test]
fn frames_after_the_first_do_not_allocate_in_substeps() {
    let h = 0.02;
    let mut s = Scene {
        emitters: Vec::new(),
        sinks: Vec::new(),
        limits: Default::default(),
        name: "alloc".into(),
        domain: Domain {
            lower: [0.0; 3],
            cell_size: h,
            resolution: [24, 8, 16],
            boundaries: Default::default(),
            friction: Default::default(),
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
        obstacles: Vec::new(),
        built_obstacles: Default::default(),
    };
    // Twelve substeps a frame, so that anything allocating once per substep (or once per
    // stage of a substep) shows as 12 or more allocations per frame.
    s.solver.min_substeps = 12;
    let p = surge::sources::seed_particles(&s, &[]);
    // Both pressure preconditioners (the multigrid hierarchy is allocated with the simulation),
    // both transfers (APIC's affine matrices travel through the sort and the gather) and both
    // free surfaces (the ghost fluid's level set and air terms).
    // Obstacles: a static box and a keyframed sphere moving through the liquid (face weights,
    // containment, the moving solid's face velocities), as the scene parser builds them.
    let with_obstacles = {
        let json = r#"{
            "domain": { "lower": [0, 0, 0], "cell_size": 0.02, "resolution": [24, 8, 16] },
            "sources": [ { "type": "box", "min": [0.02, 0.02, 0.02], "max": [0.16, 0.14, 0.2] } ],
            "obstacles": [
                { "type": "box", "min": [0.3, 0.02, 0.02], "max": [0.36, 0.14, 0.08] },
                { "type": "sphere", "center": [0, 0, 0], "radius": 0.03,
                  "keyframes": [ { "time": 0, "translate": [0.1, 0.08, 0.12] },
                                 { "time": 1, "translate": [0.4, 0.08, 0.12] } ] }
            ],
            "seed": 3,
            "time": { "fps": 30, "frames": 6 },
            "solver": { "min_substeps": 12 }
        }"#;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
        surge::scene::load_str(json, &dir.join("alloc.json"), &dir)
            .expect("scene loads")
            .scene
    };
    let obstacle_particles = surge::sources::seed_particles(&with_obstacles, &[]);
    // Both free surfaces (the ghost fluid reads the obstacles' kernel share).
    for surface in [FreeSurface::Staircase, FreeSurface::GhostFluid] {
        let mut with_obstacles = with_obstacles.clone();
        with_obstacles.solver.free_surface = surface;
        for threads in [1, 2] {
            let counts = frame_allocations(&with_obstacles, &obstacle_particles, threads);
            eprintln!(
                "obstacles, {surface:?}, {threads} thread(s): (substeps, allocations) per frame {counts:?}"
            );
            assert!(counts.iter().all(|&(n, _)| n == 12), "{counts:?}");
            if threads == 1 {
                // One thread: nothing but the report's list, in every frame (as without
                // obstacles, below).
                assert!(
                    counts.iter().all(|&(_, a)| a == 1),
                    "obstacles, {surface:?}: frames allocated more than their report: {counts:?}"
                );
            }
            // Two threads: the quietest frame (see below).
            let least = counts.iter().map(|&(_, a)| a).min().unwrap();
            assert_eq!(
                least, threads,
                "obstacles, {surface:?}: no frame without allocations in its substeps: {counts:?}"
            );
        }
    }
    for (pc, transfer, surface) in [
        (
            PressurePreconditioner::Mic0,
            Transfer::Flip,
            FreeSurface::Staircase,
        ),
        (
            PressurePreconditioner::Multigrid,
            Transfer::Flip,
            FreeSurface::Staircase,
        ),
        (
            PressurePreconditioner::Mic0,
            Transfer::Apic,
            FreeSurface::Staircase,
        ),
        (
            PressurePreconditioner::Mic0,
            Transfer::Flip,
            FreeSurface::GhostFluid,
        ),
    ] {
        s.solver.pressure_preconditioner = pc;
        s.solver.transfer = transfer;
        s.solver.free_surface = surface;
        for threads in [1, 2] {
            let counts = frame_allocations(&s, &p, threads);
            eprintln!(
                "{pc:?}, {transfer:?}, {threads} thread(s): (substeps, allocations) per frame {counts:?}"
            );
            assert!(counts.iter().all(|&(n, _)| n == 12), "{counts:?}");
            if threads == 1 {
                // One thread: nothing but the report's list, in every frame.
                assert!(
                    counts.iter().all(|&(_, a)| a == 1),
                    "{pc:?}: frames allocated more than their report: {counts:?}"
                );
            } else {
                // Two threads: the report's list plus the one job that keeps the other worker awake
                // during the frame (rayon::scope boxes a spawned job), once per frame; rayon's
                // work-stealing deques and epoch collector may add an allocation now and then, so
                // the claim is checked on the quietest frame, which must have none in its substeps.
                let least = counts.iter().map(|&(_, a)| a).min().unwrap();
                assert_eq!(
                    least, 2,
                    "{pc:?}: no frame without allocations in its substeps: {counts:?}"
                );
            }
        }
    }
}
