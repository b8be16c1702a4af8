//! No two modules of `src/`, `cli/src`, `capi/src` or `python/src` use each other, directly or
//! through a chain; no arrow goes back up between the folders of `src/` or of `cli/src`; and
//! the library holds no module that only the CLI uses.
//!
//! A module is one `.rs` file (`mod.rs` and `lib.rs` name their folder's module); an inline
//! `mod x { .. }` belongs to its file. Module A uses module B when a path written in A — in a
//! `use` tree, a type, an expression, a pattern, a macro's name or its tokens — names an item
//! that B defines. A path is resolved the way the compiler does, from `crate::`, `super::`,
//! `self::` or a name in scope (defined in the module, imported, or brought by a glob `use`),
//! segment by segment through every `use` and `pub use`, to the file that defines the item
//! (or, for an item a macro writes, the file the path led to). So a name that a parent only
//! re-exports from a child is the child's: a `mod.rs` that declares its submodules and hands
//! their items on (a face) is not what its children use. Neither `mod x;` nor a path that ends
//! at a module (`use crate::frame;`) is a use; the items named through it are. Paths into other
//! crates (std, the dependencies, `peerpipe` from the CLI) are no uses. Test code — modules
//! named `tests` and items under `#[cfg(test)]` — is left out.
//!
//! The files are found by following the `mod` declarations from the crate's `lib.rs`. The
//! cycles are the strongly connected components of the graph of uses (Tarjan); each is
//! reported as its loops `a -> b -> a`, with the names that tie each use, so that whoever
//! breaks it sees what to move.
//!
//! The same graph is then read a floor at a time: a floor is one of the crate's top-level
//! modules with its whole folder (`peer` is `peer.rs` and everything under `peer/`), and
//! floor A uses floor B when a file of A uses a file of B. An arrow back up is a use from a
//! floor into one that (through any of its files) uses it: two folders that each reach into
//! the other through different files are no cycle of files, but they are a circle of floors,
//! and that is refused too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "module_graph/graph.rs"]
mod graph;

use graph::{Crate, cycles_of, floor_cycles_of, floor_of};

