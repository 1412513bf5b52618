//! Rigid poses and keyframed rigid motion of obstacles, as exact functions of time.
//!
//! A [`Pose`] maps the body frame to the world: `x_world = translate + R x_body`, where `R` is
//! built from XYZ Euler angles in degrees the way Blender's default "XYZ Euler" mode does: rotate
//! about the world x axis first, then y, then z (`R = Rz Ry Rx`).
//!
//! A [`Motion`] is either one pose or a list of [`Keyframe`]s (strictly increasing times).
//! Between two keys the translation is interpolated linearly and the rotation by spherical linear
//! interpolation (Shoemake, *Animating Rotation with Quaternion Curves*, SIGGRAPH 1985) of the
//! keys' unit quaternions (the shorter way round); before the first key and after the last the
//! pose holds. Every quantity is a closed-form function of `t`, so the pose at any substep is
//! the same whether a run was resumed or not. The velocity of a point `x` fixed to the body is
//! `v + w x (x - c)` with `c` the body origin, `v = dc/dt` constant on each segment and `w` the
//! constant angular velocity `log(q1 q0^-1) / (t1 - t0)` of the slerp (zero while holding).

use nalgebra::{Point3, UnitQuaternion, Vector3};

/// A rigid placement: body frame to world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    pub translate: Vector3<f64>,
    pub rotation: UnitQuaternion<f64>,
}

/// Rotation from XYZ Euler angles in degrees (`R = Rz Ry Rx`).
pub fn euler_xyz_degrees(deg: [f64; 3]) -> UnitQuaternion<f64> {
    let r = deg.map(f64::to_radians);
    UnitQuaternion::from_euler_angles(r[0], r[1], r[2])
}

impl Pose {
    pub fn identity() -> Pose {
        Pose {
            translate: Vector3::zeros(),
            rotation: UnitQuaternion::identity(),
        }
    }

    /// From a translation and XYZ Euler angles in degrees.
    pub fn new(translate: [f64; 3], rotate_deg: [f64; 3]) -> Pose {
        Pose {
            translate: Vector3::from(translate),
            rotation: euler_xyz_degrees(rotate_deg),
        }
    }

    /// Body point to world.
    pub fn to_world(&self, p: [f64; 3]) -> [f64; 3] {
        let q = self.rotation * Point3::from(p) + self.translate;
        [q.x, q.y, q.z]
    }

    /// World point to body.
    pub fn to_body(&self, p: [f64; 3]) -> [f64; 3] {
        let q = self
            .rotation
            .inverse_transform_point(&Point3::from(Vector3::from(p) - self.translate));
        [q.x, q.y, q.z]
    }

    /// Body direction to world.
    pub fn dir_to_world(&self, d: [f64; 3]) -> [f64; 3] {
        let v = self.rotation * Vector3::from(d);
        [v.x, v.y, v.z]
    }

    /// The farthest that moving from this pose to `to` takes a body point within `radius` of
    /// the body origin: `|y_to - y| = |(R_to - R) p + t_to - t| <= |t_to - t| + 2 sin(a / 2)
    /// radius`, `a` the angle of the turn between the two rotations.
    pub fn max_shift(&self, to: &Pose, radius: f64) -> f64 {
        let turn = (to.rotation * self.rotation.inverse()).angle();
        (to.translate - self.translate).norm() + 2.0 * (0.5 * turn).sin().abs() * radius
    }
}

/// One key of a rigid animation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keyframe {
    /// Seconds.
    pub time: f64,
    pub translate: [f64; 3],
    /// XYZ Euler degrees.
    pub rotate_deg: [f64; 3],
}

/// Keyframes that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MotionError {
    #[error("keyframes[{index}].time = {time} is not after keyframes[{}].time = {previous}; fix: list keyframes in strictly increasing time", index - 1)]
    OutOfOrder {
        index: usize,
        time: f64,
        previous: f64,
    },
    #[error("keyframes[{index}] has a value that is not a finite number; fix: give finite numbers")]
    NotFinite { index: usize },
    #[error("keyframes is empty; fix: give at least one keyframe, or none and a fixed transform")]
    Empty,
}

