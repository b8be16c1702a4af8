//! `peer fmu serve` for an FMI 3.0 co-simulation FMU: its binary loaded, its functions
//! served by name ([`crate::wire`], as for FMI 2.0), one instance per server. Scalar Float64,
//! Int32, Boolean and String variables (carried as the wire's reals, integers, booleans and
//! strings); no event mode, early return or intermediate update.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};

use peerpipe::parts::{Part, PartsOut};
use peerpipe::server::{Handler, Request, Response};

use crate::archive::Unpacked;
use crate::fmi3::{self, Functions, Instance, Status};
use crate::log::LogEnvironment;
use crate::model::{FmiVersion, ModelDescription};
use crate::reply::{Gotten, Owned, cstring, push_owned, to_vrs, vrs};
use crate::wire::{self, SETS_PARTS, SetsView, VarType, function as f};
use crate::{Error, fmi2};

/// The values of a get, and the FMU's integers and booleans before they are widened.
#[derive(Default)]
struct Values {
    got: Gotten,
    int32: Vec<i32>,
    booleans: Vec<bool>,
}

/// One FMI 3.0 co-simulation FMU, unpacked and loaded, serving one instance.
pub struct Fmi3Server {
    model: ModelDescription,
    functions: Functions,
    instance: Instance,
    log: Box<LogEnvironment>,
    /// `tolerance`, `start`, `stop` and whether the first and last are defined, for
    /// `fmi3EnterInitializationMode`.
    setup: ([bool; 2], [f64; 3]),
    states: HashMap<i64, *mut c_void>,
    next_state: i64,
    outputs: [Vec<u32>; 4],
    values: Values,
    refs: Vec<u32>,
    log_bytes: Vec<u8>,
    unpacked: Unpacked,
}

impl std::fmt::Debug for Fmi3Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi3Server").field("model", &self.model.model_name).finish_non_exhaustive()
    }
}

/// The log callback given to the FMU: the message is kept for the reply.
unsafe extern "C" fn log_message(
    env: *mut c_void,
    status: Status,
    category: *const c_char,
    message: *const c_char,
) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `env` is the instance environment given at instantiation, a live
        // `LogEnvironment`; category and message are NUL-terminated strings or null.
        unsafe {
            let log = &*(env as *const LogEnvironment);
            let text =
                |p: *const c_char| if p.is_null() { &[][..] } else { CStr::from_ptr(p).to_bytes() };
            log.push(status, text(category), text(message));
        }
    });
}

impl Fmi3Server {
    /// Loads the FMI 3.0 FMU `unpacked`, described by `model`.
    ///
    /// # Errors
    /// When `model` is not FMI 3.0 or the binary cannot be loaded.
    pub fn open(unpacked: Unpacked, model: ModelDescription) -> Result<Fmi3Server, Error> {
        if model.version != FmiVersion::V3 {
            return Err(Error::new("not an FMI 3.0 FMU"));
        }
        let binary = fmi3::binary_path(unpacked.dir(), &model.co_simulation.model_identifier);
        let functions = Functions::load(&binary)?;
        let outputs = VarType::ALL
            .map(|t| model.references(t, true).into_iter().map(|vr| vr as u32).collect());
        Ok(Fmi3Server {
            model,
            functions,
            instance: std::ptr::null_mut(),
            log: LogEnvironment::new(),
            setup: ([false; 2], [0.0; 3]),
            states: HashMap::new(),
            next_state: 1,
            outputs,
            values: Values::default(),
            refs: Vec::new(),
            log_bytes: Vec::new(),
            unpacked,
        })
    }

