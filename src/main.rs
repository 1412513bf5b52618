//! The `surge` binary: a thin shell over the library (`surge::cli::main`).

fn main() {
    std::process::exit(surge::cli::main());
}
