//! The FMI 3.0 C interface, as far as this crate serves it (co-simulation; scalar Float64,
//! Int32, Boolean and String variables): its types, shared by the server and the proxy, and
//! an FMU binary's functions, loaded.

use std::ffi::{c_char, c_void};
use std::path::Path;

/// `fmi3Instance`.
pub type Instance = *mut c_void;
/// `fmi3Status` (`fmi3OK` … `fmi3Fatal`, as FMI 2.0's without `Pending`).
pub type Status = std::ffi::c_int;
/// `fmi3ValueReference`.
pub type Vr = u32;
/// `fmi3LogMessageCallback`: the message is formatted already.
pub type LogMessage = unsafe extern "C" fn(
    env: *mut c_void,
    status: Status,
    category: *const c_char,
    message: *const c_char,
);
/// `fmi3IntermediateUpdateCallback`, which this crate never gives.
pub type IntermediateUpdate =
    unsafe extern "C" fn(*mut c_void, f64, bool, bool, bool, bool, *mut bool, *mut f64);

crate::fmi_functions! {
    /// The functions of an FMI 3.0 binary, loaded; those the binary lacks are `None`.
    Functions, required: [instantiate_co_simulation = "fmi3InstantiateCoSimulation", free_instance = "fmi3FreeInstance", do_step = "fmi3DoStep", get_float64 = "fmi3GetFloat64", set_float64 = "fmi3SetFloat64"];
    set_debug_logging: b"fmi3SetDebugLogging" => fn(Instance, bool, usize, *const *const c_char) -> Status;
    instantiate_co_simulation: b"fmi3InstantiateCoSimulation" => fn(*const c_char, *const c_char, *const c_char, bool, bool, bool, bool, *const Vr, usize, *mut c_void, Option<LogMessage>, Option<IntermediateUpdate>) -> Instance;
    free_instance: b"fmi3FreeInstance" => fn(Instance);
    enter_initialization_mode: b"fmi3EnterInitializationMode" => fn(Instance, bool, f64, f64, bool, f64) -> Status;
    exit_initialization_mode: b"fmi3ExitInitializationMode" => fn(Instance) -> Status;
    terminate: b"fmi3Terminate" => fn(Instance) -> Status;
    reset: b"fmi3Reset" => fn(Instance) -> Status;
    get_float64: b"fmi3GetFloat64" => fn(Instance, *const Vr, usize, *mut f64, usize) -> Status;
    get_int32: b"fmi3GetInt32" => fn(Instance, *const Vr, usize, *mut i32, usize) -> Status;
    get_boolean: b"fmi3GetBoolean" => fn(Instance, *const Vr, usize, *mut bool, usize) -> Status;
    get_string: b"fmi3GetString" => fn(Instance, *const Vr, usize, *mut *const c_char, usize) -> Status;
    set_float64: b"fmi3SetFloat64" => fn(Instance, *const Vr, usize, *const f64, usize) -> Status;
    set_int32: b"fmi3SetInt32" => fn(Instance, *const Vr, usize, *const i32, usize) -> Status;
    set_boolean: b"fmi3SetBoolean" => fn(Instance, *const Vr, usize, *const bool, usize) -> Status;
    set_string: b"fmi3SetString" => fn(Instance, *const Vr, usize, *const *const c_char, usize) -> Status;
    get_fmu_state: b"fmi3GetFMUState" => fn(Instance, *mut *mut c_void) -> Status;
    set_fmu_state: b"fmi3SetFMUState" => fn(Instance, *mut c_void) -> Status;
    free_fmu_state: b"fmi3FreeFMUState" => fn(Instance, *mut *mut c_void) -> Status;
    serialized_fmu_state_size: b"fmi3SerializedFMUStateSize" => fn(Instance, *mut c_void, *mut usize) -> Status;
    serialize_fmu_state: b"fmi3SerializeFMUState" => fn(Instance, *mut c_void, *mut u8, usize) -> Status;
    deserialize_fmu_state: b"fmi3DeserializeFMUState" => fn(Instance, *const u8, usize, *mut *mut c_void) -> Status;
    do_step: b"fmi3DoStep" => fn(Instance, f64, f64, bool, *mut bool, *mut bool, *mut bool, *mut f64) -> Status;
}

/// This platform's directory under `binaries/` (FMI 3.0).
pub const PLATFORM: &str = "x86_64-linux";

/// The path of the binary of model `identifier` in an unpacked FMU at `root`, for this
/// platform (`binaries/x86_64-linux/IDENTIFIER.so`).
pub fn binary_path(root: &Path, identifier: &str) -> std::path::PathBuf {
    root.join("binaries").join(PLATFORM).join(format!("{identifier}.so"))
}