    fn instantiate(&mut self, call: &Request<'_>) -> Result<(Status, Vec<Vec<i64>>), String> {
        if !self.instance.is_null() {
            return Err("this server has an instance already: one instance per server".into());
        }
        let name = cstring(wire::bytes(&call.parts, SETS_PARTS)?)?;
        let token = wire::bytes(&call.parts, SETS_PARTS + 1)?;
        if token != self.model.token.as_bytes() {
            return Err(format!(
                "the proxy's instantiation token {:?} is not the FMU's {:?}",
                String::from_utf8_lossy(token),
                self.model.token
            ));
        }
        let token = cstring(token)?;
        let [visible, logging_on] = wire::i64s(&call.parts, SETS_PARTS + 2)? else {
            return Err("expected two flags".into());
        };
        let mut resources = self.unpacked.dir().join("resources").display().to_string();
        resources.push('/');
        let resources = cstring(resources.as_bytes())?;
        let instantiate =
            self.functions.instantiate_co_simulation.ok_or("no fmi3InstantiateCoSimulation")?;
        // SAFETY: NUL-terminated strings living through the call; the environment (the boxed
        // log) outlives the instance, freed in `Drop` before it; no intermediate variables.
        let instance = unsafe {
            instantiate(
                name.as_ptr(),
                token.as_ptr(),
                resources.as_ptr(),
                *visible != 0,
                *logging_on != 0,
                false,
                false,
                std::ptr::null(),
                0,
                self.log.as_environment(),
                Some(log_message),
                None,
            )
        };
        if instance.is_null() {
            self.log.push(
                fmi2::ERROR,
                b"logStatusError",
                b"fmi3InstantiateCoSimulation returned NULL",
            );
            return Ok((fmi2::ERROR, Vec::new()));
        }
        self.instance = instance;
        let mut extra: Vec<Vec<i64>> =
            self.outputs.iter().map(|v| v.iter().map(|&r| i64::from(r)).collect()).collect();
        extra.extend(VarType::ALL.map(|t| self.model.references(t, false)));
        Ok((fmi2::OK, extra))
    }

    fn apply_sets(&mut self, sets: &SetsView<'_>) -> Result<Status, String> {
        let (i, fs, refs) = (self.instance, &self.functions, &mut self.refs);
        let mut status = fmi2::OK;
        if !sets.reals.0.is_empty() {
            to_vrs(sets.reals.0, refs)?;
            let set = fs.set_float64.ok_or("no fmi3SetFloat64")?;
            // SAFETY: `refs` and the values have the same length, passed as both counts.
            status = status.max(unsafe {
                set(i, refs.as_ptr(), refs.len(), sets.reals.1.as_ptr(), refs.len())
            });
        }
        if !sets.ints.0.is_empty() {
            to_vrs(sets.ints.0, refs)?;
            let values: Vec<i32> = sets.ints.1.iter().map(|&v| v as i32).collect();
            let set = fs.set_int32.ok_or("the FMU does not export fmi3SetInt32")?;
            // SAFETY: as above.
            status = status
                .max(unsafe { set(i, refs.as_ptr(), refs.len(), values.as_ptr(), refs.len()) });
        }
        if !sets.bools.0.is_empty() {
            to_vrs(sets.bools.0, refs)?;
            let values: Vec<bool> = sets.bools.1.iter().map(|&v| v != 0).collect();
            let set = fs.set_boolean.ok_or("the FMU does not export fmi3SetBoolean")?;
            // SAFETY: as above.
            status = status
                .max(unsafe { set(i, refs.as_ptr(), refs.len(), values.as_ptr(), refs.len()) });
        }
        if !sets.strings.is_empty() {
            let records = wire::strings(sets.strings)?;
            let vrs: Vec<u32> = records.iter().map(|r| r.0).collect();
            let values = records.iter().map(|r| cstring(r.1)).collect::<Result<Vec<_>, _>>()?;
            let pointers: Vec<*const c_char> = values.iter().map(|s| s.as_ptr()).collect();
            let set = fs.set_string.ok_or("the FMU does not export fmi3SetString")?;
            // SAFETY: as above; the strings live through the call.
            status = status
                .max(unsafe { set(i, vrs.as_ptr(), vrs.len(), pointers.as_ptr(), vrs.len()) });
        }
        Ok(status)
    }

