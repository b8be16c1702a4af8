//! The header is generated, complete and honest: it is exactly what cbindgen makes of the
//! sources, it compiles as C and C++, every function in it is documented and exported by
//! the library, and every export runs through the one guard.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

#[path = "../examples/gen_header.rs"]
mod gen_header;

#[test]
fn the_checked_in_header_is_what_cbindgen_generates_from_the_sources() {
    let expected = gen_header::generate();
    let path = gen_header::header_path();
    let found = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        found == expected,
        "{} is out of date; regenerate it with `cargo run -p peerpipe-capi --example gen_header`",
        path.display()
    );
}

#[test]
fn the_header_compiles_as_c99_and_as_cpp() {
    let probe = common::build_dir().join("header_probe.c");
    std::fs::write(&probe, "#include \"peerpipe.h\"\nint main(void) { return PP_OK; }\n").unwrap();
    for (compiler, flags) in [("cc", ["-std=c99", "-x", "c"]), ("c++", ["-std=c++11", "-x", "c++"])]
    {
        if !common::have(compiler) {
            continue;
        }
        let mut command = Command::new(compiler);
        command.args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-pedantic"]).args(flags);
        command.arg("-I").arg(common::include_dir()).arg(&probe);
        common::run(command, Duration::from_secs(60), compiler).assert_success(compiler);
    }
}

/// Function names declared in the header, each checked to have a comment right above it.
fn documented_functions(header: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = header.lines().collect();
    let mut names = BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(paren) = line.find('(').filter(|_| line.contains("pp_")) else { continue };
        if line.starts_with("typedef") || line.starts_with(' ') || line.starts_with("//") {
            continue;
        }
        // The name is the identifier right before the parenthesis: a return type may name
        // a pp_ type too (`struct pp_reply *pp_session_reply(`).
        let before = &line[..paren];
        let start =
            before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |at| at + 1);
        let name = before[start..].to_owned();
        let above = lines[..i].iter().rev().find(|l| !l.trim().is_empty()).unwrap_or(&"");
        assert!(above.starts_with("//"), "{name} has no documentation in the header");
        names.insert(name);
    }
    names
}

