//! The FMI 3.0 functions this proxy does not serve. FMI 3.0 has every binary export every
//! function of the standard (importers such as FMPy look them all up), and a function an FMU
//! does not support returns `fmi3Error`: each here logs which function it was and what the
//! proxy serves, then returns `fmi3Error`.
//!
//! Each is declared with the instance as its only parameter: on the C calling convention of
//! the platforms served (x86-64 System V) the caller passes the arguments in registers and
//! on its own stack, so a callee that reads only the first is called correctly.

#![allow(non_snake_case)]

use std::ffi::{CString, c_char, c_void};

use peerpipe_fmu::fmi3::{Instance as Fmi3Instance, LogMessage, Status};

use crate::ffi::with;
use crate::importer::ImporterLog;

/// What the proxy serves, said by every function here.
const SERVED: &str = "this proxy serves FMI 3.0 co-simulation of scalar Float64, Int32, \
                      Boolean and String variables, without event mode";

macro_rules! unsupported {
    ($($name:ident),* $(,)?) => {
        $(
            #[unsafe(no_mangle)]
            pub extern "C" fn $name(instance: Fmi3Instance) -> Status {
                with(instance, |i| i.log.error(&format!("{}: not supported: {SERVED}", stringify!($name))))
            }
        )*
    };
}

unsupported!(
    fmi3ActivateModelPartition,
    fmi3CompletedIntegratorStep,
    fmi3EnterConfigurationMode,
    fmi3EnterContinuousTimeMode,
    fmi3EnterEventMode,
    fmi3EnterStepMode,
    fmi3EvaluateDiscreteStates,
    fmi3ExitConfigurationMode,
    fmi3GetAdjointDerivative,
    fmi3GetBinary,
    fmi3GetClock,
    fmi3GetContinuousStateDerivatives,
    fmi3GetContinuousStates,
    fmi3GetDirectionalDerivative,
    fmi3GetEventIndicators,
    fmi3GetFloat32,
    fmi3GetInt16,
    fmi3GetInt64,
    fmi3GetInt8,
    fmi3GetIntervalDecimal,
    fmi3GetIntervalFraction,
    fmi3GetNominalsOfContinuousStates,
    fmi3GetNumberOfContinuousStates,
    fmi3GetNumberOfEventIndicators,
    fmi3GetNumberOfVariableDependencies,
    fmi3GetOutputDerivatives,
    fmi3GetShiftDecimal,
    fmi3GetShiftFraction,
    fmi3GetUInt16,
    fmi3GetUInt32,
    fmi3GetUInt64,
    fmi3GetUInt8,
    fmi3GetVariableDependencies,
    fmi3SetBinary,
    fmi3SetClock,
    fmi3SetContinuousStates,
    fmi3SetFloat32,
    fmi3SetInt16,
    fmi3SetInt64,
    fmi3SetInt8,
    fmi3SetIntervalDecimal,
    fmi3SetIntervalFraction,
    fmi3SetShiftDecimal,
    fmi3SetShiftFraction,
    fmi3SetTime,
    fmi3SetUInt16,
    fmi3SetUInt32,
    fmi3SetUInt64,
    fmi3SetUInt8,
    fmi3UpdateDiscreteStates,
);

/// Refuses an instantiation of another interface type, through its `logMessage`.
fn refuse(
    name: *const c_char,
    environment: *mut c_void,
    log: Option<LogMessage>,
    what: &str,
) -> Fmi3Instance {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: FMI's instance name is a NUL-terminated string, or null.
        let name = (!name.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(name) }.to_owned());
        ImporterLog::v3(log, environment, name.unwrap_or_else(CString::default))
            .error(&format!("{what} is not served: {SERVED}"));
    });
    std::ptr::null_mut()
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi3InstantiateModelExchange(
    name: *const c_char,
    _token: *const c_char,
    _resource_path: *const c_char,
    _visible: bool,
    _logging_on: bool,
    environment: *mut c_void,
    log: Option<LogMessage>,
) -> Fmi3Instance {
    refuse(name, environment, log, "model exchange")
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn fmi3InstantiateScheduledExecution(
    name: *const c_char,
    _token: *const c_char,
    _resource_path: *const c_char,
    _visible: bool,
    _logging_on: bool,
    environment: *mut c_void,
    log: Option<LogMessage>,
    _clock_update: *mut c_void,
    _lock_preemption: *mut c_void,
    _unlock_preemption: *mut c_void,
) -> Fmi3Instance {
    refuse(name, environment, log, "scheduled execution")
}
