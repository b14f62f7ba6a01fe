//! Links the `weir` executable at a fixed address (`-no-pie`), on Linux.
//!
//! As a position-independent executable, weir had 60,000 relocations for the dynamic loader to
//! apply at every start, and their pages to copy: `weir --version` took 3.1 ms of CPU and a
//! query's process 7 ms from exec to exit, of which the count itself was about 1 ms. Linked at a
//! fixed address, the same binary starts in 1.5 ms (`docs/dev/performance-log.md`). What is lost is
//! the randomized address of weir's own code; its libraries, heap, stacks and mapped segment
//! files are still placed at random. Only the binaries are linked so: the library, its tests
//! and examples are built as before.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
