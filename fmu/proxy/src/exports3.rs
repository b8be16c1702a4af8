//! The exported `fmi3…` functions of FMI 3.0 co-simulation (scalar Float64, Int32, Boolean
//! and String variables): pointers checked, panics caught, the work done by [`Instance`], as
//! for FMI 2.0. The server's reply statuses are FMI 2.0's numbers, which FMI 3.0's share
//! (`fmi3OK` … `fmi3Fatal`).

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use peerpipe::parts::Part;
use peerpipe_fmu::fmi2;
use peerpipe_fmu::fmi3::{Instance as Fmi3Instance, IntermediateUpdate, LogMessage, Status, Vr};
use peerpipe_fmu::wire::{VarType, function as f};

use crate::ffi::{Cell, slice, slice_mut, with};
use crate::importer::ImporterLog;
use crate::instance::{Instance, Value};

#[unsafe(no_mangle)]
pub extern "C" fn fmi3GetVersion() -> *const c_char {
    c"3.0".as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3InstantiateCoSimulation(
    name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    visible: bool,
    logging_on: bool,
    event_mode_used: bool,
    early_return_allowed: bool,
    _required_intermediate: *const Vr,
    n_required_intermediate: usize,
    environment: *mut c_void,
    log_message: Option<LogMessage>,
    _intermediate_update: Option<IntermediateUpdate>,
) -> Fmi3Instance {
    catch_unwind(|| {
        // SAFETY: FMI's strings are NUL-terminated, or null (refused below).
        let text = |p: *const c_char| (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) });
        let new_log = || {
            let name = text(name).map(CStr::to_owned).unwrap_or_default();
            ImporterLog::v3(log_message, environment, name)
        };
        let log = new_log();
        if event_mode_used || early_return_allowed || n_required_intermediate > 0 {
            log.error(
                "this proxy FMU steps without event mode, early return or intermediate \
                 variables: instantiate it with none",
            );
            return std::ptr::null_mut();
        }
        let (Some(token), Some(resources)) = (text(token), text(resource_path)) else {
            log.error("fmi3InstantiateCoSimulation: no instantiation token or resource path");
            return std::ptr::null_mut();
        };
        let resources = std::path::PathBuf::from(resources.to_string_lossy().into_owned());
        match Instance::new(log, token.to_bytes(), &resources, visible, logging_on) {
            Ok(instance) => Box::into_raw(Box::new(Mutex::new(instance))).cast(),
            Err(message) => {
                new_log().error(&format!("fmi3InstantiateCoSimulation: {message}"));
                std::ptr::null_mut()
            }
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3FreeInstance(instance: Fmi3Instance) {
    if instance.is_null() {
        return;
    }
    // SAFETY: the leaked box of `fmi3InstantiateCoSimulation`, freed once.
    let cell = unsafe { Box::from_raw(instance as *mut Cell) };
    let _ = catch_unwind(AssertUnwindSafe(move || {
        cell.into_inner().unwrap_or_else(|e| e.into_inner()).close();
    }));
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetDebugLogging(
    instance: Fmi3Instance,
    on: bool,
    n: usize,
    categories: *const *const c_char,
) -> Status {
    with(instance, |i| {
        // SAFETY: FMI passes `n` category strings.
        let Some(categories) = (unsafe { slice(categories, n) }) else {
            return i.log.error("fmi3SetDebugLogging: null categories");
        };
        let mut joined = Vec::new();
        for &p in categories.iter().filter(|p| !p.is_null()) {
            // SAFETY: each a NUL-terminated string.
            joined.extend_from_slice(unsafe { CStr::from_ptr(p) }.to_bytes_with_nul());
        }
        i.simple(f::DEBUG_LOGGING, &[Part::i64(&[i64::from(on)]), Part::bytes(&joined)])
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3EnterInitializationMode(
    instance: Fmi3Instance,
    tol_defined: bool,
    tolerance: f64,
    start: f64,
    stop_defined: bool,
    stop: f64,
) -> Status {
    with(instance, |i| {
        let flags = [i64::from(tol_defined), i64::from(stop_defined)];
        let status = i.simple(f::SETUP, &[Part::i64(&flags), Part::f64(&[tolerance, start, stop])]);
        if status > fmi2::WARNING {
            return status;
        }
        status.max(i.simple(f::ENTER_INIT, &[]))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3ExitInitializationMode(instance: Fmi3Instance) -> Status {
    with(instance, |i| i.call_with_outputs(f::EXIT_INIT, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3Terminate(instance: Fmi3Instance) -> Status {
    with(instance, |i| i.simple(f::TERMINATE, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3Reset(instance: Fmi3Instance) -> Status {
    with(instance, |i| i.simple(f::RESET, &[]))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3DoStep(
    instance: Fmi3Instance,
    t: f64,
    h: f64,
    no_set_prior: bool,
    event_handling_needed: *mut bool,
    terminate_simulation: *mut bool,
    early_return: *mut bool,
    last_successful_time: *mut f64,
) -> Status {
    with(instance, |i| {
        let (status, flags) = i.step3(&[Part::f64(&[t, h]), Part::i64(&[i64::from(no_set_prior)])]);
        let (last, [event, terminate, early]) = flags.unwrap_or((t, [false, false, false]));
        // SAFETY: FMI passes pointers to the importer's variables; null ones are skipped.
        unsafe {
            for (p, v) in [
                (event_handling_needed, event),
                (terminate_simulation, terminate),
                (early_return, early),
            ] {
                if let Some(p) = p.as_mut() {
                    *p = v;
                }
            }
            if let Some(p) = last_successful_time.as_mut() {
                *p = last;
            }
        }
        status
    })
}

/// A get of `n` scalars: `nValues` must be `nValueReferences`.
fn get_scalars<T>(
    instance: Fmi3Instance,
    var_type: VarType,
    vr: *const Vr,
    n: usize,
    value: *mut T,
    n_values: usize,
    write: fn(&mut T, Value<'_>),
) -> Status {
    with(instance, |i| {
        if n_values != n {
            return i.log.error("a get of arrays: only scalar variables are served");
        }
        // SAFETY: FMI passes `n` references and room for `n` values.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice_mut(value, n) })
        else {
            return i.log.error("a get with null arrays");
        };
        i.get(var_type, vrs, |index, v| write(&mut values[index], v))
    })
}

/// A set of `n` scalars, each as an f64 (exact for Int32 and Boolean).
fn set_scalars<T: Copy>(
    instance: Fmi3Instance,
    var_type: VarType,
    vr: *const Vr,
    n: usize,
    value: *const T,
    n_values: usize,
    to_f64: fn(T) -> f64,
) -> Status {
    with(instance, |i| {
        if n_values != n {
            return i.log.error("a set of arrays: only scalar variables are served");
        }
        // SAFETY: FMI passes `n` references and `n` values.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice(value, n) })
        else {
            return i.log.error("a set with null arrays");
        };
        i.set_numbers(var_type, vrs, values.iter().map(|&v| to_f64(v)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetFloat64(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *mut f64,
    nv: usize,
) -> Status {
    get_scalars(i, VarType::Real, vr, n, value, nv, |out, v| {
        if let Value::Real(x) = v {
            *out = x;
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetInt32(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *mut i32,
    nv: usize,
) -> Status {
    get_scalars(i, VarType::Integer, vr, n, value, nv, |out, v| {
        if let Value::Int(x) = v {
            *out = x;
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetBoolean(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *mut bool,
    nv: usize,
) -> Status {
    get_scalars(i, VarType::Boolean, vr, n, value, nv, |out, v| {
        if let Value::Int(x) = v {
            *out = x != 0;
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetString(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *mut *const c_char,
    nv: usize,
) -> Status {
    get_scalars(i, VarType::String, vr, n, value, nv, |out, v| {
        if let Value::Str(s) = v {
            *out = s.as_ptr();
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetFloat64(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *const f64,
    nv: usize,
) -> Status {
    set_scalars(i, VarType::Real, vr, n, value, nv, |v| v)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetInt32(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *const i32,
    nv: usize,
) -> Status {
    set_scalars(i, VarType::Integer, vr, n, value, nv, f64::from)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetBoolean(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *const bool,
    nv: usize,
) -> Status {
    set_scalars(i, VarType::Boolean, vr, n, value, nv, |v| f64::from(u8::from(v)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SetString(
    i: Fmi3Instance,
    vr: *const Vr,
    n: usize,
    value: *const *const c_char,
    nv: usize,
) -> Status {
    with(i, |i| {
        if nv != n {
            return i.log.error("a set of arrays: only scalar variables are served");
        }
        // SAFETY: FMI passes `n` references and `n` strings.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice(value, n) })
        else {
            return i.log.error("fmi3SetString with null arrays");
        };
        let texts: Vec<&[u8]> = values
            .iter()
            // SAFETY: each a NUL-terminated string, or null (an empty string).
            .map(|&p| if p.is_null() { &[][..] } else { unsafe { CStr::from_ptr(p) }.to_bytes() })
            .collect();
        i.set_strings(vrs, &texts)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3GetFMUState(i: Fmi3Instance, state: *mut *mut c_void) -> Status {
    // SAFETY: the same contract as FMI 2.0's.
    unsafe { crate::exports::fmi2GetFMUstate(i, state) }
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3SetFMUState(i: Fmi3Instance, state: *mut c_void) -> Status {
    crate::exports::fmi2SetFMUstate(i, state)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3FreeFMUState(i: Fmi3Instance, state: *mut *mut c_void) -> Status {
    // SAFETY: the same contract as FMI 2.0's.
    unsafe { crate::exports::fmi2FreeFMUstate(i, state) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SerializedFMUStateSize(
    i: Fmi3Instance,
    state: *mut c_void,
    size: *mut usize,
) -> Status {
    // SAFETY: the same contract as FMI 2.0's.
    unsafe { crate::exports::fmi2SerializedFMUstateSize(i, state, size) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3SerializeFMUState(
    i: Fmi3Instance,
    state: *mut c_void,
    out: *mut u8,
    size: usize,
) -> Status {
    // SAFETY: the same contract as FMI 2.0's.
    unsafe { crate::exports::fmi2SerializeFMUstate(i, state, out, size) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi3DeserializeFMUState(
    i: Fmi3Instance,
    bytes: *const u8,
    size: usize,
    state: *mut *mut c_void,
) -> Status {
    // SAFETY: the same contract as FMI 2.0's.
    unsafe { crate::exports::fmi2DeSerializeFMUstate(i, bytes, size, state) }
}