/// How a body moves.
#[derive(Debug, Clone, PartialEq)]
pub enum Motion {
    Static(Pose),
    /// Keys (validated: at least one, strictly increasing finite times) and their quaternions,
    /// each on the same hemisphere as the previous so slerp takes the shorter way.
    Keyframed {
        keys: Vec<Keyframe>,
        rotations: Vec<UnitQuaternion<f64>>,
    },
}

/// A body's velocity field at one time: the velocity of `x` is `linear + angular x (x - centre)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RigidVelocity {
    pub linear: Vector3<f64>,
    pub angular: Vector3<f64>,
    pub centre: Vector3<f64>,
}

impl RigidVelocity {
    pub fn at(&self, p: [f64; 3]) -> [f64; 3] {
        let v = self.linear + self.angular.cross(&(Vector3::from(p) - self.centre));
        [v.x, v.y, v.z]
    }
}

impl Motion {
    /// Validated keyframed motion.
    pub fn keyframed(keys: Vec<Keyframe>) -> Result<Motion, MotionError> {
        if keys.is_empty() {
            return Err(MotionError::Empty);
        }
        for (index, k) in keys.iter().enumerate() {
            let finite = k.time.is_finite()
                && k.translate
                    .iter()
                    .chain(&k.rotate_deg)
                    .all(|v| v.is_finite());
            if !finite {
                return Err(MotionError::NotFinite { index });
            }
            if index > 0 && k.time <= keys[index - 1].time {
                return Err(MotionError::OutOfOrder {
                    index,
                    time: k.time,
                    previous: keys[index - 1].time,
                });
            }
        }
        let mut rotations: Vec<UnitQuaternion<f64>> = Vec::with_capacity(keys.len());
        for k in &keys {
            let mut q = euler_xyz_degrees(k.rotate_deg);
            if let Some(prev) = rotations.last()
                && prev.coords.dot(&q.coords) < 0.0
            {
                q = UnitQuaternion::new_unchecked(-q.into_inner());
            }
            rotations.push(q);
        }
        Ok(Motion::Keyframed { keys, rotations })
    }

    /// Whether the pose changes with time.
    pub fn is_animated(&self) -> bool {
        matches!(self, Motion::Keyframed { keys, .. } if keys.len() > 1)
    }

    /// The segment holding `t`: (index of its first key, fraction in [0, 1)); `None` while
    /// holding the first or last key (then the index is that key). A key's own time belongs to
    /// the segment it starts, the first key's too: a substep starting at a key moves the solid
    /// along the segment after it, so that is the velocity its boundary must have. (Until
    /// session 32 the first key's time held the key, so a solid keyframed from `t = 0` stood
    /// still in the first substep's boundary condition while its pose moved: water carried
    /// in a container moving from `t = 0` was stopped against its walls,
    /// `tests/obstacles_carried.rs`.)
    fn segment(keys: &[Keyframe], t: f64) -> (usize, Option<f64>) {
        let n = keys.len();
        if n == 1 || t < keys[0].time {
            return (0, None);
        }
        if t >= keys[n - 1].time {
            return (n - 1, None);
        }
        let i = keys.partition_point(|k| k.time <= t) - 1;
        let s = (t - keys[i].time) / (keys[i + 1].time - keys[i].time);
        (i, Some(s))
    }

    /// The pose at time `t` (seconds).
    pub fn pose(&self, t: f64) -> Pose {
        match self {
            Motion::Static(p) => *p,
            Motion::Keyframed { keys, rotations } => match Self::segment(keys, t) {
                (i, None) => Pose {
                    translate: Vector3::from(keys[i].translate),
                    rotation: rotations[i],
                },
                (i, Some(s)) => {
                    let (a, b) = (
                        Vector3::from(keys[i].translate),
                        Vector3::from(keys[i + 1].translate),
                    );
                    Pose {
                        translate: a + (b - a) * s,
                        rotation: rotations[i]
                            .try_slerp(&rotations[i + 1], s, 1e-12)
                            .unwrap_or(rotations[i]),
                    }
                }
            },
        }
    }

