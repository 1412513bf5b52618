//! The tutorial's text particle files: `.in` inputs and `.part` frames.
//!
//! Layout: line 1 is the particle count N, then N lines `x y z vx vy vz`, single spaces, `\n`
//! line ends, each number printed like C's `printf("%g")` (6 significant digits, trailing zeros
//! removed, exponent form `1.56125e-17` below 1e-4 or from 1e6 up). surge keeps particles as f32;
//! a value is widened to f64 before formatting, exactly as C's varargs promotion does, so a file
//! the tutorial wrote and the same particles written by surge are byte-identical.
//!
//! File names come from a printf pattern with one integer conversion (`fluid.%03d.part`,
//! `output.%04d.txt`, `f%d`, `%5d`, `%-4d`, `%%` for a literal percent sign).

use crate::error::InputError;
use crate::geometry::Domain;
use crate::particles::{MAX_ACCELERATION_OR_SPEED, MAX_PARTICLES, Particles};
use std::fmt::Write as _;
use std::path::Path;

/// Formats `v` like C's `printf("%g", v)` (precision 6).
pub fn format_g(v: f64) -> String {
    let mut s = String::new();
    push_g(&mut s, v);
    s
}

/// Appends `v` formatted like C's `printf("%g", v)` (precision 6).
pub fn push_g(out: &mut String, v: f64) {
    const P: i32 = 6;
    if v.is_nan() {
        out.push_str(if v.is_sign_negative() { "-nan" } else { "nan" });
        return;
    }
    if v.is_infinite() {
        out.push_str(if v < 0.0 { "-inf" } else { "inf" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // The exponent X that `%e` with precision P-1 would print (after rounding). Rust's
    // formatting rounds the exact binary value half-to-even, like glibc's printf. Written
    // straight into `out` (no allocation), then rewritten in the form %g picks.
    let start = out.len();
    let _ = write!(out, "{:.*e}", (P - 1) as usize, v);
    let e_pos = start + out[start..].rfind('e').expect("LowerExp has an exponent");
    let x: i32 = out[e_pos + 1..]
        .parse()
        .expect("LowerExp exponent is an integer");
    if (-4..P).contains(&x) {
        out.truncate(start);
        let _ = write!(out, "{:.*}", (P - 1 - x) as usize, v);
        strip_zeros_in_place(out, start);
    } else {
        out.truncate(e_pos);
        strip_zeros_in_place(out, start);
        out.push('e');
        out.push(if x < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", x.unsigned_abs());
    }
}

/// Removes trailing zeros after a decimal point in `out[start..]`, and the point itself if
/// nothing follows it.
fn strip_zeros_in_place(out: &mut String, start: usize) {
    if out[start..].contains('.') {
        while out.ends_with('0') {
            out.pop();
        }
        if out.ends_with('.') {
            out.pop();
        }
    }
}

/// The text of a `.part` frame (or `.in` file) holding `particles`, in their order.
/// Blocks of particles are formatted in parallel and joined in order.
pub fn encode(particles: &Particles) -> String {
    use rayon::prelude::*;
    const BLOCK: usize = 4096;
    let n = particles.len();
    let blocks: Vec<String> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut out = String::with_capacity(BLOCK * 48);
            for i in b * BLOCK..((b + 1) * BLOCK).min(n) {
                let p = particles.position(i);
                let v = particles.velocity(i);
                for (k, value) in p.iter().chain(v.iter()).enumerate() {
                    if k > 0 {
                        out.push(' ');
                    }
                    push_g(&mut out, *value as f64);
                }
                out.push('\n');
            }
            out
        })
        .collect();
    let mut out = String::with_capacity(16 + blocks.iter().map(String::len).sum::<usize>());
    let _ = writeln!(out, "{n}");
    for b in &blocks {
        out.push_str(b);
    }
    out
}

/// One integer conversion of a printf pattern: flags, width.
#[derive(Debug, Clone, PartialEq)]
struct IntSpec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    width: usize,
}

/// A validated printf file-name pattern with exactly one integer conversion.
#[derive(Debug, Clone, PartialEq)]
pub struct NamePattern {
    prefix: String,
    spec: IntSpec,
    suffix: String,
}

impl NamePattern {
    /// Parses `pattern`; the error says what is wrong in words a user can act on.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("the pattern is empty".into());
        }
        let shown = crate::error::quote(pattern);
        if pattern.chars().count() > 200 {
            return Err(format!(
                "`{shown}` is too long (at most 200 characters: file systems allow 255 bytes per name)"
            ));
        }
        if pattern.chars().any(char::is_control) {
            return Err(format!(
                "`{shown}` holds control characters (a NUL byte, a newline)"
            ));
        }
        if pattern.contains('/') || pattern.contains('\\') {
            let pattern = &shown;
            return Err(format!(
                "`{pattern}` contains a path separator; it must be a plain file name (frames are written into the output folder)"
            ));
        }
        let mut prefix = String::new();
        let mut suffix = String::new();
        let mut spec = None;
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            let target = if spec.is_none() {
                &mut prefix
            } else {
                &mut suffix
            };
            if c != '%' {
                target.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                target.push('%');
                continue;
            }
            let mut s = IntSpec {
                left: false,
                zero: false,
                plus: false,
                space: false,
                width: 0,
            };
            while let Some(&f) = chars.peek() {
                match f {
                    '-' => s.left = true,
                    '0' => s.zero = true,
                    '+' => s.plus = true,
                    ' ' => s.space = true,
                    _ => break,
                }
                chars.next();
            }
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                s.width = s.width * 10 + d as usize;
                if s.width > 64 {
                    return Err(format!("`{pattern}`: field width above 64"));
                }
                chars.next();
            }
            match chars.next() {
                Some('d' | 'i' | 'u') => {}
                Some(other) => {
                    return Err(format!(
                        "`{pattern}`: conversion `%{other}` is not an integer conversion; use `%d` (or `%03d`, `%4d`...) for the frame number"
                    ));
                }
                None => return Err(format!("`{pattern}` ends inside a `%` conversion")),
            }
            if spec.is_some() {
                return Err(format!(
                    "`{pattern}` has more than one `%d` conversion; it takes exactly one, the frame number"
                ));
            }
            spec = Some(s);
        }
        match spec {
            Some(spec) => Ok(Self {
                prefix,
                spec,
                suffix,
            }),
            None => Err(format!(
                "`{pattern}` has no `%d` conversion for the frame number (e.g. `fluid.%03d.part`)"
            )),
        }
    }

    /// The file name of `frame`.
    pub fn name(&self, frame: u32) -> String {
        let s = &self.spec;
        let mut digits = frame.to_string();
        if s.plus {
            digits.insert(0, '+');
        } else if s.space {
            digits.insert(0, ' ');
        }
        let pad = s.width.saturating_sub(digits.len());
        let mut out = self.prefix.clone();
        if s.left {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if s.zero {
            let sign_len = usize::from(s.plus || s.space);
            out.push_str(&digits[..sign_len]);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(&digits[sign_len..]);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&digits);
        }
        out.push_str(&self.suffix);
        out
    }

    /// True when `file_name` is this pattern's name of some frame; returns that frame.
    pub fn frame_of(&self, file_name: &str) -> Option<u32> {
        let rest = file_name.strip_prefix(&self.prefix)?;
        let mid = rest.strip_suffix(&self.suffix)?;
        let f: u32 = mid.trim().trim_start_matches('+').parse().ok()?;
        (self.name(f) == file_name).then_some(f)
    }
}

