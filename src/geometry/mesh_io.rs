//! Reading obstacle meshes: OBJ, PLY and STL into one plain indexed triangle mesh.
//!
//! The readers are well-kept crates: `tobj` for Wavefront OBJ (positions only; materials,
//! normals and texture coordinates are ignored), `ply-rs-bw` for PLY (ASCII and binary, any
//! numeric vertex type, any integer index list named `vertex_indices` or `vertex_index`) and
//! `stl_io` for STL (ASCII and binary, whose vertices are welded by exact position). Polygons
//! with more than three corners are fan-triangulated around their first corner, which is exact
//! for the convex planar polygons exporters write.
//!
//! After reading, [`IndexedMesh::validate`] checks what the signed distance needs: at least one
//! triangle, finite vertices, indices in range, and at least one non-degenerate triangle
//! (degenerate ones, with a repeated corner or zero area, are dropped because they bound no
//! volume). Open, non-manifold, self-intersecting or inconsistently wound meshes are accepted:
//! the signed distance ([`super::mesh_sdf`]) takes its sign from a ray-parity vote that does
//! not trust the winding.
//!
//! A hostile file cannot exhaust memory: the file size is capped at [`MAX_FILE_BYTES`] before
//! anything is parsed, and vertices and triangles at [`MAX_VERTICES`] / [`MAX_TRIANGLES`]
//! while reading (PLY element counts are checked in the header, binary STL's count against the
//! file size).
//!
//! Every error names the file, the problem and the fix ([`MeshError`]).

use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{Property, PropertyAccess, PropertyAccessResult};
use std::io::{BufReader, Cursor};
use std::path::{Path, PathBuf};

/// Largest mesh file read, bytes (1 GiB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most vertices in one mesh.
pub const MAX_VERTICES: usize = 20_000_000;
/// Most triangles in one mesh (after fan triangulation).
pub const MAX_TRIANGLES: usize = 20_000_000;

/// A plain indexed triangle mesh in f64: what every reader returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedMesh {
    /// Vertex positions (file units).
    pub positions: Vec<[f64; 3]>,
    /// Triangles as indices into `positions`.
    pub triangles: Vec<[u32; 3]>,
}

/// A mesh file that cannot be used, with the file, the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    #[error("{}: cannot read the mesh file: {source}; fix: check that the path exists (relative paths resolve against the scene file) and is readable", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: unsupported mesh extension {ext:?}; fix: use a .obj, .ply or .stl file", path.display())]
    UnsupportedExtension { path: PathBuf, ext: String },
    #[error("{}: the file is {size} bytes, more than the {max} byte limit; fix: decimate the mesh", path.display())]
    FileTooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("{}: more than {max} {what}; fix: decimate the mesh", path.display())]
    TooMany {
        path: PathBuf,
        what: &'static str,
        max: usize,
    },
    #[error("{}: not a valid {format} file: {message}; fix: re-export the mesh as {format}", path.display())]
    Parse {
        path: PathBuf,
        format: &'static str,
        message: String,
    },
    #[error("{}: the mesh has no triangles; fix: export the object's faces (not only points or lines)", path.display())]
    Empty { path: PathBuf },
    #[error("{}: vertex {vertex} is {value:?} (not finite); fix: repair or re-export the mesh", path.display())]
    NonFinite {
        path: PathBuf,
        vertex: usize,
        value: [f64; 3],
    },
    #[error("{}: triangle {triangle} uses vertex {index} but the mesh has {vertices} vertices; fix: repair or re-export the mesh", path.display())]
    IndexOutOfRange {
        path: PathBuf,
        triangle: usize,
        index: u64,
        vertices: usize,
    },
    #[error("{}: all {triangles} triangles are degenerate (a repeated corner or zero area); fix: export the object's real faces, or check the export scale", path.display())]
    AllDegenerate { path: PathBuf, triangles: usize },
}