    /// The rigid velocity field at time `t` (zero while holding a key).
    pub fn velocity(&self, t: f64) -> RigidVelocity {
        let pose = self.pose(t);
        let mut v = RigidVelocity {
            linear: Vector3::zeros(),
            angular: Vector3::zeros(),
            centre: pose.translate,
        };
        if let Motion::Keyframed { keys, rotations } = self
            && let (i, Some(_)) = Self::segment(keys, t)
        {
            let dt = keys[i + 1].time - keys[i].time;
            let (a, b) = (
                Vector3::from(keys[i].translate),
                Vector3::from(keys[i + 1].translate),
            );
            v.linear = (b - a) / dt;
            v.angular = (rotations[i + 1] * rotations[i].inverse()).scaled_axis() / dt;
        }
        v
    }

    /// The rigid velocity that moves the solid from its pose at `t0` to its pose at `t1`
    /// (seconds, `t1 > t0`) in a straight line: the origin's mean velocity, `(T1 - T0) /
    /// (t1 - t0)`, and the relative turn `R1 R0^-1` as an angular velocity about it. A point of
    /// the solid moves by it exactly where the solid only translates (and to second order in
    /// the turn otherwise). Where the step crosses keys it is their mean, not the velocity at
    /// `t0`: a boundary condition from it keeps the liquid beside a wall that accelerates
    /// through the step with the wall (`sim::solids::wall_faces`). `t1 <= t0`: the velocity at
    /// `t0`.
    pub fn mean_velocity(&self, t0: f64, t1: f64) -> RigidVelocity {
        if t1 <= t0 || !self.is_animated() {
            return self.velocity(t0);
        }
        let (a, b) = (self.pose(t0), self.pose(t1));
        let dt = t1 - t0;
        RigidVelocity {
            linear: (b.translate - a.translate) / dt,
            angular: (b.rotation * a.rotation.inverse()).scaled_axis() / dt,
            centre: a.translate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() < tol)
    }

    #[test]
    fn euler_xyz_is_x_first_then_y_then_z() {
        // 90 degrees about x then 90 about z: x axis -> (after x) x -> (after z) y;
        // y axis -> (after x) z -> (after z) z.
        let p = Pose::new([0.0; 3], [90.0, 0.0, 90.0]);
        assert!(close(p.to_world([1.0, 0.0, 0.0]), [0.0, 1.0, 0.0], 1e-12));
        assert!(close(p.to_world([0.0, 1.0, 0.0]), [0.0, 0.0, 1.0], 1e-12));
        let q = Pose::new([1.0, 2.0, 3.0], [10.0, -20.0, 30.0]);
        let x = [0.3, -0.7, 1.1];
        assert!(close(q.to_body(q.to_world(x)), x, 1e-12));
    }

    /// The mean velocity over a step moves the solid's points from their place at its start
    /// to their place at its end: across a key where the velocity changes (1 m/s, then 3), the
    /// translation's mean, not the start's; within a segment, the segment's velocity; for a
    /// zero-length step, the velocity at its start.
    #[test]
    fn mean_velocity_carries_the_solid_over_the_step() {
        let key = |time: f64, x: f64, deg: f64| Keyframe {
            time,
            translate: [x, 0.0, 0.0],
            rotate_deg: [0.0, 0.0, deg],
        };
        let m = Motion::keyframed(vec![
            key(0.0, 0.0, 0.0),
            key(1.0, 1.0, 0.0),
            key(2.0, 4.0, 0.0),
        ])
        .unwrap();
        let v = m.mean_velocity(0.75, 1.25);
        assert!(close(v.linear.into(), [2.0, 0.0, 0.0], 1e-12), "{v:?}");
        assert!(close(
            m.mean_velocity(1.2, 1.6).linear.into(),
            [3.0, 0.0, 0.0],
            1e-12
        ));
        assert_eq!(m.mean_velocity(0.5, 0.5), m.velocity(0.5));
        // Turning: within a segment the instantaneous angular velocity.
        let r = Motion::keyframed(vec![key(0.0, 0.0, 0.0), key(1.0, 0.0, 90.0)]).unwrap();
        let w = r.mean_velocity(0.25, 0.5).angular;
        assert!(
            close(w.into(), r.velocity(0.25).angular.into(), 1e-12),
            "{w:?}"
        );
    }

