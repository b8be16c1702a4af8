//! The FMI 2.0 C interface: its types (shared by the server, which calls an FMU's functions,
//! and the proxy, which exports them) and an FMU binary's co-simulation functions, loaded.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

/// `fmi2Component`.
pub type Component = *mut c_void;
/// `fmi2Status`.
pub type Status = c_int;
/// `fmi2OK`.
pub const OK: Status = 0;
/// `fmi2Warning`.
pub const WARNING: Status = 1;
/// `fmi2Discard`.
pub const DISCARD: Status = 2;
/// `fmi2Error`.
pub const ERROR: Status = 3;
/// `fmi2Fatal`.
pub const FATAL: Status = 4;
/// `fmi2Pending`.
pub const PENDING: Status = 5;
/// `fmi2CoSimulation`, the `fmuType` of `fmi2Instantiate`.
pub const CO_SIMULATION: c_int = 1;

/// `fmi2CallbackLogger`: a printf format and its arguments.
pub type Logger = unsafe extern "C" fn(
    env: *mut c_void,
    instance: *const c_char,
    status: Status,
    category: *const c_char,
    message: *const c_char,
    ...
);

/// `fmi2CallbackFunctions`.
#[repr(C)]
#[derive(Debug)]
pub struct CallbackFunctions {
    /// `logger`.
    pub logger: Option<Logger>,
    /// `allocateMemory`.
    pub allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    /// `freeMemory`.
    pub free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `stepFinished`.
    pub step_finished: Option<unsafe extern "C" fn(*mut c_void, Status)>,
    /// `componentEnvironment`.
    pub component_environment: *mut c_void,
}

/// `fmi2ValueReference`.
pub type Vr = u32;

crate::fmi_functions! {
    /// The functions of an FMI 2.0 binary, loaded; those the binary lacks are `None`.
    Functions, required: [instantiate = "fmi2Instantiate", free_instance = "fmi2FreeInstance", do_step = "fmi2DoStep", get_real = "fmi2GetReal", set_real = "fmi2SetReal"];
    set_debug_logging: b"fmi2SetDebugLogging" => fn(Component, c_int, usize, *const *const c_char) -> Status;
    instantiate: b"fmi2Instantiate" => fn(*const c_char, c_int, *const c_char, *const c_char, *const CallbackFunctions, c_int, c_int) -> Component;
    free_instance: b"fmi2FreeInstance" => fn(Component);
    setup_experiment: b"fmi2SetupExperiment" => fn(Component, c_int, f64, f64, c_int, f64) -> Status;
    enter_initialization_mode: b"fmi2EnterInitializationMode" => fn(Component) -> Status;
    exit_initialization_mode: b"fmi2ExitInitializationMode" => fn(Component) -> Status;
    terminate: b"fmi2Terminate" => fn(Component) -> Status;
    reset: b"fmi2Reset" => fn(Component) -> Status;
    get_real: b"fmi2GetReal" => fn(Component, *const Vr, usize, *mut f64) -> Status;
    get_integer: b"fmi2GetInteger" => fn(Component, *const Vr, usize, *mut c_int) -> Status;
    get_boolean: b"fmi2GetBoolean" => fn(Component, *const Vr, usize, *mut c_int) -> Status;
    get_string: b"fmi2GetString" => fn(Component, *const Vr, usize, *mut *const c_char) -> Status;
    set_real: b"fmi2SetReal" => fn(Component, *const Vr, usize, *const f64) -> Status;
    set_integer: b"fmi2SetInteger" => fn(Component, *const Vr, usize, *const c_int) -> Status;
    set_boolean: b"fmi2SetBoolean" => fn(Component, *const Vr, usize, *const c_int) -> Status;
    set_string: b"fmi2SetString" => fn(Component, *const Vr, usize, *const *const c_char) -> Status;
    get_fmu_state: b"fmi2GetFMUstate" => fn(Component, *mut *mut c_void) -> Status;
    set_fmu_state: b"fmi2SetFMUstate" => fn(Component, *mut c_void) -> Status;
    free_fmu_state: b"fmi2FreeFMUstate" => fn(Component, *mut *mut c_void) -> Status;
    serialized_fmu_state_size: b"fmi2SerializedFMUstateSize" => fn(Component, *mut c_void, *mut usize) -> Status;
    serialize_fmu_state: b"fmi2SerializeFMUstate" => fn(Component, *mut c_void, *mut u8, usize) -> Status;
    deserialize_fmu_state: b"fmi2DeSerializeFMUstate" => fn(Component, *const u8, usize, *mut *mut c_void) -> Status;
    get_directional_derivative: b"fmi2GetDirectionalDerivative" => fn(Component, *const Vr, usize, *const Vr, usize, *const f64, *mut f64) -> Status;
    set_real_input_derivatives: b"fmi2SetRealInputDerivatives" => fn(Component, *const Vr, usize, *const c_int, *const f64) -> Status;
    get_real_output_derivatives: b"fmi2GetRealOutputDerivatives" => fn(Component, *const Vr, usize, *const c_int, *mut f64) -> Status;
    do_step: b"fmi2DoStep" => fn(Component, f64, f64, c_int) -> Status;
    cancel_step: b"fmi2CancelStep" => fn(Component) -> Status;
    get_status: b"fmi2GetStatus" => fn(Component, c_int, *mut Status) -> Status;
    get_real_status: b"fmi2GetRealStatus" => fn(Component, c_int, *mut f64) -> Status;
    get_integer_status: b"fmi2GetIntegerStatus" => fn(Component, c_int, *mut c_int) -> Status;
    get_boolean_status: b"fmi2GetBooleanStatus" => fn(Component, c_int, *mut c_int) -> Status;
    get_string_status: b"fmi2GetStringStatus" => fn(Component, c_int, *mut *const c_char) -> Status;
}

/// The path of the binary of model `identifier` in an unpacked FMU at `root`, for this
/// platform (`binaries/linux64/IDENTIFIER.so`).
pub fn binary_path(root: &Path, identifier: &str) -> std::path::PathBuf {
    root.join("binaries").join(PLATFORM).join(format!("{identifier}.so"))
}

/// This platform's directory under `binaries/` (FMI 2.0).
pub const PLATFORM: &str = "linux64";