/// The mesh formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshFormat {
    Obj,
    Ply,
    Stl,
}

impl MeshFormat {
    /// The format named by a path's extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<MeshFormat, MeshError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        match ext.as_str() {
            "obj" => Ok(MeshFormat::Obj),
            "ply" => Ok(MeshFormat::Ply),
            "stl" => Ok(MeshFormat::Stl),
            _ => Err(MeshError::UnsupportedExtension {
                path: path.to_path_buf(),
                ext,
            }),
        }
    }
}

/// Reads, validates and cleans (drops degenerate triangles) the mesh at `path`.
pub fn read_mesh(path: &Path) -> Result<IndexedMesh, MeshError> {
    let format = MeshFormat::from_path(path)?;
    let io = |source| MeshError::Io {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(MeshError::FileTooLarge {
            path: path.to_path_buf(),
            size,
            max: MAX_FILE_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    parse_mesh(&bytes, format, path)
}

/// Parses `bytes` as `format`, then validates and cleans; `path` only names the file in errors.
pub fn parse_mesh(bytes: &[u8], format: MeshFormat, path: &Path) -> Result<IndexedMesh, MeshError> {
    let mut mesh = match format {
        MeshFormat::Obj => parse_obj(bytes, path)?,
        MeshFormat::Ply => parse_ply(bytes, path)?,
        MeshFormat::Stl => parse_stl(bytes, path)?,
    };
    mesh.validate(path)?;
    Ok(mesh)
}

fn parse_error(path: &Path, format: &'static str, message: impl ToString) -> MeshError {
    MeshError::Parse {
        path: path.to_path_buf(),
        format,
        message: message.to_string(),
    }
}

fn too_many(path: &Path, what: &'static str, max: usize) -> MeshError {
    MeshError::TooMany {
        path: path.to_path_buf(),
        what,
        max,
    }
}

/// Fan-triangulates one polygon (`poly` holds vertex indices) onto `out`; an index that does not
/// fit u32 is kept out of range (u32::MAX) for [`IndexedMesh::validate`] to report.
fn push_fan(poly: &[i64], out: &mut Vec<[u32; 3]>, path: &Path) -> Result<(), MeshError> {
    let idx = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    for k in 1..poly.len().saturating_sub(1) {
        if out.len() >= MAX_TRIANGLES {
            return Err(too_many(path, "triangles", MAX_TRIANGLES));
        }
        out.push([idx(poly[0]), idx(poly[k]), idx(poly[k + 1])]);
    }
    Ok(())
}

fn parse_obj(bytes: &[u8], path: &Path) -> Result<IndexedMesh, MeshError> {
    let opts = tobj::LoadOptions {
        single_index: false,
        triangulate: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let (models, _materials) = tobj::load_obj_buf(&mut BufReader::new(bytes), &opts, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .map_err(|e| parse_error(path, "OBJ", e))?;
    let mut mesh = IndexedMesh::default();
    let mut poly = Vec::new();
    for m in &models {
        let base = mesh.positions.len() as i64;
        let m = &m.mesh;
        if base as usize + m.positions.len() / 3 > MAX_VERTICES {
            return Err(too_many(path, "vertices", MAX_VERTICES));
        }
        mesh.positions
            .extend(m.positions.chunks_exact(3).map(|c| [c[0], c[1], c[2]]));
        let mut start = 0usize;
        let arities: Vec<u32> = if m.face_arities.is_empty() {
            vec![3; m.indices.len() / 3]
        } else {
            m.face_arities.clone()
        };
        for a in arities {
            let end = (start + a as usize).min(m.indices.len());
            poly.clear();
            poly.extend(m.indices[start..end].iter().map(|&i| i as i64 + base));
            push_fan(&poly, &mut mesh.triangles, path)?;
            start = end;
        }
    }
    Ok(mesh)
}

/// A PLY vertex: x, y, z of any numeric type.
struct PlyVertex([f64; 3]);
/// A PLY face: its index list of any integer type.
struct PlyFace(Vec<i64>);

fn scalar(p: &Property) -> Option<f64> {
    Some(match *p {
        Property::Char(v) => v as f64,
        Property::UChar(v) => v as f64,
        Property::Short(v) => v as f64,
        Property::UShort(v) => v as f64,
        Property::Int(v) => v as f64,
        Property::UInt(v) => v as f64,
        Property::Float(v) => v as f64,
        Property::Double(v) => v,
        _ => return None,
    })
}

impl PropertyAccess for PlyVertex {
    fn new() -> Self {
        PlyVertex([0.0; 3])
    }
    fn set_property(&mut self, name: &str, p: Property) -> PropertyAccessResult {
        let axis = match name {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => return PropertyAccessResult::Ignored,
        };
        match scalar(&p) {
            Some(v) => {
                self.0[axis] = v;
                PropertyAccessResult::Set
            }
            None => PropertyAccessResult::UnsupportedType,
        }
    }
}

impl PropertyAccess for PlyFace {
    fn new() -> Self {
        PlyFace(Vec::new())
    }
    fn set_property(&mut self, name: &str, p: Property) -> PropertyAccessResult {
        if name != "vertex_indices" && name != "vertex_index" {
            return PropertyAccessResult::Ignored;
        }
        let conv = |v: Vec<i64>| v;
        self.0 = match p {
            Property::ListChar(v) => conv(v.into_iter().map(i64::from).collect()),
            Property::ListUChar(v) => conv(v.into_iter().map(i64::from).collect()),
            Property::ListShort(v) => conv(v.into_iter().map(i64::from).collect()),
            Property::ListUShort(v) => conv(v.into_iter().map(i64::from).collect()),
            Property::ListInt(v) => conv(v.into_iter().map(i64::from).collect()),
            Property::ListUInt(v) => conv(v.into_iter().map(i64::from).collect()),
            _ => return PropertyAccessResult::UnsupportedType,
        };
        PropertyAccessResult::Set
    }
}

/// An element nobody reads (skipped).
struct PlyIgnored;
impl PropertyAccess for PlyIgnored {
    fn new() -> Self {
        PlyIgnored
    }
}

fn parse_ply(bytes: &[u8], path: &Path) -> Result<IndexedMesh, MeshError> {
    let err = |e: ply_rs_bw::parser::ParseError| parse_error(path, "PLY", e);
    let vp = Parser::<PlyVertex>::new();
    let fp = Parser::<PlyFace>::new();
    let ip = Parser::<PlyIgnored>::new();
    let mut reader = Reader::new(Cursor::new(bytes));
    let header = vp.read_header(&mut reader).map_err(err)?;
    let mut mesh = IndexedMesh::default();
    for (name, def) in &header.elements {
        // Every element takes at least one byte (ASCII) in the payload.
        if def.count > bytes.len() {
            return Err(parse_error(
                path,
                "PLY",
                format!(
                    "element {name} claims {} entries, more than the file could hold",
                    def.count
                ),
            ));
        }
        match name.as_str() {
            "vertex" => {
                if def.count > MAX_VERTICES {
                    return Err(too_many(path, "vertices", MAX_VERTICES));
                }
                let v = vp.read_payload_for_element(&mut reader, def, &header);
                mesh.positions = v.map_err(err)?.into_iter().map(|v| v.0).collect();
            }
            "face" => {
                if def.count > MAX_TRIANGLES {
                    return Err(too_many(path, "triangles", MAX_TRIANGLES));
                }
                let faces = fp
                    .read_payload_for_element(&mut reader, def, &header)
                    .map_err(err)?;
                for f in faces {
                    push_fan(&f.0, &mut mesh.triangles, path)?;
                }
            }
            _ => {
                ip.read_payload_for_element(&mut reader, def, &header)
                    .map_err(err)?;
            }
        }
    }
    Ok(mesh)
}

fn parse_stl(bytes: &[u8], path: &Path) -> Result<IndexedMesh, MeshError> {
    let err = |e: std::io::Error| parse_error(path, "STL", e);
    let is_ascii = bytes.trim_ascii_start().starts_with(b"solid")
        && bytes.windows(5).take(1024).any(|w| w == b"facet");
    if !is_ascii && bytes.len() >= 84 {
        // Binary: 80-byte header, u32 count, 50 bytes per triangle.
        let n = u32::from_le_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]) as usize;
        if n > MAX_TRIANGLES {
            return Err(too_many(path, "triangles", MAX_TRIANGLES));
        }
        if 84 + 50 * n > bytes.len() {
            return Err(parse_error(
                path,
                "STL",
                format!(
                    "the header says {n} triangles but the file is {} bytes long",
                    bytes.len()
                ),
            ));
        }
    }
    let mut cursor = Cursor::new(bytes);
    let iter = stl_io::create_stl_reader(&mut cursor).map_err(err)?;
    let mut mesh = IndexedMesh::default();
    let mut index = std::collections::HashMap::<[u32; 3], u32>::new();
    for t in iter {
        let t = t.map_err(err)?;
        if mesh.triangles.len() >= MAX_TRIANGLES {
            return Err(too_many(path, "triangles", MAX_TRIANGLES));
        }
        let mut tri = [0u32; 3];
        for (k, v) in t.vertices.iter().enumerate() {
            let key = v.0.map(f32::to_bits);
            let next = mesh.positions.len() as u32;
            tri[k] = *index.entry(key).or_insert(next);
            if tri[k] == next {
                mesh.positions.push(v.0.map(|c| c as f64));
            }
        }
        mesh.triangles.push(tri);
    }
    Ok(mesh)
}

/// Twice the area of a triangle (the length of the edge cross product).
pub fn double_area(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
    let n = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt()
}

pub mod test_meshes;

impl IndexedMesh {
    /// Checks the mesh (see the module docs) and drops degenerate triangles. `path` names the
    /// file in errors.
    pub fn validate(&mut self, path: &Path) -> Result<(), MeshError> {
        let path_buf = || path.to_path_buf();
        if self.triangles.is_empty() {
            return Err(MeshError::Empty { path: path_buf() });
        }
        if let Some((vertex, &value)) = self
            .positions
            .iter()
            .enumerate()
            .find(|(_, p)| !p.iter().all(|c| c.is_finite()))
        {
            return Err(MeshError::NonFinite {
                path: path_buf(),
                vertex,
                value,
            });
        }
        let nv = self.positions.len();
        for (triangle, t) in self.triangles.iter().enumerate() {
            if let Some(&i) = t.iter().find(|&&i| i as usize >= nv) {
                return Err(MeshError::IndexOutOfRange {
                    path: path_buf(),
                    triangle,
                    index: i as u64,
                    vertices: nv,
                });
            }
        }
        let total = self.triangles.len();
        let p = &self.positions;
        self.triangles.retain(|t| {
            t[0] != t[1]
                && t[1] != t[2]
                && t[0] != t[2]
                && double_area(p[t[0] as usize], p[t[1] as usize], p[t[2] as usize]) > 0.0
        });
        if self.triangles.is_empty() {
            return Err(MeshError::AllDegenerate {
                path: path_buf(),
                triangles: total,
            });
        }
        Ok(())
    }

    /// Axis-aligned bounds `(min, max)` of the vertices used by triangles.
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        for t in &self.triangles {
            for &i in t {
                let q = self.positions[i as usize];
                for a in 0..3 {
                    lo[a] = lo[a].min(q[a]);
                    hi[a] = hi[a].max(q[a]);
                }
            }
        }
        (lo, hi)
    }
}

#[cfg(test)]
mod tests;