    /// `status` and, when the FMU can go on, the outputs.
    fn outputs(&mut self) -> Result<Option<Status>, String> {
        let [r, i, b, s] = &self.outputs;
        let status = self.values.get(&self.functions, self.instance, [r, i, b, s])?;
        Ok((status <= fmi2::WARNING).then_some(status))
    }

    fn state(&self, id: i64) -> Result<*mut c_void, String> {
        self.states.get(&id).copied().ok_or_else(|| format!("no FMU state {id}"))
    }

    fn keep_state(&mut self, state: *mut c_void) -> i64 {
        if state.is_null() {
            return -1;
        }
        self.next_state += 1;
        self.states.insert(self.next_state, state);
        self.next_state
    }

    /// Runs `call`, writing the reply's own parts into `extra` (and the values into
    /// `self.values` when it says so by returning true).
    fn dispatch(
        &mut self,
        call: &Request<'_>,
        extra: &mut Vec<Owned>,
    ) -> Result<(Status, bool), String> {
        let i = self.instance;
        let p = &call.parts;
        let at = |n: usize| SETS_PARTS + n;
        let fs = &self.functions;
        let missing = |name: &str| format!("the FMU does not export {name}");
        let first = |n: usize| wire::i64s(p, at(n)).map(|v| v.first().copied().unwrap_or(-1));
        let simple = |function: Option<unsafe extern "C" fn(Instance) -> Status>, name: &str| {
            // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
            function.map(|function| unsafe { function(i) }).ok_or_else(|| missing(name))
        };
        let status = match call.function {
            f::SET => fmi2::OK,
            f::DEBUG_LOGGING => {
                let on = first(0)? != 0;
                let names = wire::bytes(p, at(1))?
                    .split(|&b| b == 0)
                    .filter(|s| !s.is_empty())
                    .map(cstring)
                    .collect::<Result<Vec<_>, _>>()?;
                let pointers: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
                let set = fs.set_debug_logging.ok_or_else(|| missing("fmi3SetDebugLogging"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                unsafe { set(i, on, pointers.len(), pointers.as_ptr()) }
            }
            f::SETUP => {
                let (flags, times) = (wire::i64s(p, at(0))?, wire::f64s(p, at(1))?);
                let ([tol_defined, stop_defined], [tolerance, start, stop]) = (flags, times) else {
                    return Err("setup: expected two flags and three times".into());
                };
                self.setup = ([*tol_defined != 0, *stop_defined != 0], [*tolerance, *start, *stop]);
                fmi2::OK
            }
            f::ENTER_INIT => {
                let ([tol_defined, stop_defined], [tolerance, start, stop]) = self.setup;
                let enter = fs
                    .enter_initialization_mode
                    .ok_or_else(|| missing("fmi3EnterInitializationMode"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                unsafe { enter(i, tol_defined, tolerance, start, stop_defined, stop) }
            }
            f::EXIT_INIT => {
                let status = simple(fs.exit_initialization_mode, "fmi3ExitInitializationMode")?;
                return self.with_outputs(status);
            }
            f::TERMINATE => simple(fs.terminate, "fmi3Terminate")?,
            f::RESET => simple(fs.reset, "fmi3Reset")?,
            f::STEP => {
                let (times, flag) = (wire::f64s(p, at(0))?, wire::i64s(p, at(1))?);
                let ([t, h], [no_set_prior]) = (times, flag) else {
                    return Err("step: expected a time, a step size and a flag".into());
                };
                let step = fs.do_step.ok_or_else(|| missing("fmi3DoStep"))?;
                let (mut event, mut terminate, mut early, mut last) = (false, false, false, *t);
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe {
                    step(
                        i,
                        *t,
                        *h,
                        *no_set_prior != 0,
                        &mut event,
                        &mut terminate,
                        &mut early,
                        &mut last,
                    )
                };
                extra.push(Owned::F64(vec![last]));
                extra.push(Owned::I64(vec![
                    i64::from(event),
                    i64::from(terminate),
                    i64::from(early),
                ]));
                return self.with_outputs(status);
            }
            f::GET => {
                let refs: Vec<Vec<u32>> =
                    (0..4).map(|n| vrs(wire::i64s(p, at(n))?)).collect::<Result<_, _>>()?;
                let status = self.values.get(fs, i, [&refs[0], &refs[1], &refs[2], &refs[3]])?;
                return Ok((status, true));
            }
            f::GET_STATE => {
                let id = first(0)?;
                let mut state = if id < 0 { std::ptr::null_mut() } else { self.state(id)? };
                let get = fs.get_fmu_state.ok_or_else(|| missing("fmi3GetFMUState"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { get(i, &mut state) };
                let id = if id < 0 { self.keep_state(state) } else { id };
                extra.push(Owned::I64(vec![id]));
                status
            }
            f::SET_STATE => {
                let state = self.state(first(0)?)?;
                let set = fs.set_fmu_state.ok_or_else(|| missing("fmi3SetFMUState"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                unsafe { set(i, state) }
            }
            f::FREE_STATE => {
                let id = first(0)?;
                let mut state = self.state(id)?;
                let free = fs.free_fmu_state.ok_or_else(|| missing("fmi3FreeFMUState"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { free(i, &mut state) };
                self.states.remove(&id);
                status
            }
            f::SERIALIZE => {
                let state = self.state(first(0)?)?;
                let size_of = fs
                    .serialized_fmu_state_size
                    .ok_or_else(|| missing("fmi3SerializedFMUStateSize"))?;
                let serialize =
                    fs.serialize_fmu_state.ok_or_else(|| missing("fmi3SerializeFMUState"))?;
                let mut size = 0usize;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { size_of(i, state, &mut size) };
                if status > fmi2::WARNING {
                    return Ok((status, false));
                }
                let mut bytes = vec![0u8; size];
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = status.max(unsafe { serialize(i, state, bytes.as_mut_ptr(), size) });
                extra.push(Owned::Bytes(bytes));
                status
            }
            f::DESERIALIZE => {
                let bytes = wire::bytes(p, at(0))?;
                let deserialize =
                    fs.deserialize_fmu_state.ok_or_else(|| missing("fmi3DeserializeFMUState"))?;
                let mut state = std::ptr::null_mut();
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { deserialize(i, bytes.as_ptr(), bytes.len(), &mut state) };
                let id = self.keep_state(state);
                extra.push(Owned::I64(vec![id]));
                status
            }
            other => {
                return Err(format!(
                    "{other}: not a function of FMI 3.0 co-simulation as served here"
                ));
            }
        };
        Ok((status, false))
    }

    fn with_outputs(&mut self, status: Status) -> Result<(Status, bool), String> {
        if status > fmi2::WARNING {
            return Ok((status, false));
        }
        Ok(match self.outputs()? {
            Some(get_status) => (status.max(get_status), true),
            None => (status, false),
        })
    }
}

impl Values {
    /// Gets the values of `vrs` of each type from the instance `i`.
    fn get(&mut self, fs: &Functions, i: Instance, vrs: [&[u32]; 4]) -> Result<Status, String> {
        let mut status = fmi2::OK;
        let (n_real, n_int, n_bool, n_string) =
            (vrs[0].len(), vrs[1].len(), vrs[2].len(), vrs[3].len());
        self.got.reals.clear();
        self.got.reals.resize(n_real, 0.0);
        if n_real > 0 {
            let get = fs.get_float64.ok_or("no fmi3GetFloat64")?;
            // SAFETY: room for `n` values of `n` references.
            status = status.max(unsafe {
                get(i, vrs[0].as_ptr(), n_real, self.got.reals.as_mut_ptr(), n_real)
            });
        }
        self.got.ints.clear();
        if n_int > 0 {
            self.int32.clear();
            self.int32.resize(n_int, 0);
            let get = fs.get_int32.ok_or("the FMU does not export fmi3GetInt32")?;
            // SAFETY: as above.
            status = status
                .max(unsafe { get(i, vrs[1].as_ptr(), n_int, self.int32.as_mut_ptr(), n_int) });
            self.got.ints.extend(self.int32.iter().map(|&v| i64::from(v)));
        }
        self.got.bools.clear();
        if n_bool > 0 {
            self.booleans.clear();
            self.booleans.resize(n_bool, false);
            let get = fs.get_boolean.ok_or("the FMU does not export fmi3GetBoolean")?;
            // SAFETY: as above.
            status = status.max(unsafe {
                get(i, vrs[2].as_ptr(), n_bool, self.booleans.as_mut_ptr(), n_bool)
            });
            self.got.bools.extend(self.booleans.iter().map(|&v| i64::from(v)));
        }
        self.got.strings.clear();
        if n_string > 0 {
            let get = fs.get_string.ok_or("the FMU does not export fmi3GetString")?;
            let mut pointers = vec![std::ptr::null::<c_char>(); n_string];
            // SAFETY: as above; the FMU's strings are copied before its next call.
            status = status
                .max(unsafe { get(i, vrs[3].as_ptr(), n_string, pointers.as_mut_ptr(), n_string) });
            for (n, &p) in pointers.iter().enumerate() {
                let text =
                    // SAFETY: a NUL-terminated string the FMU returned (null is checked first).
                    if p.is_null() { &[][..] } else { unsafe { CStr::from_ptr(p) }.to_bytes() };
                wire::push_string(&mut self.got.strings, n as u32, text);
            }
        }
        Ok(status)
    }
}

impl Handler for Fmi3Server {
    fn name(&self) -> &str {
        "fmu"
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        if request.function.is_empty() {
            return Err("an FMU server serves functions by name (PARTS requests)".into());
        }
        self.answer(request, out).map(|()| Response::Parts)
    }

    fn functions(&self) -> Vec<String> {
        f::ALL.iter().map(|s| (*s).to_owned()).collect()
    }
}

impl Fmi3Server {
    /// Answers one call of a function by name, writing its reply's parts into `reply`.
    fn answer(&mut self, call: Request<'_>, reply: &mut PartsOut) -> Result<(), String> {
        let sets = SetsView::of(&call.parts)?;
        let mut extra = Vec::new();
        let mut lists = Vec::new();
        let (status, values) = if call.function == f::INSTANTIATE {
            let (status, parts) = self.instantiate(&call)?;
            lists = parts;
            (status, false)
        } else {
            if self.instance.is_null() {
                return Err(format!("{}: the FMU is not instantiated", call.function));
            }
            let status = self.apply_sets(&sets)?;
            if status > fmi2::WARNING {
                (status, false)
            } else {
                let (call_status, values) = self.dispatch(&call, &mut extra)?;
                (status.max(call_status), values)
            }
        };
        reply.i64(1)?[0] = i64::from(status);
        self.log.take_into(&mut self.log_bytes);
        reply.push(Part::bytes(&self.log_bytes))?;
        for list in &lists {
            reply.push(Part::i64(list))?;
        }
        if call.function == f::INSTANTIATE && !lists.is_empty() {
            reply.push(Part::bytes(self.unpacked.dir().as_os_str().as_encoded_bytes()))?;
        }
        push_owned(reply, &extra)?;
        if values {
            self.values.got.push_into(reply)?;
        }
        Ok(())
    }
}

impl Drop for Fmi3Server {
    fn drop(&mut self) {
        if self.instance.is_null() {
            return;
        }
        if let Some(free) = self.functions.free_fmu_state {
            for (_, mut state) in self.states.drain() {
                // SAFETY: a state of this live instance, freed once.
                unsafe { free(self.instance, &mut state) };
            }
        }
        if let Some(free) = self.functions.free_instance {
            // SAFETY: the live instance, freed once, before the library and the log go.
            unsafe { free(self.instance) };
        }
        self.instance = std::ptr::null_mut();
    }
}