fn on_disk(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn assert_no_floor_cycles(source: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let told = floor_cycles_of(&dir, &on_disk);
    assert!(
        told.is_empty(),
        "folders of {source} use each other (a -> b: the names a takes from b, and the files \
         that take them); an arrow goes back up: move what they share below both:\n{told}"
    );
}

fn assert_no_cycles(source: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let told = cycles_of(&dir, &on_disk);
    assert!(
        told.is_empty(),
        "modules of {source} use each other (a -> b: the names a takes from b); move what they \
         share down, or import it from the file that defines it:\n{told}"
    );
}

// ---------------------------------------------------------------------------------------------
// The rule over the crates.

#[test]
fn no_two_modules_of_the_library_use_each_other() {
    assert_no_cycles("src");
}

#[test]
fn no_two_modules_of_the_cli_use_each_other() {
    assert_no_cycles("cli/src");
}

#[test]
fn no_arrow_goes_back_up_between_the_folders_of_the_library() {
    assert_no_floor_cycles("src");
}

#[test]
fn no_arrow_goes_back_up_between_the_folders_of_the_cli() {
    assert_no_floor_cycles("cli/src");
}

/// What measures, and what only the `peer` command uses, which left the library for the CLI:
/// (the module's name in `src/` before, its module in `cli/src` now).
const MOVED_TO_THE_CLI: [(&str, &str); 5] = [
    ("baseline", "baseline"),
    ("pairing", "pairing"),
    ("rng", "rng"),
    ("interrupt", "interrupt"),
    ("primitives", "probe/src/lib"),
];

/// Modules of the library that no code uses and that stay all the same: the documents.
const DOCUMENTS_ONLY: [&str; 1] = ["guide"];

/// Whether `text` names `module` of the library from outside it: `peerpipe::module` (then
/// `::`, `;`, `,`, `}` or a space) or `module` inside a `use peerpipe::{..}` group.
fn names_module(text: &str, module: &str) -> bool {
    let path = format!("peerpipe::{module}");
    let after_ok = |rest: &str| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    let direct = text.match_indices(&path).any(|(at, _)| after_ok(&text[at + path.len()..]));
    let grouped = text.match_indices("use peerpipe::{").any(|(at, found)| {
        let group = &text[at + found.len()..];
        let group = &group[..group.find('}').unwrap_or(group.len())];
        group.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == module)
    });
    direct || grouped
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn the_library_holds_no_module_that_only_the_cli_uses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let library = Crate::load(&root.join("src"), &on_disk);
    let cli = Crate::load(&root.join("cli/src"), &on_disk);
    let floors: BTreeSet<&str> = library.files.iter().map(|f| floor_of(f)).collect();
    for (was, now) in MOVED_TO_THE_CLI {
        assert!(!floors.contains(was), "src/ holds `{was}` again, which only the CLI uses");
        let in_cli = cli.files.iter().any(|f| f == now)
            || root.join("cli").join(format!("{now}.rs")).exists();
        assert!(in_cli, "`{was}` is not in cli/ as `{now}`: update MOVED_TO_THE_CLI");
    }
    // Every other floor of the library is used by another floor of it, or named by a user of
    // the library that is not the CLI: the bindings, the examples, the tests, the side
    // workspaces.
    let uses = library.uses();
    let used_inside: BTreeSet<&str> = uses
        .keys()
        .filter(|(a, b)| floor_of(&library.files[*a]) != floor_of(&library.files[*b]))
        .filter(|(a, _)| library.files[*a] != "lib")
        .map(|(_, b)| floor_of(&library.files[*b]))
        .collect();
    let mut outside = Vec::new();
    for dir in ["python/src", "capi/src", "examples", "tests", "benches/peers/src", "fuzz"] {
        rust_files(&root.join(dir), &mut outside);
    }
    let outside: Vec<String> = outside
        .iter()
        .filter(|path| !path.ends_with("tests/module_graph.rs"))
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .collect();
    let only_the_cli: Vec<&str> = floors
        .iter()
        .copied()
        .filter(|floor| *floor != "lib" && !DOCUMENTS_ONLY.contains(floor))
        .filter(|floor| !used_inside.contains(floor))
        .filter(|floor| !outside.iter().any(|text| names_module(text, floor)))
        .collect();
    assert!(
        only_the_cli.is_empty(),
        "modules of src/ that nothing but the CLI uses (move them to cli/, or say in their \
         module doc which public API needs them): {only_the_cli:?}"
    );
}

#[test]
fn no_two_modules_of_the_c_abi_use_each_other() {
    assert_no_cycles("capi/src");
}

#[test]
fn no_two_modules_of_the_python_binding_use_each_other() {
    assert_no_cycles("python/src");
}

// ---------------------------------------------------------------------------------------------
// The checker itself, on small crates written here.

fn cycles_in(files: &[(&str, &str)]) -> String {
    let files: BTreeMap<PathBuf, String> =
        files.iter().map(|(path, text)| (Path::new("x").join(path), text.to_string())).collect();
    cycles_of(Path::new("x"), &|path: &Path| files.get(path).cloned())
}

fn floor_cycles_in(files: &[(&str, &str)]) -> String {
    let files: BTreeMap<PathBuf, String> =
        files.iter().map(|(path, text)| (Path::new("x").join(path), text.to_string())).collect();
    floor_cycles_of(Path::new("x"), &|path: &Path| files.get(path).cloned())
}

#[test]
fn two_folders_that_reach_into_each_other_through_different_files_are_a_circle() {
    let files = [
        ("lib.rs", "mod e; mod p;"),
        ("e.rs", "mod fault; pub struct E(crate::p::F);"),
        ("e/fault.rs", "pub struct Fault;"),
        ("p.rs", "mod f; mod t; pub use f::F;"),
        ("p/f.rs", "pub struct F;"),
        ("p/t.rs", "pub fn t() -> crate::e::E { todo!() }"),
    ];
    assert_eq!(cycles_in(&files), "", "no file uses another back");
    let told = floor_cycles_in(&files);
    assert!(told.contains("{e, p}\n    e -> p -> e\n"), "{told}");
    assert!(told.contains("      e -> p: F (e -> p::f)\n      p -> e: E (p::t -> e)\n"), "{told}");
    let below = [
        ("lib.rs", "mod e; mod p; mod w;"),
        ("e.rs", "pub struct E(crate::w::F);"),
        ("p.rs", "mod t; pub use crate::w::F;"),
        ("p/t.rs", "pub fn t() -> crate::e::E { todo!() }"),
        ("w.rs", "pub struct F;"),
    ];
    assert_eq!(floor_cycles_in(&below), "", "what both use, moved below both");
}

