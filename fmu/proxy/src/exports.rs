//! The exported `fmi2…` functions: pointers checked, panics caught, the work done by
//! [`Instance`].

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use peerpipe::parts::Part;
use peerpipe_fmu::fmi2::{self, CallbackFunctions, Component, Status, Vr};
use peerpipe_fmu::wire::{VarType, function as f};

use crate::ffi::{Cell, slice, slice_mut, with};
use crate::importer::ImporterLog;
use crate::instance::{Instance, Value};

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetTypesPlatform() -> *const c_char {
    c"default".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetVersion() -> *const c_char {
    c"2.0".as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2Instantiate(
    name: *const c_char,
    fmu_type: c_int,
    guid: *const c_char,
    resource_location: *const c_char,
    callbacks: *const CallbackFunctions,
    visible: c_int,
    logging_on: c_int,
) -> Component {
    catch_unwind(|| {
        // SAFETY: FMI's strings are NUL-terminated, or null (refused below).
        let text = |p: *const c_char| (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) });
        let log = ImporterLog::new(callbacks, text(name).map(CStr::to_owned).unwrap_or_default());
        if fmu_type != fmi2::CO_SIMULATION {
            log.error("this proxy FMU is co-simulation only: model exchange is not served");
            return std::ptr::null_mut();
        }
        let Some(guid) = text(guid) else {
            log.error("fmi2Instantiate: no GUID");
            return std::ptr::null_mut();
        };
        let resources =
            text(resource_location).and_then(|uri| peerpipe_fmu::uri_path(&uri.to_string_lossy()));
        let Some(resources) = resources else {
            log.error("fmi2Instantiate: the resource location is not a file:// URI");
            return std::ptr::null_mut();
        };
        match Instance::new(log, guid.to_bytes(), &resources, visible != 0, logging_on != 0) {
            Ok(instance) => Box::into_raw(Box::new(Mutex::new(instance))).cast(),
            Err(message) => {
                // The instance's own log is gone with it: log through a new one.
                ImporterLog::new(callbacks, text(name).map(CStr::to_owned).unwrap_or_default())
                    .error(&format!("fmi2Instantiate: {message}"));
                std::ptr::null_mut()
            }
        }
    })
    .unwrap_or(std::ptr::null_mut())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2FreeInstance(c: Component) {
    if c.is_null() {
        return;
    }
    // SAFETY: the leaked box of `fmi2Instantiate`, freed once (FMI calls this last).
    let cell = unsafe { Box::from_raw(c as *mut Cell) };
    let _ = catch_unwind(AssertUnwindSafe(move || {
        cell.into_inner().unwrap_or_else(|e| e.into_inner()).close();
    }));
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetDebugLogging(
    c: Component,
    on: c_int,
    n: usize,
    categories: *const *const c_char,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes `n` category strings.
        let Some(categories) = (unsafe { slice(categories, n) }) else {
            return i.log.error("fmi2SetDebugLogging: null categories");
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
pub extern "C" fn fmi2SetupExperiment(
    c: Component,
    tol_defined: c_int,
    tolerance: f64,
    start: f64,
    stop_defined: c_int,
    stop: f64,
) -> Status {
    with(c, |i| {
        let flags = [i64::from(tol_defined), i64::from(stop_defined)];
        i.simple(f::SETUP, &[Part::i64(&flags), Part::f64(&[tolerance, start, stop])])
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2EnterInitializationMode(c: Component) -> Status {
    with(c, |i| i.simple(f::ENTER_INIT, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2ExitInitializationMode(c: Component) -> Status {
    with(c, |i| i.call_with_outputs(f::EXIT_INIT, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2Terminate(c: Component) -> Status {
    with(c, |i| i.simple(f::TERMINATE, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2Reset(c: Component) -> Status {
    with(c, |i| i.simple(f::RESET, &[]))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2DoStep(c: Component, t: f64, h: f64, no_set_prior: c_int) -> Status {
    with(c, |i| {
        i.call_with_outputs(f::STEP, &[Part::f64(&[t, h]), Part::i64(&[i64::from(no_set_prior)])])
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2CancelStep(c: Component) -> Status {
    with(c, |i| i.simple(f::CANCEL_STEP, &[]))
}

/// The gets of numbers: `write` stores value `Value` at position `index`.
fn get_numbers<T>(
    c: Component,
    var_type: VarType,
    vr: *const Vr,
    n: usize,
    value: *mut T,
    write: fn(&mut T, Value<'_>),
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes `n` references and room for `n` values.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice_mut(value, n) })
        else {
            return i.log.error("a get with null arrays");
        };
        i.get(var_type, vrs, |index, v| write(&mut values[index], v))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetReal(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *mut f64,
) -> Status {
    get_numbers(c, VarType::Real, vr, n, value, |out, v| {
        if let Value::Real(x) = v {
            *out = x;
        }
    })
}

fn write_int(out: &mut c_int, v: Value<'_>) {
    if let Value::Int(x) = v {
        *out = x;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetInteger(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *mut c_int,
) -> Status {
    get_numbers(c, VarType::Integer, vr, n, value, write_int)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetBoolean(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *mut c_int,
) -> Status {
    get_numbers(c, VarType::Boolean, vr, n, value, write_int)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetString(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *mut *const c_char,
) -> Status {
    get_numbers(c, VarType::String, vr, n, value, |out, v| {
        if let Value::Str(s) = v {
            *out = s.as_ptr();
        }
    })
}

/// The sets of numbers.
fn set_numbers<T: Copy>(
    c: Component,
    var_type: VarType,
    vr: *const Vr,
    n: usize,
    value: *const T,
    to_f64: fn(T) -> f64,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes `n` references and `n` values.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice(value, n) })
        else {
            return i.log.error("a set with null arrays");
        };
        i.set_numbers(var_type, vrs, values.iter().map(|&v| to_f64(v)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetReal(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *const f64,
) -> Status {
    set_numbers(c, VarType::Real, vr, n, value, |v| v)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetInteger(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *const c_int,
) -> Status {
    set_numbers(c, VarType::Integer, vr, n, value, f64::from)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetBoolean(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *const c_int,
) -> Status {
    // As given: the FMU sees the importer's own fmi2Boolean, as it would in process.
    set_numbers(c, VarType::Boolean, vr, n, value, f64::from)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetString(
    c: Component,
    vr: *const Vr,
    n: usize,
    value: *const *const c_char,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes `n` references and `n` strings.
        let (Some(vrs), Some(values)) = (unsafe { slice(vr, n) }, unsafe { slice(value, n) })
        else {
            return i.log.error("fmi2SetString with null arrays");
        };
        let texts: Vec<&[u8]> = values
            .iter()
            // SAFETY: each a NUL-terminated string, or null (an empty string).
            .map(|&p| if p.is_null() { &[][..] } else { unsafe { CStr::from_ptr(p) }.to_bytes() })
            .collect();
        i.set_strings(vrs, &texts)
    })
}

/// The id a state pointer carries (the proxy's states are ids, never dereferenced).
fn state_id(state: *mut c_void) -> i64 {
    state as usize as i64
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetFMUstate(c: Component, state: *mut *mut c_void) -> Status {
    with(c, |i| {
        if state.is_null() {
            return i.log.error("fmi2GetFMUstate: null state pointer");
        }
        // SAFETY: checked non-null; FMI passes a pointer to the importer's state variable.
        let existing = unsafe { *state };
        let id = if existing.is_null() { -1 } else { state_id(existing) };
        i.forget_state(id);
        match i.call_for_id(f::GET_STATE, &[Part::i64(&[id])]) {
            (status, Some(id)) if id > 0 => {
                // SAFETY: as above.
                unsafe { *state = id as usize as *mut c_void };
                status
            }
            (status, _) => status.max(fmi2::ERROR),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetFMUstate(c: Component, state: *mut c_void) -> Status {
    with(c, |i| i.simple(f::SET_STATE, &[Part::i64(&[state_id(state)])]))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2FreeFMUstate(c: Component, state: *mut *mut c_void) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes a pointer to the importer's state variable, or null.
        let Some(slot) = (unsafe { state.as_mut() }) else { return fmi2::OK };
        if slot.is_null() {
            return fmi2::OK;
        }
        let id = state_id(*slot);
        i.forget_state(id);
        let status = i.simple(f::FREE_STATE, &[Part::i64(&[id])]);
        *slot = std::ptr::null_mut();
        status
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SerializedFMUstateSize(
    c: Component,
    state: *mut c_void,
    size: *mut usize,
) -> Status {
    with(c, |i| match i.serialized(state_id(state), true) {
        (status, Some(bytes)) if !size.is_null() => {
            // SAFETY: checked non-null; FMI passes a pointer to the importer's size.
            unsafe { *size = bytes.len() };
            status
        }
        (status, _) => status.max(fmi2::ERROR),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SerializeFMUstate(
    c: Component,
    state: *mut c_void,
    out: *mut u8,
    size: usize,
) -> Status {
    with(c, |i| {
        let (status, bytes) = i.serialized(state_id(state), false);
        let Some(bytes) = bytes else { return status.max(fmi2::ERROR) };
        let len = bytes.len();
        // SAFETY: FMI passes room for `size` bytes.
        match unsafe { slice_mut(out, size) } {
            Some(room) if room.len() >= len => {
                room[..len].copy_from_slice(bytes);
                status
            }
            _ => i.log.error(&format!(
                "fmi2SerializeFMUstate: {size} bytes of room for a state of {len}"
            )),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2DeSerializeFMUstate(
    c: Component,
    bytes: *const u8,
    size: usize,
    state: *mut *mut c_void,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes `size` bytes.
        let Some(bytes) = (unsafe { slice(bytes, size) }) else {
            return i.log.error("fmi2DeSerializeFMUstate: null bytes");
        };
        if state.is_null() {
            return i.log.error("fmi2DeSerializeFMUstate: null state pointer");
        }
        match i.call_for_id(f::DESERIALIZE, &[Part::bytes(bytes)]) {
            (status, Some(id)) if id > 0 => {
                // SAFETY: checked non-null.
                unsafe { *state = id as usize as *mut c_void };
                status
            }
            (status, _) => status.max(fmi2::ERROR),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetDirectionalDerivative(
    c: Component,
    unknown: *const Vr,
    n_unknown: usize,
    known: *const Vr,
    n_known: usize,
    dv_known: *const f64,
    dv_unknown: *mut f64,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes arrays of the lengths given.
        let arrays = unsafe {
            (
                slice(unknown, n_unknown),
                slice(known, n_known),
                slice(dv_known, n_known),
                slice_mut(dv_unknown, n_unknown),
            )
        };
        let (Some(unknown), Some(known), Some(seeds), Some(out)) = arrays else {
            return i.log.error("fmi2GetDirectionalDerivative with null arrays");
        };
        let unknown: Vec<i64> = unknown.iter().map(|&v| i64::from(v)).collect();
        let known: Vec<i64> = known.iter().map(|&v| i64::from(v)).collect();
        i.call_for_reals(
            f::DIRECTIONAL_DERIVATIVE,
            &[Part::i64(&unknown), Part::i64(&known), Part::f64(seeds)],
            out,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2SetRealInputDerivatives(
    c: Component,
    vr: *const Vr,
    n: usize,
    order: *const c_int,
    value: *const f64,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes arrays of `n`.
        let (Some(vrs), Some(orders), Some(values)) =
            (unsafe { (slice(vr, n), slice(order, n), slice(value, n)) })
        else {
            return i.log.error("fmi2SetRealInputDerivatives with null arrays");
        };
        let vrs: Vec<i64> = vrs.iter().map(|&v| i64::from(v)).collect();
        let orders: Vec<i64> = orders.iter().map(|&o| i64::from(o)).collect();
        i.simple(
            f::SET_INPUT_DERIVATIVES,
            &[Part::i64(&vrs), Part::i64(&orders), Part::f64(values)],
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetRealOutputDerivatives(
    c: Component,
    vr: *const Vr,
    n: usize,
    order: *const c_int,
    value: *mut f64,
) -> Status {
    with(c, |i| {
        // SAFETY: FMI passes arrays of `n`.
        let (Some(vrs), Some(orders), Some(out)) =
            (unsafe { (slice(vr, n), slice(order, n), slice_mut(value, n)) })
        else {
            return i.log.error("fmi2GetRealOutputDerivatives with null arrays");
        };
        let vrs: Vec<i64> = vrs.iter().map(|&v| i64::from(v)).collect();
        let orders: Vec<i64> = orders.iter().map(|&o| i64::from(o)).collect();
        i.call_for_reals(f::GET_OUTPUT_DERIVATIVES, &[Part::i64(&vrs), Part::i64(&orders)], out)
    })
}

/// `fmi2Get*Status`: `which` 0 status, 1 real, 2 integer, 3 boolean, 4 string.
fn get_status<T>(
    c: Component,
    which: i64,
    kind: c_int,
    value: *mut T,
    write: impl FnOnce(&mut Instance, &mut T) -> Option<()>,
) -> Status {
    with(c, |i| {
        if value.is_null() {
            return i.log.error("a get-status with a null value");
        }
        let status = i.simple(f::STATUS, &[Part::i64(&[which, i64::from(kind)])]);
        if status > fmi2::WARNING {
            return status;
        }
        // SAFETY: checked non-null; FMI passes a pointer to the importer's value.
        match write(i, unsafe { &mut *value }) {
            Some(()) => status,
            None => i.log.error("a get-status: a malformed reply"),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetStatus(c: Component, kind: c_int, value: *mut Status) -> Status {
    get_status(c, 0, kind, value, |i, out| {
        *out = i.reply_i64()? as Status;
        Some(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetRealStatus(c: Component, kind: c_int, value: *mut f64) -> Status {
    get_status(c, 1, kind, value, |i, out| {
        *out = i.reply_f64()?;
        Some(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetIntegerStatus(
    c: Component,
    kind: c_int,
    value: *mut c_int,
) -> Status {
    get_status(c, 2, kind, value, |i, out| {
        *out = i.reply_i64()? as c_int;
        Some(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetBooleanStatus(
    c: Component,
    kind: c_int,
    value: *mut c_int,
) -> Status {
    get_status(c, 3, kind, value, |i, out| {
        *out = i.reply_i64()? as c_int;
        Some(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fmi2GetStringStatus(
    c: Component,
    kind: c_int,
    value: *mut *const c_char,
) -> Status {
    get_status(c, 4, kind, value, |i, out| {
        let bytes = i.reply_bytes()?;
        *out = i.keep_string(&bytes);
        Some(())
    })
}
