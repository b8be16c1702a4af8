//! Compiles the FMI 2.0 logger callback (c/logger.c): a variadic C function, which stable
//! Rust cannot define.

fn main() {
    println!("cargo:rerun-if-changed=c/logger.c");
    cc::Build::new().file("c/logger.c").warnings(true).compile("peerpipe_fmu_logger");
}
