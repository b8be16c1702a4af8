//! `peer fmu serve` for an FMI 2.0 co-simulation FMU: its binary loaded, its functions
//! served by name ([`crate::wire`]), one instance per server.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};

use peerpipe::parts::{Part, PartsOut};
use peerpipe::server::{Handler, Request, Response};

use crate::archive::Unpacked;
use crate::fmi2::{self, CallbackFunctions, Component, Functions, Status};
use crate::log::{LogEnvironment, peerpipe_fmu_logger};
use crate::model::{FmiVersion, ModelDescription};
use crate::reply::{Gotten, Owned, cstring, push_owned, to_vrs, vrs};
use crate::wire::{self, SETS_PARTS, SetsView, VarType, function as f};
use crate::{Error, file_uri};

/// What a reply carries after its status and log.
enum Extra {
    None,
    /// Parts of their own.
    Owned(Vec<Owned>),
    /// The four parts of [`Values`].
    Values,
}

/// The values of a get, and the FMU's integers before they are widened.
#[derive(Default)]
struct Values {
    got: Gotten,
    scratch_ints: Vec<c_int>,
}

type GetInts = Option<unsafe extern "C" fn(Component, *const u32, usize, *mut c_int) -> Status>;

impl Values {
    /// Gets the values of `vrs` of each type from the instance `c`.
    fn get(&mut self, fs: &Functions, c: Component, vrs: [&[u32]; 4]) -> Result<Status, String> {
        let mut status = fmi2::OK;
        self.got.reals.clear();
        self.got.reals.resize(vrs[0].len(), 0.0);
        if !vrs[0].is_empty() {
            let get = fs.get_real.ok_or("no fmi2GetReal")?;
            // SAFETY: `reals` has room for `nvr` values.
            status = status
                .max(unsafe { get(c, vrs[0].as_ptr(), vrs[0].len(), self.got.reals.as_mut_ptr()) });
        }
        let scratch = &mut self.scratch_ints;
        let mut ints_of =
            |refs: &[u32], get: GetInts, name: &str, out: &mut Vec<i64>| -> Result<(), String> {
                out.clear();
                if refs.is_empty() {
                    return Ok(());
                }
                scratch.clear();
                scratch.resize(refs.len(), 0);
                let get = get.ok_or_else(|| format!("the FMU does not export {name}"))?;
                // SAFETY: `scratch` has room for `nvr` values.
                status =
                    status.max(unsafe { get(c, refs.as_ptr(), refs.len(), scratch.as_mut_ptr()) });
                out.extend(scratch.iter().map(|&v| i64::from(v)));
                Ok(())
            };
        ints_of(vrs[1], fs.get_integer, "fmi2GetInteger", &mut self.got.ints)?;
        ints_of(vrs[2], fs.get_boolean, "fmi2GetBoolean", &mut self.got.bools)?;
        self.got.strings.clear();
        if !vrs[3].is_empty() {
            let get = fs.get_string.ok_or("the FMU does not export fmi2GetString")?;
            let mut pointers = vec![std::ptr::null::<c_char>(); vrs[3].len()];
            // SAFETY: `pointers` has room for `nvr` values; the FMU's strings are copied
            // before its next call.
            status =
                status.max(unsafe { get(c, vrs[3].as_ptr(), vrs[3].len(), pointers.as_mut_ptr()) });
            for (i, &p) in pointers.iter().enumerate() {
                let text =
                    // SAFETY: a NUL-terminated string the FMU returned (null is checked first).
                    if p.is_null() { &[][..] } else { unsafe { CStr::from_ptr(p) }.to_bytes() };
                wire::push_string(&mut self.got.strings, i as u32, text);
            }
        }
        Ok(status)
    }
}

/// One FMI 2.0 co-simulation FMU, unpacked and loaded, serving one instance.
pub struct Fmi2Server {
    model: ModelDescription,
    functions: Functions,
    component: Component,
    log: Box<LogEnvironment>,
    callbacks: Box<CallbackFunctions>,
    states: HashMap<i64, *mut c_void>,
    next_state: i64,
    outputs: [Vec<u32>; 4],
    log_bytes: Vec<u8>,
    values: Values,
    scratch_vrs: Vec<u32>,
    unpacked: Unpacked,
}

impl std::fmt::Debug for Fmi2Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmi2Server").field("model", &self.model.model_name).finish_non_exhaustive()
    }
}

