//! The layer table of README.md's "Architecture" section, enforced: every `crate::X` path in
//! the code of a module (comments aside) must name a module of a lower layer or the module
//! itself. So there is no import circle and no upward import, and the L2 stages (sim, surface,
//! render, output) never import each other.

use std::path::{Path, PathBuf};

/// Top-level modules by layer (README.md, "Architecture").
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("particles", 0),
    ("mesh", 0),
    ("image", 0),
    ("geometry", 1),
    ("sim", 2),
    ("surface", 2),
    ("render", 2),
    ("output", 2),
    ("checkpoint", 3),
    ("scene", 4),
    ("sources", 5),
    ("run", 5),
    ("cli", 6),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every `crate::NAME` in the code of `text` (line comments and doc comments skipped), with
/// its 1-based line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            let after = &rest[i + "crate::".len()..];
            rest = after;
            // `$crate::` and identifiers ending in `crate` are not the crate root.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            }
        }
    }
    // `use crate::{a, b::{c, d}}`, on one line or several (as rustfmt wraps long ones): the
    // first name of each part at the braces' top level, at the line of `crate::{`.
    let code: Vec<&str> = (text.lines())
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    for (n, line) in code.iter().enumerate() {
        let mut from = 0;
        while let Some(i) = line[from..].find("crate::{") {
            let start = from + i + "crate::{".len();
            from = start;
            let (mut depth, mut part, mut parts) = (1u32, String::new(), Vec::new());
            let rest = std::iter::once(&line[start..]).chain(code[n + 1..].iter().copied());
            'scan: for l in rest {
                for c in l.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' | ',' if depth == 1 => {
                            parts.push(std::mem::take(&mut part));
                            if c == '}' {
                                break 'scan;
                            }
                        }
                        '}' => depth -= 1,
                        _ if depth == 1 => part.push(c),
                        _ => {}
                    }
                }
                part.push(' ');
            }
            for p in parts {
                let name: String = (p.trim().chars())
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push((n + 1, name));
                }
            }
        }
    }
    out
}

/// The violations in `text`, the source of a file of top-level module `module`.
fn violations(module: &str, file: &str, text: &str) -> Vec<String> {
    let Some(own) = layer(module) else {
        return vec![format!(
            "{file}: module `{module}` is not in the layer table"
        )];
    };
    let mut out = Vec::new();
    for (line, target) in crate_paths(text) {
        if target == module {
            continue;
        }
        match layer(&target) {
            None => out.push(format!("{file}:{line}: `crate::{target}` is not in the layer table")),
            Some(l) if l >= own => out.push(format!(
                "{file}:{line}: `{module}` (layer {own}) imports `crate::{target}` (layer {l}): only lower layers may be imported"
            )),
            Some(_) => {}
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_its_own_or_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    let mut checked = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue; // the crate root and the binary: above every layer
        }
        let text = std::fs::read_to_string(f).unwrap();
        bad.extend(violations(&module, &rel.display().to_string(), &text));
        checked += 1;
    }
    assert!(
        checked > 40,
        "only {checked} files found under {}",
        src.display()
    );
    assert!(
        bad.is_empty(),
        "upward or sideways imports:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_top_level_module_is_in_the_table() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    // Every module declaration, whatever its visibility or indentation.
    let mut declared = 0;
    for line in lib.lines() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or(t.strip_prefix("pub "))
            .unwrap_or(t);
        if let Some(m) = t.strip_prefix("mod ") {
            let m = m.trim_end_matches(';').trim();
            declared += 1;
            assert!(
                layer(m).is_some(),
                "src/lib.rs declares `{m}`, missing from LAYERS"
            );
        }
    }
    // And the table names no module that is not declared (nor was the scan blind).
    assert_eq!(
        declared,
        LAYERS.len(),
        "src/lib.rs declares {declared} modules, LAYERS lists {}",
        LAYERS.len()
    );
}

/// The checker itself catches what it must: an upward import, a sideways one between two L2
/// stages, an unknown module, and a path inside braces, also nested and wrapped over lines as
/// rustfmt writes long ones; and ignores comments and `$crate`.
#[test]
fn the_checker_flags_upward_and_sideways_imports() {
    let up = "use crate::scene::Scene;\n";
    assert_eq!(violations("sim", "sim/x.rs", up).len(), 1);
    let sideways = "fn f() { crate::render::render(p, v); }\n";
    assert_eq!(violations("surface", "surface/x.rs", sideways).len(), 1);
    let braces = "use crate::{geometry::Domain, checkpoint};\n";
    assert_eq!(violations("output", "output/x.rs", braces).len(), 1);
    assert_eq!(violations("scene", "scene/x.rs", braces).len(), 0);
    let wrapped = "use crate::{\n    geometry::{Domain, solid::Solid},\n    sim::Simulation,\n};\n";
    let found = violations("geometry", "geometry/x.rs", wrapped);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("geometry/x.rs:1") && found[0].contains("crate::sim"));
    assert_eq!(violations("scene", "scene/x.rs", wrapped).len(), 0);
    let unknown = "use crate::nowhere::X;\n";
    assert_eq!(violations("run", "run/x.rs", unknown).len(), 1);
    let fine = "use crate::particles::Particles; // crate::cli in a comment\n/// [`crate::run`]\nmacro_rules! m { () => { $crate::sim::x() } }\n";
    assert!(violations("geometry", "geometry/x.rs", fine).is_empty());
}
