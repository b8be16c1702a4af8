//! One instance of the proxy: its server, the sets kept for the next call, and the outputs
//! the last step brought back, which answer the gets that follow it.

use std::collections::HashMap;
use std::ffi::{CString, c_int};
use std::path::Path;

use peerpipe::parts::Part;
use peerpipe::{Peer, peer::PartsReply};
use peerpipe_fmu::fmi2::{self, Status};
use peerpipe_fmu::wire::{self, REPLY_HEAD, Sets, VarType, function as f};

use crate::importer::ImporterLog;

/// Hashes a value reference cheaply (a multiplication): the maps below are looked up for every
/// value set and got.
#[derive(Clone, Copy, Debug, Default)]
pub struct VrHasher(u64);

impl std::hash::Hasher for VrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Hash = std::hash::BuildHasherDefault<VrHasher>;
type VrSet = std::collections::HashSet<u32, Hash>;
type VrMap = HashMap<u32, usize, Hash>;

/// The outputs of the last step, valid until the next set or call.
#[derive(Debug, Default)]
struct Outputs {
    valid: bool,
    reals: Vec<f64>,
    ints: Vec<i64>,
    bools: Vec<i64>,
    strings: Vec<CString>,
}

/// One instance.
#[derive(Debug)]
pub struct Instance {
    pub log: ImporterLog,
    peer: Option<Peer>,
    /// Why the server is gone, once it is.
    failed: Option<String>,
    /// The references of each type the model has.
    known: [VrSet; 4],
    /// Each output's position in the step's reply, by type.
    output_index: [VrMap; 4],
    outputs: Outputs,
    pending: Sets,
    reply: PartsReply,
    /// Strings returned by the last gets, valid until the next call.
    returned: Vec<CString>,
    /// Serialized states, fetched by `fmi2SerializedFMUstateSize`.
    serialized: HashMap<i64, Vec<u8>>,
    /// A serialized state handed out, valid until the next call.
    returned_bytes: Vec<u8>,
    /// Where a server on this machine unpacked the FMU, removed here if it is killed.
    server_dir: Option<std::path::PathBuf>,
}