/// The longest line a particle file may have, bytes: six `%g` numbers take at most 80; the cap
/// keeps memory bounded when a file is not a particle file (`/dev/zero`, a binary dump).
pub const MAX_PARTICLE_LINE: usize = 1024;

/// Bytes a particle line takes at most in practice (six `%g` numbers and their spaces take
/// under 100): the file's size divided by this is a lower bound on its particles, checked
/// against the memory budget before the file is read.
pub const LINE_BYTES_ESTIMATE: u64 = 100;

/// Reads a particle file (`N`, then N lines `x y z vx vy vz`), streamed line by line, and checks
/// that every number is finite, the count line matches the lines that follow, and every
/// particle lies in `domain`'s liquid region (inside the one-cell wall layer). The count line is
/// checked against the memory the run would need before any particle is read. Errors name the
/// line and quote at most 80 characters of it.
pub fn read_particle_file(path: &Path, domain: &Domain) -> Result<Particles, InputError> {
    let file = std::fs::File::open(path).map_err(|e| {
        InputError::file(
            path,
            format!("cannot read the particle file: {e}"),
            "check the path (relative paths: see README.md) and that it is a text file",
        )
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(InputError::file(
            path,
            "is a folder, not a particle file",
            "give the particle file itself (a text file: the count, then `x y z vx vy vz` lines)",
        ));
    }
    let cells: f64 = domain.resolution.iter().map(|&n| n as f64).product();
    let budget = crate::particles::particle_budget(cells);
    // The memory estimate from the file's size, before any byte is read: a particle line
    // (six `%g` numbers) takes under LINE_BYTES_ESTIMATE bytes, so a file this large holds at
    // least size / LINE_BYTES_ESTIMATE particles (or is not a particle file).
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let at_least = size / LINE_BYTES_ESTIMATE;
    if at_least > budget as u64 {
        let gb = at_least as f64 * crate::particles::BYTES_PER_PARTICLE / (1u64 << 30) as f64;
        return Err(InputError::file(
            path,
            format!(
                "the particle file is {:.1} GB: at under {LINE_BYTES_ESTIMATE} bytes a particle line that is at least {at_least} particles, about {gb:.1} GB of memory, more than this machine has room for (about {budget} particles); refused without reading it",
                size as f64 / (1u64 << 30) as f64
            ),
            "use fewer particles (or run on a machine with more memory); a particle file is the count, then one short line `x y z vx vy vz` per particle",
        ));
    }
    parse_particles(
        std::io::BufReader::new(file),
        path,
        budget,
        Some(domain.liquid_region()),
    )
}

/// Parses a particle file's text; `path` names it in errors.
pub fn parse_particle_text(text: &str, path: &Path) -> Result<Particles, InputError> {
    parse_particles(text.as_bytes(), path, MAX_PARTICLES, None)
}

/// One line at a time, at most [`MAX_PARTICLE_LINE`] bytes each.
struct Lines<R> {
    reader: R,
    path: std::path::PathBuf,
    number: usize,
    buf: Vec<u8>,
}

impl<R: std::io::BufRead> Lines<R> {
    /// The next non-blank line, trimmed, with its 1-based number.
    fn next(&mut self) -> Result<Option<(usize, String)>, InputError> {
        use std::io::{BufRead as _, Read as _};
        loop {
            self.buf.clear();
            let n = (&mut self.reader)
                .take(MAX_PARTICLE_LINE as u64 + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| {
                    InputError::file(
                        &self.path,
                        format!("cannot read the particle file: {e}"),
                        "check that it is a readable text file",
                    )
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.number += 1;
            if self.buf.len() > MAX_PARTICLE_LINE && self.buf.last() != Some(&b'\n') {
                let head = String::from_utf8_lossy(&self.buf[..MAX_PARTICLE_LINE]);
                return Err(InputError::line(
                    &self.path,
                    self.number,
                    format!(
                        "the line is longer than {MAX_PARTICLE_LINE} bytes (a particle line is six numbers, under 100): `{}`",
                        crate::error::quote(&head)
                    ),
                    "give a particle text file: the count on line 1, then one line `x y z vx vy vz` per particle",
                ));
            }
            let mut bytes = &self.buf[..];
            if self.number == 1 {
                bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
            }
            let text = std::str::from_utf8(bytes).map_err(|_| {
                InputError::line(
                    &self.path,
                    self.number,
                    format!(
                        "not UTF-8 text: `{}`",
                        crate::error::quote(&String::from_utf8_lossy(bytes))
                    ),
                    "give a particle text file (ASCII numbers), not a binary file",
                )
            })?;
            let t = text.trim();
            if !t.is_empty() {
                return Ok(Some((self.number, t.to_string())));
            }
        }
    }
}

/// Parses particle text from `reader`: at most `budget` particles (the count line is checked
/// first), every particle inside `region` when given (`[lower, upper]` corners).
fn parse_particles<R: std::io::BufRead>(
    reader: R,
    path: &Path,
    budget: usize,
    region: Option<[[f64; 3]; 2]>,
) -> Result<Particles, InputError> {
    use crate::error::quote;
    let mut lines = Lines {
        reader,
        path: path.to_path_buf(),
        number: 0,
        buf: Vec::new(),
    };
    let Some((count_line, count_text)) = lines.next()? else {
        return Err(InputError::file(
            path,
            "the particle file is empty",
            "write the particle count on line 1, then one line `x y z vx vy vz` per particle",
        ));
    };
    let n: usize = count_text.parse().map_err(|_| {
        InputError::line(
            path,
            count_line,
            format!(
                "expected the particle count (a whole number), found `{}`",
                quote(&count_text)
            ),
            "write the particle count on the first line",
        )
    })?;
    if n > MAX_PARTICLES {
        return Err(InputError::line(
            path,
            count_line,
            format!("{n} particles is more than surge handles ({MAX_PARTICLES})"),
            "use fewer particles",
        ));
    }
    if n > budget {
        let gb = n as f64 * crate::particles::BYTES_PER_PARTICLE / (1u64 << 30) as f64;
        return Err(InputError::line(
            path,
            count_line,
            format!(
                "{n} particles need about {gb:.1} GB of memory, more than this machine has (room for about {budget})"
            ),
            "use fewer particles (or run on a machine with more memory)",
        ));
    }
    let mut p = Particles::with_capacity(n.min(1 << 20));
    let mut last_line = count_line;
    let mut too_fast: Option<(usize, [f32; 3])> = None;
    let mut outside = 0usize;
    let mut first_outside: Option<(usize, [f32; 3])> = None;
    while let Some((line, l)) = lines.next()? {
        last_line = line;
        if p.len() == n {
            return Err(InputError::line(
                path,
                count_line,
                format!(
                    "the count line says {n} particles but more particle lines follow (line {line}: `{}`)",
                    quote(&l)
                ),
                format!(
                    "set line {count_line} to the number of particle lines, or remove the extra lines"
                ),
            ));
        }
        let mut values = [0f32; 6];
        let mut k = 0;
        for word in l.split_whitespace() {
            if k == 6 {
                k += 1;
                break;
            }
            let v: f32 = word.parse().map_err(|_| {
                InputError::line(
                    path,
                    line,
                    format!("`{}` is not a number", quote(word)),
                    "write six numbers `x y z vx vy vz` per line",
                )
            })?;
            if !v.is_finite() {
                return Err(InputError::line(
                    path,
                    line,
                    format!("`{}` is not a finite number", quote(word)),
                    "replace NaN and infinite values with finite positions and velocities",
                ));
            }
            values[k] = v;
            k += 1;
        }
        if k != 6 {
            return Err(InputError::line(
                path,
                line,
                format!(
                    "expected 6 numbers `x y z vx vy vz`, found {} in `{}`",
                    l.split_whitespace().count(),
                    quote(&l)
                ),
                "write exactly six numbers per particle line",
            ));
        }
        let pos = [values[0], values[1], values[2]];
        let vel = [values[3], values[4], values[5]];
        if too_fast.is_none()
            && vel
                .iter()
                .any(|v| (*v as f64).abs() > MAX_ACCELERATION_OR_SPEED)
        {
            too_fast = Some((line, vel));
        }
        if let Some([lo, hi]) = region
            && (0..3).any(|a| (pos[a] as f64) < lo[a] || (pos[a] as f64) > hi[a])
        {
            outside += 1;
            first_outside.get_or_insert((line, pos));
        }
        p.push(pos, vel);
    }
    if p.len() != n {
        return Err(InputError::line(
            path,
            count_line,
            format!(
                "the count line says {n} particles but {} particle lines follow (last at line {last_line})",
                p.len()
            ),
            format!(
                "set line {count_line} to {} or add/remove particle lines",
                p.len()
            ),
        ));
    }
    if let Some((line, vel)) = too_fast {
        let limit = MAX_ACCELERATION_OR_SPEED;
        return Err(InputError::line(
            path,
            line,
            format!(
                "the velocity {vel:?} is beyond what a liquid simulation can take (at most {limit} m/s per component)"
            ),
            "check the columns (`x y z vx vy vz`) and the exponents",
        ));
    }
    if let (Some((line, pos)), Some([lo, hi])) = (first_outside, region) {
        return Err(InputError::line(
            path,
            line,
            format!(
                "{outside} of {} particles lie outside the domain's liquid region [{lo:?}, {hi:?}] (the domain minus its one-cell wall layer); the first is this one, at {pos:?}",
                p.len()
            ),
            "move the particles inside, or enlarge the domain (`res`/`lc` or `domain.resolution`/`domain.lower`)",
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests;