#[test]
fn a_module_is_named_from_outside_by_its_path_or_in_a_group() {
    assert!(names_module("use peerpipe::rhs::RemoteRhs;", "rhs"));
    assert!(names_module("use peerpipe::{Options, lorenz96};", "lorenz96"));
    assert!(names_module("peerpipe::stats::nearest_rank(&v, 0.5)", "stats"));
    assert!(!names_module("use peerpipe::rhsx::R; use peerpipe::{Options, rhs_like};", "rhs"));
    assert!(!names_module("use peerpipe::{Options};\nlet stats = 1;", "stats"));
}

#[test]
fn a_face_that_hands_on_its_childrens_items_is_no_cycle() {
    let told = cycles_in(&[
        ("lib.rs", "mod a; pub use a::Y;"),
        ("a/mod.rs", "mod x; mod y; pub use x::X; pub use y::Y;"),
        ("a/x.rs", "pub struct X;"),
        ("a/y.rs", "use super::*; pub struct Y(X); fn f() -> crate::a::X { super::X }"),
    ]);
    assert_eq!(told, "");
}

#[test]
fn a_child_using_what_its_parent_defines_is_a_cycle_named_with_its_ties() {
    let told = cycles_in(&[
        ("lib.rs", "mod a;"),
        ("a.rs", "mod y; pub use y::Y; pub struct P; fn f(y: Y) {}"),
        ("a/y.rs", "use super::*; pub struct Y; impl P { fn g() {} }"),
    ]);
    assert!(told.contains("{a, a::y}\n    a -> a::y -> a\n"), "{told}");
    assert!(told.contains("      a -> a::y: Y\n      a::y -> a: P\n"), "{told}");
}

#[test]
fn a_re_export_of_the_root_ties_to_the_definition_and_a_use_of_the_root_itself_is_a_use() {
    let told = cycles_in(&[
        ("lib.rs", "mod e; mod p; pub use e::E;"),
        ("e.rs", "pub struct E; fn f() { crate::p::run(); }"),
        ("p.rs", "pub fn run() -> crate::E { todo!() }"),
    ]);
    assert!(told.contains("{e, p}\n    e -> p -> e\n"), "{told}");
    assert!(!told.contains("lib"), "the root only hands `E` on: {told}");
    let told = cycles_in(&[
        ("lib.rs", "mod p; pub fn top() { p::run() }"),
        ("p.rs", "pub fn run() { crate::top() }"),
    ]);
    assert!(told.contains("{lib, p}\n    lib -> p -> lib\n"), "{told}");
}

#[test]
fn tests_other_crates_and_macro_tokens_are_read_as_the_compiler_would() {
    let told = cycles_in(&[
        ("lib.rs", "mod a; mod b; #[cfg(test)] mod tests;"),
        ("a.rs", "pub const A: u8 = 1; pub fn f() { assert!(matches!(2, crate::b::B)); }"),
        (
            "b.rs",
            "pub const B: u8 = 2; #[cfg(test)] fn t() { crate::a::f(); } fn g() { std::a::A; }",
        ),
    ]);
    assert_eq!(told, "", "a test-only use, and `std::a` (not `crate::a`), tie nothing");
    let told = cycles_in(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "pub const A: u8 = 1; pub fn f() { assert!(matches!(2, crate::b::B)); }"),
        ("b.rs", "pub const B: u8 = 2; fn g() { println!(\"{}\", super::a::A); }"),
    ]);
    assert!(told.contains("a -> b: B\n      b -> a: A\n"), "{told}");
}