impl Instance {
    /// Starts the server, instantiates the FMU in it and learns its variables.
    ///
    /// # Errors
    /// The status and message when it cannot (after logging them).
    pub fn new(
        log: ImporterLog,
        guid: &[u8],
        resources: &Path,
        visible: bool,
        logging_on: bool,
    ) -> Result<Instance, String> {
        let (peer, local) = crate::launch::start(resources).map_err(|e| e.to_string())?;
        let mut instance = Instance {
            log,
            peer: Some(peer),
            failed: None,
            known: Default::default(),
            output_index: Default::default(),
            outputs: Outputs::default(),
            pending: Sets::default(),
            reply: PartsReply::new(),
            returned: Vec::new(),
            serialized: HashMap::new(),
            returned_bytes: Vec::new(),
            server_dir: None,
        };
        let name = instance.log.name().as_bytes().to_vec();
        let flags = [i64::from(visible), i64::from(logging_on)];
        let status = instance
            .call(f::INSTANTIATE, &[Part::bytes(&name), Part::bytes(guid), Part::i64(&flags)])
            .map_err(|_| "the server refused to instantiate the FMU".to_owned())?;
        if status > fmi2::WARNING {
            return Err("the FMU's fmi2Instantiate failed in its server".into());
        }
        let parts = instance.reply.parts();
        let mut known: [VrSet; 4] = Default::default();
        let mut output_index: [VrMap; 4] = Default::default();
        for t in VarType::ALL {
            let outputs = wire::i64s(&parts, REPLY_HEAD + t.index())?;
            output_index[t.index()] =
                outputs.iter().enumerate().map(|(i, &vr)| (vr as u32, i)).collect();
            let all = wire::i64s(&parts, REPLY_HEAD + 4 + t.index())?;
            known[t.index()] = all.iter().map(|&vr| vr as u32).collect();
        }
        let dir = wire::bytes(&parts, REPLY_HEAD + 8)?;
        let dir = std::path::PathBuf::from(
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir),
        );
        instance.known = known;
        instance.output_index = output_index;
        instance.server_dir = local.then_some(dir);
        Ok(instance)
    }

    /// Calls `function` with the sets kept and `extra`: the status, after the messages the FMU
    /// logged reached the importer. `Err(status)` when the call failed (logged).
    fn call(&mut self, function: &str, extra: &[Part<'_>]) -> Result<Status, Status> {
        self.call_keeping(function, extra, None)
    }

    /// [`Instance::call`], keeping the outputs the reply has from part `outputs` on.
    fn call_keeping(
        &mut self,
        function: &str,
        extra: &[Part<'_>],
        outputs: Option<usize>,
    ) -> Result<Status, Status> {
        self.outputs.valid = false;
        if let Some(reason) = &self.failed {
            return Err(self.log.error(&format!("the FMU's server is gone ({reason})")));
        }
        let Some(peer) = self.peer.as_mut() else {
            return Err(self.log.error("the FMU's server is gone"));
        };
        // On the stack: a step sends its sets and two parts of its own.
        const MOST: usize = wire::SETS_PARTS + 4;
        let sets = self.pending.parts();
        let mut parts = [sets[0]; MOST];
        let count = wire::SETS_PARTS + extra.len();
        let result = if count <= MOST {
            parts[..wire::SETS_PARTS].copy_from_slice(&sets);
            parts[wire::SETS_PARTS..count].copy_from_slice(extra);
            peer.call_parts_any(function, &parts[..count], &mut self.reply)
        } else {
            let parts: Vec<Part<'_>> = sets.iter().chain(extra).copied().collect();
            peer.call_parts_any(function, &parts, &mut self.reply)
        };
        self.pending.clear();
        match result {
            Ok(_) => {}
            Err(peerpipe::Error::Remote { message, .. }) => {
                return Err(self.log.error(&format!("{function}: {message}")));
            }
            Err(e) => {
                let reason = e.to_string();
                if let Some(peer) = self.peer.take() {
                    let _ = peer.terminate();
                }
                self.remove_server_dir();
                let message = format!("the FMU's server failed during {function}: {reason}");
                self.failed = Some(reason);
                return Err(self.log.error(&message));
            }
        }
        let parts = self.reply.parts();
        let head = wire::i64s(&parts, 0).and_then(|s| s.first().copied().ok_or("no status".into()));
        let status = match head {
            Ok(status) => status as Status,
            Err(e) => return Err(self.log.error(&format!("{function}: a malformed reply: {e}"))),
        };
        if let Ok(records) = wire::bytes(&parts, 1).and_then(wire::logs) {
            for record in records {
                self.log.log(record.status, record.category, record.message);
            }
        }
        if let Some(at) = outputs.filter(|&at| parts.len() >= at + 4) {
            self.outputs.valid = self.outputs.fill(&parts, at).is_ok();
        }
        Ok(status)
    }

    /// A call whose reply carries nothing but its status.
    pub fn simple(&mut self, function: &str, extra: &[Part<'_>]) -> Status {
        self.call(function, extra).unwrap_or_else(|s| s)
    }

    /// `fmi2DoStep` and `fmi2ExitInitializationMode`: the call, then the outputs its reply
    /// brings kept for the gets that follow.
    pub fn call_with_outputs(&mut self, function: &str, extra: &[Part<'_>]) -> Status {
        self.call_keeping(function, extra, Some(REPLY_HEAD)).unwrap_or_else(|s| s)
    }

    /// `fmi3DoStep`: the call, the outputs its reply brings kept, and its flags: the last
    /// successful time, and whether event handling is needed, the simulation is to end, the
    /// step returned early.
    pub fn step3(&mut self, extra: &[Part<'_>]) -> (Status, Option<(f64, [bool; 3])>) {
        match self.call_keeping(f::STEP, extra, Some(REPLY_HEAD + 2)) {
            Ok(status) => {
                let parts = self.reply.parts();
                let last = wire::f64s(&parts, REPLY_HEAD).ok().and_then(|v| v.first().copied());
                let flags = wire::i64s(&parts, REPLY_HEAD + 1).ok().filter(|v| v.len() == 3);
                let flags = last.zip(flags).map(|(t, f)| (t, [f[0] != 0, f[1] != 0, f[2] != 0]));
                (status, flags)
            }
            Err(status) => (status, None),
        }
    }

    /// Checks that every reference of `vrs` is a variable of `var_type`.
    fn check(&self, var_type: VarType, vrs: &[u32]) -> Result<(), Status> {
        match vrs.iter().find(|vr| !self.known[var_type.index()].contains(vr)) {
            None => Ok(()),
            Some(vr) => Err(self.log.error(&format!(
                "unknown value reference {vr}: the model has no {} variable {vr}",
                var_type.name()
            ))),
        }
    }

    /// Keeps sets of reals, integers or booleans for the next call.
    pub fn set_numbers(
        &mut self,
        var_type: VarType,
        vrs: &[u32],
        values: impl Iterator<Item = f64>,
    ) -> Status {
        if let Err(status) = self.check(var_type, vrs) {
            return status;
        }
        if let Some(reason) = &self.failed {
            return self.log.error(&format!("the FMU's server is gone ({reason})"));
        }
        self.outputs.valid = false;
        let p = &mut self.pending;
        let (refs, ints) = match var_type {
            VarType::Real => {
                p.real_vrs.extend(vrs.iter().map(|&v| i64::from(v)));
                p.reals.extend(values);
                return fmi2::OK;
            }
            VarType::Integer => (&mut p.int_vrs, &mut p.ints),
            _ => (&mut p.bool_vrs, &mut p.bools),
        };
        refs.extend(vrs.iter().map(|&v| i64::from(v)));
        ints.extend(values.map(|v| v as i64));
        fmi2::OK
    }

    /// Keeps sets of strings for the next call.
    pub fn set_strings(&mut self, vrs: &[u32], values: &[&[u8]]) -> Status {
        if let Err(status) = self.check(VarType::String, vrs) {
            return status;
        }
        self.outputs.valid = false;
        for (&vr, value) in vrs.iter().zip(values) {
            wire::push_string(&mut self.pending.strings, vr, value);
        }
        fmi2::OK
    }

    /// The values of `vrs` of `var_type`, from the last step's outputs when it brought them
    /// all, else from the server; strings are kept until the next call.
    pub fn get(
        &mut self,
        var_type: VarType,
        vrs: &[u32],
        mut out: impl FnMut(usize, Value<'_>),
    ) -> Status {
        let t = var_type.index();
        if self.outputs.valid && self.pending.is_empty() {
            let index = &self.output_index[t];
            if vrs.iter().all(|vr| index.contains_key(vr)) {
                for (i, vr) in vrs.iter().enumerate() {
                    out(i, self.outputs.value(var_type, index[vr]));
                }
                return fmi2::OK;
            }
        }
        if let Err(status) = self.check(var_type, vrs) {
            return status;
        }
        let refs: Vec<i64> = vrs.iter().map(|&v| i64::from(v)).collect();
        let none: [i64; 0] = [];
        let mut by_type = [Part::i64(&none); 4];
        by_type[t] = Part::i64(&refs);
        let status = match self.call(f::GET, &by_type) {
            Ok(status) => status,
            Err(status) => return status,
        };
        if status > fmi2::WARNING {
            return status;
        }
        let parts = self.reply.parts();
        let filled = (|| -> Result<(), String> {
            match var_type {
                VarType::Real => wire::f64s(&parts, REPLY_HEAD)?
                    .iter()
                    .enumerate()
                    .for_each(|(i, &v)| out(i, Value::Real(v))),
                VarType::Integer | VarType::Boolean => wire::i64s(&parts, REPLY_HEAD + t)?
                    .iter()
                    .enumerate()
                    .for_each(|(i, &v)| out(i, Value::Int(v as c_int))),
                VarType::String => {
                    self.returned.clear();
                    for (_, s) in wire::strings(wire::bytes(&parts, REPLY_HEAD + 3)?)? {
                        self.returned.push(CString::new(s).map_err(|e| e.to_string())?);
                    }
                    for (i, s) in self.returned.iter().enumerate() {
                        out(i, Value::Str(s));
                    }
                }
            }
            Ok(())
        })();
        match filled {
            Ok(()) => status,
            Err(e) => self.log.error(&format!("get: a malformed reply: {e}")),
        }
    }

    /// A call replying with an i64 (a state's id), or `None` when it failed.
    pub fn call_for_id(&mut self, function: &str, extra: &[Part<'_>]) -> (Status, Option<i64>) {
        match self.call(function, extra) {
            Ok(status) => {
                let id = wire::i64s(&self.reply.parts(), REPLY_HEAD)
                    .ok()
                    .and_then(|v| v.first().copied());
                (status, id)
            }
            Err(status) => (status, None),
        }
    }

    /// A call replying with f64 values, copied into `out`.
    pub fn call_for_reals(
        &mut self,
        function: &str,
        extra: &[Part<'_>],
        out: &mut [f64],
    ) -> Status {
        let status = match self.call(function, extra) {
            Ok(status) => status,
            Err(status) => return status,
        };
        match wire::f64s(&self.reply.parts(), REPLY_HEAD) {
            Ok(values) if values.len() == out.len() => {
                out.copy_from_slice(values);
                status
            }
            _ if status > fmi2::WARNING => status,
            _ => self.log.error(&format!("{function}: a malformed reply")),
        }
    }

    /// A call replying with bytes, or `None` when it failed.
    pub fn call_for_bytes(
        &mut self,
        function: &str,
        extra: &[Part<'_>],
    ) -> (Status, Option<Vec<u8>>) {
        match self.call(function, extra) {
            Ok(status) => {
                (status, wire::bytes(&self.reply.parts(), REPLY_HEAD).ok().map(<[u8]>::to_vec))
            }
            Err(status) => (status, None),
        }
    }

    /// The serialized state `id`, fetched once and kept until it is serialized or freed.
    pub fn serialized(&mut self, id: i64, keep: bool) -> (Status, Option<&[u8]>) {
        if !self.serialized.contains_key(&id) {
            let (status, bytes) = self.call_for_bytes(f::SERIALIZE, &[Part::i64(&[id])]);
            match bytes {
                Some(bytes) if status <= fmi2::WARNING => {
                    self.serialized.insert(id, bytes);
                }
                _ => return (status, None),
            }
        }
        if keep {
            (fmi2::OK, self.serialized.get(&id).map(Vec::as_slice))
        } else {
            let bytes = self.serialized.remove(&id);
            self.returned_bytes = bytes.unwrap_or_default();
            (fmi2::OK, Some(&self.returned_bytes))
        }
    }

    /// Forgets what is kept of state `id`.
    pub fn forget_state(&mut self, id: i64) {
        self.serialized.remove(&id);
    }

    /// A string kept until the next call.
    pub fn keep_string(&mut self, bytes: &[u8]) -> *const std::ffi::c_char {
        self.returned.clear();
        self.returned.push(
            CString::new(bytes.iter().copied().filter(|&b| b != 0).collect::<Vec<_>>())
                .unwrap_or_default(),
        );
        self.returned[0].as_ptr()
    }

    /// Removes the directory a local server unpacked the FMU into, once the server is gone
    /// (it removes it itself unless killed).
    fn remove_server_dir(&mut self) {
        let ours = |d: &std::path::Path| {
            d.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("peerpipe-fmu-"))
        };
        if let Some(dir) = self.server_dir.take().filter(|d| ours(d)) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Ends the server: BYE, the FMU freed there, the process reaped.
    pub fn close(mut self) {
        if let Some(peer) = self.peer.take()
            && let Err(e) = peer.close()
        {
            let message = format!("closing the FMU's server: {e}");
            self.log.log(fmi2::WARNING, b"logStatusWarning", message.as_bytes());
        }
        self.remove_server_dir();
    }
}

/// One value of a get.
pub enum Value<'a> {
    /// A real.
    Real(f64),
    /// An integer or boolean.
    Int(c_int),
    /// A string, kept by the instance.
    Str(&'a CString),
}

impl Outputs {
    /// Takes the outputs a reply ends with.
    fn fill(&mut self, parts: &peerpipe::parts::Parsed<'_>, at: usize) -> Result<(), String> {
        self.reals.clear();
        self.reals.extend_from_slice(wire::f64s(parts, at)?);
        self.ints.clear();
        self.ints.extend_from_slice(wire::i64s(parts, at + 1)?);
        self.bools.clear();
        self.bools.extend_from_slice(wire::i64s(parts, at + 2)?);
        self.strings.clear();
        for (_, s) in wire::strings(wire::bytes(parts, at + 3)?)? {
            self.strings.push(CString::new(s).map_err(|e| e.to_string())?);
        }
        Ok(())
    }

    fn value(&self, var_type: VarType, position: usize) -> Value<'_> {
        match var_type {
            VarType::Real => Value::Real(self.reals[position]),
            VarType::Integer => Value::Int(self.ints[position] as c_int),
            VarType::Boolean => Value::Int(self.bools[position] as c_int),
            VarType::String => Value::Str(&self.strings[position]),
        }
    }
}

impl Instance {
    /// The first i64 of the last reply's own parts.
    pub fn reply_i64(&self) -> Option<i64> {
        wire::i64s(&self.reply.parts(), REPLY_HEAD).ok()?.first().copied()
    }

    /// The first f64 of the last reply's own parts.
    pub fn reply_f64(&self) -> Option<f64> {
        wire::f64s(&self.reply.parts(), REPLY_HEAD).ok()?.first().copied()
    }

    /// The bytes of the last reply's own parts.
    pub fn reply_bytes(&self) -> Option<Vec<u8>> {
        wire::bytes(&self.reply.parts(), REPLY_HEAD).ok().map(<[u8]>::to_vec)
    }
}