impl Fmi2Server {
    /// Unpacks and loads the FMI 2.0 FMU `unpacked`, described by `model`.
    ///
    /// # Errors
    /// When `model` is not FMI 2.0 or the binary cannot be loaded.
    pub fn open(unpacked: Unpacked, model: ModelDescription) -> Result<Fmi2Server, Error> {
        if model.version != FmiVersion::V2 {
            return Err(Error::new("not an FMI 2.0 FMU"));
        }
        let binary = fmi2::binary_path(unpacked.dir(), &model.co_simulation.model_identifier);
        let functions = Functions::load(&binary)?;
        let log = LogEnvironment::new();
        let callbacks = Box::new(CallbackFunctions {
            logger: Some(peerpipe_fmu_logger),
            allocate_memory: Some(libc::calloc),
            free_memory: Some(libc::free),
            step_finished: None,
            component_environment: log.as_environment(),
        });
        let outputs = VarType::ALL
            .map(|t| model.references(t, true).into_iter().map(|vr| vr as u32).collect());
        Ok(Fmi2Server {
            model,
            functions,
            component: std::ptr::null_mut(),
            log,
            callbacks,
            states: HashMap::new(),
            next_state: 1,
            outputs,
            log_bytes: Vec::new(),
            values: Values::default(),
            scratch_vrs: Vec::new(),
            unpacked,
        })
    }

    fn instantiate(&mut self, call: &Request<'_>) -> Result<(Status, Extra), String> {
        if !self.component.is_null() {
            return Err("this server has an instance already: one instance per server".into());
        }
        let name = cstring(wire::bytes(&call.parts, SETS_PARTS)?)?;
        let token = wire::bytes(&call.parts, SETS_PARTS + 1)?;
        if token != self.model.token.as_bytes() {
            return Err(format!(
                "the proxy's GUID {:?} is not the FMU's {:?}",
                String::from_utf8_lossy(token),
                self.model.token
            ));
        }
        let token = cstring(token)?;
        let flags = wire::i64s(&call.parts, SETS_PARTS + 2)?;
        let [visible, logging_on] = flags else { return Err("expected two flags".into()) };
        let resources = cstring(file_uri(&self.unpacked.dir().join("resources")).as_bytes())?;
        let instantiate = self.functions.instantiate.ok_or("no fmi2Instantiate")?;
        // SAFETY: the arguments are NUL-terminated strings living through the call and the
        // callbacks, boxed and kept as long as the instance (freed in `Drop` before them).
        let component = unsafe {
            instantiate(
                name.as_ptr(),
                fmi2::CO_SIMULATION,
                token.as_ptr(),
                resources.as_ptr(),
                &raw const *self.callbacks,
                *visible as c_int,
                *logging_on as c_int,
            )
        };
        if component.is_null() {
            self.log.push(fmi2::ERROR, b"logStatusError", b"fmi2Instantiate returned NULL");
            return Ok((fmi2::ERROR, Extra::None));
        }
        self.component = component;
        let mut extra: Vec<Owned> = self
            .outputs
            .iter()
            .map(|v| Owned::I64(v.iter().map(|&r| i64::from(r)).collect()))
            .collect();
        extra.extend(VarType::ALL.map(|t| Owned::I64(self.model.references(t, false))));
        // Where the FMU is unpacked: a proxy on this machine removes it if this server is
        // killed before it can.
        let dir = self.unpacked.dir().as_os_str().as_encoded_bytes().to_vec();
        extra.push(Owned::Bytes(dir));
        Ok((fmi2::OK, Extra::Owned(extra)))
    }

