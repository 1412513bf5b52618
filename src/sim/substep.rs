//! One substep of the PIC/FLIP pipeline, the stages in the order the module docs of
//! [`super`] list them: sort, splat, labels and forces (with the ghost fluid's surface placed
//! first), pressure projection, the density correction, extrapolation, grid-to-particle
//! transfer with advection, emission and the thinning of crowded cells. Each stage's timing
//! goes into the frame's [`FrameReport`].

use super::*;
/// The substep's interval `(t_start, t_end]`, s (emission, volume correction), each end
/// computed so that it equals the neighbouring substep's bit for bit.
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub(super) t_start: f64,
    pub(super) t_end: f64,
}

/// One substep over `at`: the particles drift for `dt[0]` through the velocity kicked by gravity
/// and pressure for `dt[1]`, `(dt_prev + dt) / 2` (variable-step leapfrog, second order: issue
/// 19); `umax` is the largest particle speed at its start;
/// `first`: the frame's first substep (the pressure solve starts from zero). The density
/// correction runs where [`density::correction_due`] says for `at`.
pub(super) fn substep(
    ws: &mut Workspace,
    scene: &SimSettings,
    [dt, kick]: [f32; 2],
    umax: f64,
    first: bool,
    at: Step,
    report: &mut FrameReport,
) {
    let d = ws.dims;
    let secs = &mut report.seconds;
    let (time, end) = (at.t_start, at.t_end);

    let t = Instant::now();
    ws.crowding.sort(&d, &mut ws.sorted);
    secs.sort += t.elapsed().as_secs_f64();

    // Without the ghost fluid (which splats the density into the splat's scratch before the
    // forces) the splat's normalisation runs in the forces' pass, which reads the sums: one
    // pass over the face grids less, the same values (`forces::apply_forces_from_sums`).
    let ghost = !ws.pressure.fill.is_empty();
    let t = Instant::now();
    if ghost {
        transfer::splat(&d, &ws.sorted, &mut ws.vel, &mut ws.disp);
    } else {
        transfer::splat_sums(&d, &ws.sorted, &mut ws.disp);
    }
    secs.splat += t.elapsed().as_secs_f64();
    let t = Instant::now();
    transfer::label_cells(&d, &ws.sorted, &mut ws.labels);
    ws.emission.open_faces(&d, &mut ws.labels);
    ws.solids.label_solid_cells(&d, time, &mut ws.labels);
    if ghost {
        // The obstacles' share of the density kernel, at the fluid cells and their neighbours.
        let share = ws.solids.surface_share(&d, time, &ws.labels);
        let (fill, labels) = (&mut ws.pressure.fill, &mut ws.labels);
        let rho = split_density(&d, &mut ws.disp).1;
        let (sp, mark) = (&ws.sorted, &mut ws.sliver);
        ghost_fluid::place_surface(&d, sp, share, rho, fill, labels, mark);
    }
    forces::classify_faces(&d, &ws.labels, &mut ws.kinds);
    ws.solids.close_faces(&mut ws.kinds);
    ws.solids
        .seal_thin_walls(&d, &ws.sorted, &ws.labels, &mut ws.kinds);
    let g = scene.gravity.map(|x| x as f32);
    if ghost {
        forces::apply_forces(&mut ws.vel, &mut ws.old, &ws.kinds, g, kick);
    } else {
        forces::apply_forces_from_sums(&ws.disp, &mut ws.vel, &mut ws.old, &ws.kinds, g, kick);
    }
    ws.solids
        .wall_velocities(&d, (time, end), &ws.labels, &ws.kinds, &ws.old, &mut ws.vel);
    // The emitters' velocity enters the projection (and is imposed again after it).
    ws.emission
        .impose_velocity(&d, &ws.kinds, &mut ws.vel, (at.t_start, at.t_end));
    secs.forces += t.elapsed().as_secs_f64();

    let t = Instant::now();
    let stats = ws.pressure.project(
        &d,
        &ws.labels,
        &ws.kinds,
        &mut ws.vel,
        scene.solver.pressure_tolerance,
        scene.solver.pressure_max_iterations,
        kick,
        !first,
        ws.solids.faces(),
    );
    // Tangential friction of walls and obstacles (scenes that ask for it only).
    let rough = ws.solids.friction_faces(scene.domain.friction.to_f32());
    let (vel, old, layer) = (&mut ws.vel, &mut ws.old, &mut ws.wall_layer);
    friction::apply(&d, &ws.labels, &ws.kinds, vel, old, layer, rough, kick);
    ws.solids.unseal_thin_walls(&d);
    secs.pressure += t.elapsed().as_secs_f64();
    let t = Instant::now();
    ws.emission
        .impose_velocity(&d, &ws.kinds, &mut ws.vel, (at.t_start, at.t_end));
    secs.emit += t.elapsed().as_secs_f64();

    let t = Instant::now();
    // The density correction, measured and applied where the particles were splatted (the
    // sort and the pressure matrix are valid there), before they move: applied after the
    // advection, its displacement would land up to `cfl` cells away from where it was
    // measured, which in large substeps stirred the liquid (issue 19).
    let strength = scene.solver.volume_correction as f32;
    let solver = &scene.solver;
    let due = density::correction_due(
        solver.volume_correction,
        solver.volume_correction_interval,
        at.t_start,
        at.t_end,
    );
    let correct = ws.density_correction && due && strength > 0.0;
    let mut density_iterations = 0;
    // How far the density correction moved any particle (bounds the containment's work).
    let mut moved = Some(0.0);
    if correct {
        // With the ghost fluid the density was splatted before the projection, at these
        // positions.
        let (faces, rho) = split_density(&d, &mut ws.disp);
        if !ghost {
            density::splat_density(&d, &ws.sorted, rho);
        }
        let st = ws.pressure.density_displacement(
            &d,
            &ws.labels,
            &ws.kinds,
            rho,
            ws.solids.kernel_share(&d, time, &ws.labels),
            faces,
            density::TOLERANCE,
            density::MAX_ITERATIONS.min(scene.solver.pressure_max_iterations),
        );
        density_iterations = st.iterations;
        moved = ws.solids.move_bound(&d, &ws.disp, strength as f64);
        ws.solids
            .remember(&d, &ws.sorted, (time, time), moved.map(|m| (0.0, m)));
        advect::displace(&d, &mut ws.sorted, &ws.disp, strength);
        ws.solids.hold(&d, time, &mut ws.sorted, false);
    }
    secs.density += t.elapsed().as_secs_f64();

    let t = Instant::now();
    // The FLIP change (formed by the extrapolator's first pass), then both grids extrapolated
    // by enough layers for this substep's reach.
    let gn = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt() as f64;
    let reach = (umax + gn * dt as f64) * dt as f64 / d.h as f64;
    let max_layers = d.n.iter().copied().max().unwrap_or(1) as f64;
    // Grid velocity is sampled at the particle (a fluid cell) and at the RK2 midpoint, at most
    // reach / 2 cells away; one more layer covers the interpolation stencil.
    let layers = ((0.5 * reach).ceil() + 1.0).min(max_layers) as u32;
    ws.extrapolator.extrapolate(
        &d,
        &ws.labels,
        &ws.kinds,
        &mut ws.vel,
        &mut ws.old,
        layers,
        ws.solids.inner_velocities(),
    );
    secs.extrapolate += t.elapsed().as_secs_f64();

    let t = Instant::now();
    let flip = scene.solver.flip_ratio as f32;
    let step = ws.solids.move_bound(&d, &ws.vel, dt as f64);
    ws.solids
        .remember(&d, &ws.sorted, (time, end), moved.zip(step));
    if ws.sorted.affine {
        apic::gather_and_advect(&d, &mut ws.sorted, &ws.vel, dt);
    } else {
        if ws.wall_layer.active() {
            let sp = &mut ws.sorted;
            friction::rub_particles(&d, &sp.pos, &mut sp.vel, &ws.wall_layer);
        }
        transfer::gather_and_advect(&d, &mut ws.sorted, &ws.vel, &ws.old, flip, dt);
    }
    ws.solids.hold(&d, end, &mut ws.sorted, true);
    secs.transfer += t.elapsed().as_secs_f64();

    let t = Instant::now();
    ws.emission
        .after_substep(&d, &mut ws.sorted, at.t_start, at.t_end);
    secs.emit += t.elapsed().as_secs_f64();

    // Crowded cells thinned (and the particles sorted for the next substep).
    let t = Instant::now();
    let salt = [scene.seed, end.to_bits()];
    let most = scene.solver.max_particles_per_cell;
    ws.crowding
        .thin(&d, &mut ws.sorted, most, salt, ws.solids.room());
    secs.sort += t.elapsed().as_secs_f64();

    ws.last_solve = stats;
    report.substeps += 1;
    report.pressure_iterations_max = report.pressure_iterations_max.max(stats.iterations);
    report.pressure_iterations_total += stats.iterations;
    report.pressure_residual_max = report.pressure_residual_max.max(stats.residual);
    report.substep_reports.push(SubstepReport {
        dt: dt as f64,
        pressure_iterations: stats.iterations,
        pressure_residual: stats.residual,
        fluid_cells: stats.unknowns,
        density_iterations,
    });
}