    #[test]
    fn keyframes_interpolate_and_hold() {
        let m = Motion::keyframed(vec![
            Keyframe {
                time: 1.0,
                translate: [0.0; 3],
                rotate_deg: [0.0; 3],
            },
            Keyframe {
                time: 3.0,
                translate: [2.0, 0.0, 0.0],
                rotate_deg: [0.0, 0.0, 90.0],
            },
        ])
        .unwrap();
        assert!(m.is_animated());
        let mid = m.pose(2.0);
        assert!(close(mid.translate.into(), [1.0, 0.0, 0.0], 1e-12));
        // Half way through a 90 degree turn about z: 45 degrees.
        assert!((mid.rotation.angle() - std::f64::consts::FRAC_PI_4).abs() < 1e-12);
        assert_eq!(m.pose(0.0), m.pose(1.0));
        assert_eq!(m.pose(9.0), m.pose(3.0));
        let v = m.velocity(2.0);
        assert!(close(v.linear.into(), [1.0, 0.0, 0.0], 1e-12));
        assert!(close(
            v.angular.into(),
            [0.0, 0.0, std::f64::consts::PI / 4.0],
            1e-12
        ));
        // A point one unit from the centre along x moves with v + w x r.
        let c: [f64; 3] = mid.translate.into();
        let u = v.at([c[0] + 1.0, c[1], c[2]]);
        assert!(
            close(u, [1.0, std::f64::consts::PI / 4.0, 0.0], 1e-12),
            "{u:?}"
        );
        assert_eq!(m.velocity(5.0).linear, Vector3::zeros());
        // At a key's own time the velocity is the segment's the key starts (a substep starting
        // there moves along it), the first key's too; before the first key and from the last
        // on, held: zero.
        assert!(close(m.velocity(1.0).linear.into(), [1.0, 0.0, 0.0], 1e-12));
        assert_eq!(m.velocity(1.0 - 1e-9).linear, Vector3::zeros());
        assert_eq!(m.velocity(3.0).linear, Vector3::zeros());
        // The velocity matches a finite difference of the pose of a body point.
        let x = [0.4, 0.2, -0.1];
        let dt = 1e-6;
        let fd = [0, 1, 2].map(|k| {
            (m.pose(2.3 + dt).to_world(x)[k] - m.pose(2.3 - dt).to_world(x)[k]) / (2.0 * dt)
        });
        assert!(
            close(m.velocity(2.3).at(m.pose(2.3).to_world(x)), fd, 1e-6),
            "{fd:?}"
        );
    }

    #[test]
    fn slerp_takes_the_short_way_round() {
        // 170 to -170 degrees about z is a 20 degree turn, not 340.
        let m = Motion::keyframed(vec![
            Keyframe {
                time: 0.0,
                translate: [0.0; 3],
                rotate_deg: [0.0, 0.0, 170.0],
            },
            Keyframe {
                time: 1.0,
                translate: [0.0; 3],
                rotate_deg: [0.0, 0.0, -170.0],
            },
        ])
        .unwrap();
        let w = m.velocity(0.5).angular;
        assert!((w.norm() - 20f64.to_radians()).abs() < 1e-9, "{w}");
        let mid = m.pose(0.5).to_world([1.0, 0.0, 0.0]);
        assert!(close(mid, [-1.0, 0.0, 0.0], 1e-9), "{mid:?}");
    }

    #[test]
    fn bad_keyframes_are_refused() {
        let k = |time| Keyframe {
            time,
            translate: [0.0; 3],
            rotate_deg: [0.0; 3],
        };
        let e = Motion::keyframed(vec![k(0.0), k(1.0), k(1.0)]).unwrap_err();
        assert_eq!(
            e,
            MotionError::OutOfOrder {
                index: 2,
                time: 1.0,
                previous: 1.0
            }
        );
        assert!(
            e.to_string()
                .contains("keyframes[2].time = 1 is not after keyframes[1].time")
        );
        assert_eq!(
            Motion::keyframed(vec![k(f64::NAN)]).unwrap_err(),
            MotionError::NotFinite { index: 0 }
        );
        assert_eq!(Motion::keyframed(vec![]).unwrap_err(), MotionError::Empty);
        assert!(!Motion::keyframed(vec![k(0.5)]).unwrap().is_animated());
    }
}