    fn apply_sets(&mut self, sets: &SetsView<'_>) -> Result<Status, String> {
        let c = self.component;
        let refs = &mut self.scratch_vrs;
        let mut status = fmi2::OK;
        if !sets.reals.0.is_empty() {
            to_vrs(sets.reals.0, refs)?;
            let set = self.functions.set_real.ok_or("no fmi2SetReal")?;
            // SAFETY: `refs` and the values have the same length, passed as `nvr`.
            status =
                status.max(unsafe { set(c, refs.as_ptr(), refs.len(), sets.reals.1.as_ptr()) });
        }
        for (pair, set, name) in [
            (sets.ints, self.functions.set_integer, "fmi2SetInteger"),
            (sets.bools, self.functions.set_boolean, "fmi2SetBoolean"),
        ] {
            if pair.0.is_empty() {
                continue;
            }
            to_vrs(pair.0, refs)?;
            let values = &mut self.values.scratch_ints;
            values.clear();
            values.extend(pair.1.iter().map(|&v| v as c_int));
            let set = set.ok_or_else(|| format!("the FMU does not export {name}"))?;
            // SAFETY: as above.
            status = status.max(unsafe { set(c, refs.as_ptr(), refs.len(), values.as_ptr()) });
        }
        if !sets.strings.is_empty() {
            let records = wire::strings(sets.strings)?;
            let refs: Vec<u32> = records.iter().map(|r| r.0).collect();
            let values = records.iter().map(|r| cstring(r.1)).collect::<Result<Vec<_>, _>>()?;
            let pointers: Vec<*const c_char> = values.iter().map(|s| s.as_ptr()).collect();
            let set = self.functions.set_string.ok_or("the FMU does not export fmi2SetString")?;
            // SAFETY: as above; the strings live through the call.
            status = status.max(unsafe { set(c, refs.as_ptr(), refs.len(), pointers.as_ptr()) });
        }
        Ok(status)
    }

    /// `status` and, when the FMU can go on, the outputs.
    fn with_outputs(&mut self, status: Status) -> Result<(Status, Extra), String> {
        if status > fmi2::WARNING {
            return Ok((status, Extra::None));
        }
        let [r, i, b, s] = &self.outputs;
        match self.values.get(&self.functions, self.component, [r, i, b, s])? {
            get_status if get_status <= fmi2::WARNING => {
                Ok((status.max(get_status), Extra::Values))
            }
            _ => Ok((status, Extra::None)),
        }
    }

    fn state(&self, id: i64) -> Result<*mut c_void, String> {
        self.states.get(&id).copied().ok_or_else(|| format!("no FMU state {id}"))
    }