#[test]
fn every_header_function_is_documented_and_exported_and_nothing_else_is() {
    let header = std::fs::read_to_string(gen_header::header_path()).unwrap();
    let declared = documented_functions(&header);
    for required in [
        "pp_spawn",
        "pp_spawn_shell",
        "pp_set_timeout_ns",
        "pp_call_f64",
        "pp_call_f32",
        "pp_close",
        "pp_last_error",
        "pp_serve_stdio_f64",
        "pp_serve_stdio_f32",
        "pp_call_parts",
        "pp_call_parts_any",
        "pp_functions_new",
        "pp_functions_add",
        "pp_serve_stdio_functions",
        "pp_functions_free",
        "pp_call_part",
        "pp_reply_f64",
        "pp_reply_f64_matrix",
        "pp_reply_error",
    ] {
        assert!(declared.contains(required), "{required} missing from the header");
    }
    for line in [
        "typedef struct pp_peer pp_peer;",
        "typedef int (*pp_handler_f64)(void *user, const double *in, size_t n, double *out);",
        "typedef int (*pp_handler_f32)(void *user, const float *in, size_t n, float *out);",
        "int pp_spawn(const char *const *argv, size_t argc, pp_peer **out);",
        "int pp_spawn_shell(const char *command_line, pp_peer **out);",
        "int pp_set_timeout_ns(pp_peer *peer, uint64_t ns);",
        "int pp_close(pp_peer *peer);",
        "const char *pp_last_error(void);",
        "int pp_serve_stdio_f64(pp_handler_f64 handler, void *user);",
        "int pp_serve_stdio_f32(pp_handler_f32 handler, void *user);",
        "typedef int (*pp_function)(void *user, const struct pp_call *call, \
         struct pp_reply *reply);",
        "int pp_call_parts(pp_peer *peer, const char *function, const pp_part *in, size_t n_in, \
         const pp_part_out *out, size_t n_out, pp_timing *timing);",
        "int pp_functions_new(const char *name, pp_functions **out);",
        "int pp_functions_add(pp_functions *functions, const char *name, pp_function function, \
         void *user);",
        "int pp_serve_stdio_functions(pp_functions *functions, const pp_options *options);",
        "int pp_call_part(const pp_call *call, size_t index, pp_part *part);",
        "double *pp_reply_f64(pp_reply *reply, uint64_t count);",
        "double *pp_reply_f64_matrix(pp_reply *reply, uint64_t rows, uint64_t cols);",
        "int pp_reply_error(pp_reply *reply, const char *message);",
    ] {
        // cbindgen spells `struct pp_peer *` where the issue wrote `pp_peer *`: with the
        // typedef they are the same type. Declarations may wrap; compare on one line.
        let text = match line.starts_with("typedef") {
            true => header.clone(),
            false => header.replace("struct pp_", "pp_"),
        };
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(line), "the header lacks `{line}`");
    }
    let timing = "typedef struct pp_timing { uint64_t round_trip_ns; uint64_t server_ns; \
                  uint64_t encode_ns; uint64_t decode_ns; } pp_timing;";
    let code: String =
        header.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join(" ");
    let code = code.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(code.contains(timing), "pp_timing is not laid out as the issue says");
    for (name, data) in [("pp_part", "const void *data"), ("pp_part_out", "void *data")] {
        let layout = format!(
            "typedef struct {name} {{ int dtype; uint32_t cols; uint64_t count; {data}; }} {name};"
        );
        assert!(code.contains(&layout), "{name} is not laid out as `{layout}`");
    }
    for (dtype, value) in [("BYTES", 0), ("F32", 1), ("F64", 2), ("I64", 3)] {
        let define = format!("#define PP_DTYPE_{dtype} {value}");
        assert!(code.contains(&define), "the header lacks `{define}`, the wire's part dtype");
    }
    for call in ["f64", "f32"] {
        let t = if call == "f64" { "double" } else { "float" };
        let line = format!(
            "int pp_call_{call}(pp_peer *peer, const {t} *in, size_t n, {t} *out, size_t out_len, pp_timing *timing);"
        );
        assert!(
            code.replace("struct pp_", "pp_").replace("( ", "(").contains(&line),
            "the header lacks `{line}`"
        );
    }
    if !common::have("nm") {
        return;
    }
    let mut nm = Command::new("nm");
    nm.args(["-D", "--defined-only"]).arg(common::lib_dir().join("libpeerpipe.so"));
    let output = common::run(nm, Duration::from_secs(60), "nm");
    output.assert_success("nm -D libpeerpipe.so");
    let exported: BTreeSet<String> = output
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| name.starts_with("pp_"))
        .map(str::to_owned)
        .collect();
    assert_eq!(exported, declared, "the library's pp_ symbols and the header's functions differ");
}

#[test]
fn every_export_runs_its_body_through_the_guard() {
    // Exempt: functions that return no code and cannot panic (a thread-local read, a static
    // string, a Box drop).
    let exempt = [
        "pp_last_error",
        "pp_strerror",
        "pp_options_free",
        "pp_functions_free",
        "pp_parts_reply_free",
        "pp_session_free",
    ];
    let dir = common::crate_dir().join("src");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        for (at, _) in source.match_indices("extern \"C\" fn pp_") {
            let name: String = source[at + 14..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            seen += 1;
            if exempt.contains(&name.as_str()) {
                continue;
            }
            // The body starts after the signature's first line that ends in `{`.
            let body = &source[at..];
            let body = body[body.find(" {\n").expect("a body") + 3..].trim_start();
            let delegates = body.starts_with("// SAFETY:")
                && body.lines().nth(1).is_some_and(|l| l.trim().starts_with("unsafe { pp_"));
            // A function returning a pointer or a count runs through `guard_or`.
            assert!(
                body.starts_with("guard(") || body.starts_with("guard_or(") || delegates,
                "{name} in {} neither runs through guard nor delegates to a guarded export",
                path.display()
            );
        }
    }
    assert!(seen >= 40, "found only {seen} exports");
}

#[test]
fn the_platform_guard_names_linux_in_both_crates_and_the_header() {
    let repo = common::crate_dir().parent().unwrap().to_path_buf();
    for root in [repo.join("src/lib.rs"), repo.join("capi/src/lib.rs")] {
        let source = std::fs::read_to_string(&root).unwrap();
        assert!(
            source.contains("#[cfg(not(target_os = \"linux\"))]\ncompile_error!("),
            "{} lacks the non-Linux compile_error",
            root.display()
        );
    }
    let header = std::fs::read_to_string(gen_header::header_path()).unwrap();
    assert!(header.contains("Platforms: Linux only"));
}
