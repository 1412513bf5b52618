//! Bad `obstacles` input through the real binary, one test per case (exit status 1, the file,
//! the field and a fix in the message, the previous output folder untouched: see
//! `common::inputs::expect_failure`).

mod common;
use common::inputs::*;

/// The domain is [0, 0.6]^3 with a 0.1 m wall layer; the box source fills [0.1, 0.3]^3.
fn with_obstacle(obstacle: &str) -> String {
    native(&format!(r#""sources": [{BOX}], "obstacles": [{obstacle}]"#))
}

const TRIANGLE: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

#[test]
fn mesh_file_missing() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "nothere.obj"}"#),
        &[],
        &[
            "`obstacles[0].path`",
            "nothere.obj",
            "cannot read the mesh file",
            "relative paths",
        ],
    );
}

#[test]
fn mesh_extension_unsupported() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "m.fbx"}"#),
        &[("m.fbx", TRIANGLE)],
        &[
            "`obstacles[0].path`",
            "unsupported mesh extension",
            ".obj, .ply or .stl",
        ],
    );
}

#[test]
fn mesh_empty() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "m.obj"}"#),
        &[("m.obj", "v 0 0 0\nv 1 0 0\n")],
        &["`obstacles[0].path`", "no triangles"],
    );
}

#[test]
fn mesh_vertex_not_finite() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "m.obj"}"#),
        &[("m.obj", "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n")],
        &["`obstacles[0].path`", "not finite", "repair or re-export"],
    );
}

#[test]
fn mesh_index_out_of_range() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "m.ply"}"#),
        &[(
            "m.ply",
            "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n",
        )],
        &["`obstacles[0].path`", "vertex 7", "3 vertices"],
    );
}

#[test]
fn mesh_only_degenerate_triangles() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "mesh", "path": "m.obj"}"#),
        &[("m.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\nf 1 1 2\n")],
        &["`obstacles[0].path`", "degenerate"],
    );
}

#[test]
fn obstacle_outside_the_domain() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "sphere", "center": [5, 5, 5], "radius": 0.1}"#),
        &[],
        &[
            "`obstacles[0]`",
            "entirely outside the domain",
            "move it into the domain",
        ],
    );
}

#[test]
fn keyframes_out_of_order() {
    expect_failure(
        "s.json",
        &with_obstacle(
            r#"{"type": "box", "min": [0.4, 0.4, 0.1], "max": [0.5, 0.5, 0.3],
                "keyframes": [{"time": 1.0}, {"time": 0.5}]}"#,
        ),
        &[],
        &["`obstacles[0].keyframes`", "not after", "increasing time"],
    );
}

#[test]
fn missing_shape_field() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "sphere", "center": [0.4, 0.4, 0.4]}"#),
        &[],
        &["`obstacles[0].radius`", "is missing", "add `radius`"],
    );
}

#[test]
fn obstacle_covers_a_whole_source() {
    expect_failure(
        "s.json",
        &with_obstacle(r#"{"type": "box", "min": [0.05, 0.05, 0.05], "max": [0.35, 0.35, 0.35]}"#),
        &[],
        &["`sources[0]`", "obstacles[0]", "move the source"],
    );
}