    fn dispatch(&mut self, call: &Request<'_>) -> Result<(Status, Extra), String> {
        let c = self.component;
        let p = &call.parts;
        let at = |i: usize| SETS_PARTS + i;
        let fs = &self.functions;
        let missing = |name: &str| format!("the FMU does not export {name}");
        let simple = |function: Option<unsafe extern "C" fn(Component) -> Status>, name: &str| {
            // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
            function.map(|function| unsafe { function(c) }).ok_or_else(|| missing(name))
        };
        let (status, owned) = match call.function {
            f::SET => (fmi2::OK, Vec::new()),
            f::DEBUG_LOGGING => {
                let on = wire::i64s(p, at(0))?.first().copied().unwrap_or(0);
                let categories = wire::bytes(p, at(1))?;
                let names = categories
                    .split(|&b| b == 0)
                    .filter(|s| !s.is_empty())
                    .map(cstring)
                    .collect::<Result<Vec<_>, _>>()?;
                let pointers: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
                let set = fs.set_debug_logging.ok_or_else(|| missing("fmi2SetDebugLogging"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                (unsafe { set(c, on as c_int, pointers.len(), pointers.as_ptr()) }, Vec::new())
            }
            f::SETUP => {
                let (flags, times) = (wire::i64s(p, at(0))?, wire::f64s(p, at(1))?);
                let ([tol_defined, stop_defined], [tolerance, start, stop]) = (flags, times) else {
                    return Err("setup: expected two flags and three times".into());
                };
                let setup = fs.setup_experiment.ok_or_else(|| missing("fmi2SetupExperiment"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe {
                    setup(
                        c,
                        *tol_defined as c_int,
                        *tolerance,
                        *start,
                        *stop_defined as c_int,
                        *stop,
                    )
                };
                (status, Vec::new())
            }
            f::ENTER_INIT => {
                (simple(fs.enter_initialization_mode, "fmi2EnterInitializationMode")?, Vec::new())
            }
            f::EXIT_INIT => {
                let status = simple(fs.exit_initialization_mode, "fmi2ExitInitializationMode")?;
                return self.with_outputs(status);
            }
            f::TERMINATE => (simple(fs.terminate, "fmi2Terminate")?, Vec::new()),
            f::RESET => (simple(fs.reset, "fmi2Reset")?, Vec::new()),
            f::CANCEL_STEP => (simple(fs.cancel_step, "fmi2CancelStep")?, Vec::new()),
            f::STEP => {
                let (times, flag) = (wire::f64s(p, at(0))?, wire::i64s(p, at(1))?);
                let ([t, h], [no_set_prior]) = (times, flag) else {
                    return Err("step: expected a time, a step size and a flag".into());
                };
                let step = fs.do_step.ok_or_else(|| missing("fmi2DoStep"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { step(c, *t, *h, *no_set_prior as c_int) };
                return self.with_outputs(status);
            }
            f::GET => {
                let refs: Vec<Vec<u32>> =
                    (0..4).map(|i| vrs(wire::i64s(p, at(i))?)).collect::<Result<_, _>>()?;
                let status = self.values.get(
                    &self.functions,
                    c,
                    [&refs[0], &refs[1], &refs[2], &refs[3]],
                )?;
                return Ok((status, Extra::Values));
            }
            f::GET_STATE => {
                let id = wire::i64s(p, at(0))?.first().copied().unwrap_or(-1);
                let mut state = if id < 0 { std::ptr::null_mut() } else { self.state(id)? };
                let get = fs.get_fmu_state.ok_or_else(|| missing("fmi2GetFMUstate"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { get(c, &mut state) };
                let id = if id < 0 && !state.is_null() {
                    self.next_state += 1;
                    self.states.insert(self.next_state, state);
                    self.next_state
                } else {
                    id
                };
                (status, vec![Owned::I64(vec![id])])
            }
            f::SET_STATE => {
                let state = self.state(wire::i64s(p, at(0))?.first().copied().unwrap_or(-1))?;
                let set = fs.set_fmu_state.ok_or_else(|| missing("fmi2SetFMUstate"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                (unsafe { set(c, state) }, Vec::new())
            }
            f::FREE_STATE => {
                let id = wire::i64s(p, at(0))?.first().copied().unwrap_or(-1);
                let mut state = self.state(id)?;
                let free = fs.free_fmu_state.ok_or_else(|| missing("fmi2FreeFMUstate"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { free(c, &mut state) };
                self.states.remove(&id);
                (status, Vec::new())
            }
            f::SERIALIZE => {
                let state = self.state(wire::i64s(p, at(0))?.first().copied().unwrap_or(-1))?;
                let size_of = fs
                    .serialized_fmu_state_size
                    .ok_or_else(|| missing("fmi2SerializedFMUstateSize"))?;
                let serialize =
                    fs.serialize_fmu_state.ok_or_else(|| missing("fmi2SerializeFMUstate"))?;
                let mut size = 0usize;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { size_of(c, state, &mut size) };
                if status > fmi2::WARNING {
                    return Ok((status, Extra::None));
                }
                let mut bytes = vec![0u8; size];
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = status.max(unsafe { serialize(c, state, bytes.as_mut_ptr(), size) });
                (status, vec![Owned::Bytes(bytes)])
            }
            f::DESERIALIZE => {
                let bytes = wire::bytes(p, at(0))?;
                let deserialize =
                    fs.deserialize_fmu_state.ok_or_else(|| missing("fmi2DeSerializeFMUstate"))?;
                let mut state = std::ptr::null_mut();
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe { deserialize(c, bytes.as_ptr(), bytes.len(), &mut state) };
                let id = if state.is_null() {
                    -1
                } else {
                    self.next_state += 1;
                    self.states.insert(self.next_state, state);
                    self.next_state
                };
                (status, vec![Owned::I64(vec![id])])
            }
            f::DIRECTIONAL_DERIVATIVE => {
                let (unknown, known) = (vrs(wire::i64s(p, at(0))?)?, vrs(wire::i64s(p, at(1))?)?);
                let seeds = wire::f64s(p, at(2))?;
                if seeds.len() != known.len() {
                    return Err("directional_derivative: one seed per known".into());
                }
                let mut out = vec![0.0; unknown.len()];
                let get = fs
                    .get_directional_derivative
                    .ok_or_else(|| missing("fmi2GetDirectionalDerivative"))?;
                // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                let status = unsafe {
                    get(
                        c,
                        unknown.as_ptr(),
                        unknown.len(),
                        known.as_ptr(),
                        known.len(),
                        seeds.as_ptr(),
                        out.as_mut_ptr(),
                    )
                };
                (status, vec![Owned::F64(out)])
            }
            f::SET_INPUT_DERIVATIVES | f::GET_OUTPUT_DERIVATIVES => {
                let refs = vrs(wire::i64s(p, at(0))?)?;
                let orders: Vec<c_int> =
                    wire::i64s(p, at(1))?.iter().map(|&o| o as c_int).collect();
                if orders.len() != refs.len() {
                    return Err(format!("{}: one order per reference", call.function));
                }
                if call.function == f::SET_INPUT_DERIVATIVES {
                    let values = wire::f64s(p, at(2))?;
                    if values.len() != refs.len() {
                        return Err("set_input_derivatives: one value per reference".into());
                    }
                    let set = fs
                        .set_real_input_derivatives
                        .ok_or_else(|| missing("fmi2SetRealInputDerivatives"))?;
                    (
                        // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                        unsafe {
                            set(c, refs.as_ptr(), refs.len(), orders.as_ptr(), values.as_ptr())
                        },
                        Vec::new(),
                    )
                } else {
                    let mut out = vec![0.0; refs.len()];
                    let get = fs
                        .get_real_output_derivatives
                        .ok_or_else(|| missing("fmi2GetRealOutputDerivatives"))?;
                    // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                    let status = unsafe {
                        get(c, refs.as_ptr(), refs.len(), orders.as_ptr(), out.as_mut_ptr())
                    };
                    (status, vec![Owned::F64(out)])
                }
            }
            f::STATUS => {
                let args = wire::i64s(p, at(0))?;
                let [which, kind] = args else {
                    return Err("status: expected which and kind".into());
                };
                let kind = *kind as c_int;
                match which {
                    0 | 2 | 3 => {
                        let (get, name) = match which {
                            0 => (fs.get_status, "fmi2GetStatus"),
                            2 => (fs.get_integer_status, "fmi2GetIntegerStatus"),
                            _ => (fs.get_boolean_status, "fmi2GetBooleanStatus"),
                        };
                        let mut value: c_int = 0;
                        let status =
                            // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                            unsafe { get.ok_or_else(|| missing(name))?(c, kind, &mut value) };
                        (status, vec![Owned::I64(vec![i64::from(value)])])
                    }
                    1 => {
                        let mut value = 0.0;
                        let get = fs.get_real_status.ok_or_else(|| missing("fmi2GetRealStatus"))?;
                        // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                        (unsafe { get(c, kind, &mut value) }, vec![Owned::F64(vec![value])])
                    }
                    _ => {
                        let mut value: *const c_char = std::ptr::null();
                        let get =
                            fs.get_string_status.ok_or_else(|| missing("fmi2GetStringStatus"))?;
                        // SAFETY: the live instance (checked by `call`); arrays of the lengths passed.
                        let status = unsafe { get(c, kind, &mut value) };
                        // SAFETY: a NUL-terminated string, or null.
                        let text = if value.is_null() {
                            Vec::new()
                        } else {
                            // SAFETY: a NUL-terminated string the FMU returned (null is checked first).
                            unsafe { CStr::from_ptr(value) }.to_bytes().to_vec()
                        };
                        (status, vec![Owned::Bytes(text)])
                    }
                }
            }
            other => return Err(format!("unknown function {other:?}")),
        };
        Ok((status, Extra::Owned(owned)))
    }
}

impl Handler for Fmi2Server {
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

impl Fmi2Server {
    /// Answers one call of a function by name, writing its reply's parts into `reply`.
    fn answer(&mut self, call: Request<'_>, reply: &mut PartsOut) -> Result<(), String> {
        let sets = SetsView::of(&call.parts)?;
        let (status, extra) = if call.function == f::INSTANTIATE {
            self.instantiate(&call)?
        } else {
            if self.component.is_null() {
                return Err(format!("{}: the FMU is not instantiated", call.function));
            }
            let status = self.apply_sets(&sets)?;
            if status > fmi2::WARNING {
                (status, Extra::None)
            } else {
                let (call_status, extra) = self.dispatch(&call)?;
                (status.max(call_status), extra)
            }
        };
        reply.i64(1)?[0] = i64::from(status);
        self.log.take_into(&mut self.log_bytes);
        reply.push(Part::bytes(&self.log_bytes))?;
        match extra {
            Extra::None => {}
            Extra::Owned(parts) => push_owned(reply, &parts)?,
            Extra::Values => self.values.got.push_into(reply)?,
        }
        Ok(())
    }
}

impl Drop for Fmi2Server {
    fn drop(&mut self) {
        if self.component.is_null() {
            return;
        }
        if let Some(free) = self.functions.free_fmu_state {
            for (_, mut state) in self.states.drain() {
                // SAFETY: a state of this live instance, freed once.
                unsafe { free(self.component, &mut state) };
            }
        }
        if let Some(free) = self.functions.free_instance {
            // SAFETY: the live instance, freed once, before the library and the callbacks go.
            unsafe { free(self.component) };
        }
        self.component = std::ptr::null_mut();
    }
}
