//! The `surge` binary: a thin shell over the library (`surge::cli::main`), with the system
//! allocator advising huge pages on large allocations ([`surge::cli::alloc`]).

#[global_allocator]
static ALLOCATOR: surge::cli::alloc::HugePages = surge::cli::alloc::HugePages;

fn main() {
    std::process::exit(surge::cli::main());
}
