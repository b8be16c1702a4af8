//! What the proxy and `peer fmu serve` say to each other: the functions, and the layout of
//! their PARTS requests and replies (docs/PROTOCOL.md §15).
//!
//! Every request starts with the [`Sets`] the proxy kept since its last call ([`SETS_PARTS`]
//! parts, empty when there are none), which the server applies before the call itself; the
//! function's own parts follow. Every reply starts with the status (one i64) and the log
//! messages the FMU gave during the call ([`REPLY_HEAD`] parts); the function's own parts
//! follow. `step` and `exit_init` replies end with the outputs the model description lists,
//! one part per type (FMI 3.0's `step` puts its last successful time and flags before them).

use peerpipe::parts::{Parsed, Part, PartRef};

/// The functions a server serves.
pub mod function {
    /// Instantiates the FMU: name, token, flags; replies with the variables.
    pub const INSTANTIATE: &str = "instantiate";
    /// `fmi2SetDebugLogging`.
    pub const DEBUG_LOGGING: &str = "debug_logging";
    /// `fmi2SetupExperiment`.
    pub const SETUP: &str = "setup";
    /// `fmi2EnterInitializationMode`.
    pub const ENTER_INIT: &str = "enter_init";
    /// `fmi2ExitInitializationMode`, replying with the outputs.
    pub const EXIT_INIT: &str = "exit_init";
    /// `fmi2DoStep`, replying with the outputs.
    pub const STEP: &str = "step";
    /// The gets of one type.
    pub const GET: &str = "get";
    /// Only the sets.
    pub const SET: &str = "set";
    /// `fmi2Terminate`.
    pub const TERMINATE: &str = "terminate";
    /// `fmi2Reset`.
    pub const RESET: &str = "reset";
    /// `fmi2CancelStep`.
    pub const CANCEL_STEP: &str = "cancel_step";
    /// `fmi2GetFMUstate`.
    pub const GET_STATE: &str = "get_state";
    /// `fmi2SetFMUstate`.
    pub const SET_STATE: &str = "set_state";
    /// `fmi2FreeFMUstate`.
    pub const FREE_STATE: &str = "free_state";
    /// `fmi2SerializedFMUstateSize` and `fmi2SerializeFMUstate` in one.
    pub const SERIALIZE: &str = "serialize";
    /// `fmi2DeSerializeFMUstate`.
    pub const DESERIALIZE: &str = "deserialize";
    /// `fmi2GetDirectionalDerivative`.
    pub const DIRECTIONAL_DERIVATIVE: &str = "directional_derivative";
    /// `fmi2SetRealInputDerivatives`.
    pub const SET_INPUT_DERIVATIVES: &str = "set_input_derivatives";
    /// `fmi2GetRealOutputDerivatives`.
    pub const GET_OUTPUT_DERIVATIVES: &str = "get_output_derivatives";
    /// `fmi2Get*Status`.
    pub const STATUS: &str = "status";
    /// Every function, in the order the server announces them.
    pub const ALL: [&str; 20] = [
        INSTANTIATE,
        DEBUG_LOGGING,
        SETUP,
        ENTER_INIT,
        EXIT_INIT,
        STEP,
        GET,
        SET,
        TERMINATE,
        RESET,
        CANCEL_STEP,
        GET_STATE,
        SET_STATE,
        FREE_STATE,
        SERIALIZE,
        DESERIALIZE,
        DIRECTIONAL_DERIVATIVE,
        SET_INPUT_DERIVATIVES,
        GET_OUTPUT_DERIVATIVES,
        STATUS,
    ];
}

/// Parts of the sets that start every request.
pub const SETS_PARTS: usize = 7;
/// Parts that start every reply: the status and the log.
pub const REPLY_HEAD: usize = 2;

/// The four types of FMI 2.0 variables (an enumeration is an integer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarType {
    /// `fmi2Real`, f64.
    Real,
    /// `fmi2Integer` (and enumerations), i32 carried as i64.
    Integer,
    /// `fmi2Boolean`, an int carried as i64.
    Boolean,
    /// `fmi2String`, bytes.
    String,
}

impl VarType {
    /// The four, in wire order.
    pub const ALL: [VarType; 4] =
        [VarType::Real, VarType::Integer, VarType::Boolean, VarType::String];

    /// Its position in [`VarType::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name in a model description.
    pub fn name(self) -> &'static str {
        match self {
            VarType::Real => "Real",
            VarType::Integer => "Integer",
            VarType::Boolean => "Boolean",
            VarType::String => "String",
        }
    }
}

/// Values set since the last call, sent at the start of the next.
#[derive(Clone, Debug, Default)]
pub struct Sets {
    /// References of the reals.
    pub real_vrs: Vec<i64>,
    /// The reals.
    pub reals: Vec<f64>,
    /// References of the integers.
    pub int_vrs: Vec<i64>,
    /// The integers.
    pub ints: Vec<i64>,
    /// References of the booleans.
    pub bool_vrs: Vec<i64>,
    /// The booleans (0 or 1).
    pub bools: Vec<i64>,
    /// The strings, as [`push_string`] writes them.
    pub strings: Vec<u8>,
}

impl Sets {
    /// True when nothing was set.
    pub fn is_empty(&self) -> bool {
        self.real_vrs.is_empty()
            && self.int_vrs.is_empty()
            && self.bool_vrs.is_empty()
            && self.strings.is_empty()
    }

    /// Forgets every value, keeping the memory.
    pub fn clear(&mut self) {
        self.real_vrs.clear();
        self.reals.clear();
        self.int_vrs.clear();
        self.ints.clear();
        self.bool_vrs.clear();
        self.bools.clear();
        self.strings.clear();
    }

    /// The [`SETS_PARTS`] parts that start a request.
    pub fn parts(&self) -> [Part<'_>; SETS_PARTS] {
        [
            Part::i64(&self.real_vrs),
            Part::f64(&self.reals),
            Part::i64(&self.int_vrs),
            Part::i64(&self.ints),
            Part::i64(&self.bool_vrs),
            Part::i64(&self.bools),
            Part::bytes(&self.strings),
        ]
    }
}

/// The sets at the start of a received request, viewed in place.
#[derive(Clone, Copy, Debug)]
pub struct SetsView<'a> {
    /// References and values of the reals.
    pub reals: (&'a [i64], &'a [f64]),
    /// References and values of the integers.
    pub ints: (&'a [i64], &'a [i64]),
    /// References and values of the booleans.
    pub bools: (&'a [i64], &'a [i64]),
    /// The strings, as [`push_string`] writes them.
    pub strings: &'a [u8],
}

impl<'a> SetsView<'a> {
    /// The sets of `parts`.
    ///
    /// # Errors
    /// A message when the request does not start with the parts of [`Sets::parts`].
    pub fn of(parts: &Parsed<'a>) -> Result<SetsView<'a>, String> {
        let reals = (i64s(parts, 0)?, f64s(parts, 1)?);
        let ints = (i64s(parts, 2)?, i64s(parts, 3)?);
        let bools = (i64s(parts, 4)?, i64s(parts, 5)?);
        if reals.0.len() != reals.1.len()
            || ints.0.len() != ints.1.len()
            || bools.0.len() != bools.1.len()
        {
            return Err("the sets have as many values as references".into());
        }
        Ok(SetsView { reals, ints, bools, strings: bytes(parts, 6)? })
    }
}

/// Part `index` of `parts`, or a message naming what is missing.
pub fn part<'a>(parts: &Parsed<'a>, index: usize) -> Result<PartRef<'a>, String> {
    parts.get(index).ok_or_else(|| format!("expected a part {index}, found {} parts", parts.len()))
}

/// Part `index` as i64 values.
///
/// # Errors
/// A message when it is missing or of another type.
pub fn i64s<'a>(parts: &Parsed<'a>, index: usize) -> Result<&'a [i64], String> {
    let p = part(parts, index)?;
    p.i64_view().ok_or_else(|| format!("expected part {index} of i64 values, found {}", p.shape()))
}

/// Part `index` as f64 values.
///
/// # Errors
/// A message when it is missing or of another type.
pub fn f64s<'a>(parts: &Parsed<'a>, index: usize) -> Result<&'a [f64], String> {
    let p = part(parts, index)?;
    p.f64_view().ok_or_else(|| format!("expected part {index} of f64 values, found {}", p.shape()))
}

/// Part `index` as bytes.
///
/// # Errors
/// A message when it is missing or of another type.
pub fn bytes<'a>(parts: &Parsed<'a>, index: usize) -> Result<&'a [u8], String> {
    let p = part(parts, index)?;
    match p.shape().dtype {
        peerpipe::parts::PartDtype::Bytes => Ok(p.bytes()),
        _ => Err(format!("expected part {index} of bytes, found {}", p.shape())),
    }
}

/// Appends a string record: `key` (a value reference, or an index), its length, its bytes.
pub fn push_string(out: &mut Vec<u8>, key: u32, value: &[u8]) {
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// The records [`push_string`] wrote.
///
/// # Errors
/// A message when `bytes` ends inside a record.
pub fn strings(mut bytes: &[u8]) -> Result<Vec<(u32, &[u8])>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let key = take_u32(&mut bytes)?;
        let len = take_u32(&mut bytes)? as usize;
        if bytes.len() < len {
            return Err("a string record ends early".into());
        }
        out.push((key, &bytes[..len]));
        bytes = &bytes[len..];
    }
    Ok(out)
}

/// Appends a log record: the status, the category, the message.
pub fn push_log(out: &mut Vec<u8>, status: i32, category: &[u8], message: &[u8]) {
    out.extend_from_slice(&(status as u32).to_le_bytes());
    push_string(out, category.len() as u32, category);
    out.extend_from_slice(message);
    out.extend_from_slice(&[0]);
}

/// One message an FMU logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// Its status.
    pub status: i32,
    /// Its category.
    pub category: &'a [u8],
    /// The message, formatted.
    pub message: &'a [u8],
}

/// The records [`push_log`] wrote.
///
/// # Errors
/// A message when `bytes` ends inside a record.
pub fn logs(mut bytes: &[u8]) -> Result<Vec<LogRecord<'_>>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let status = take_u32(&mut bytes)? as i32;
        let _ = take_u32(&mut bytes)?;
        let len = take_u32(&mut bytes)? as usize;
        if bytes.len() < len {
            return Err("a log record ends early".into());
        }
        let category = &bytes[..len];
        bytes = &bytes[len..];
        let end = bytes.iter().position(|&b| b == 0).ok_or("a log message ends early")?;
        out.push(LogRecord { status, category, message: &bytes[..end] });
        bytes = &bytes[end + 1..];
    }
    Ok(out)
}

fn take_u32(bytes: &mut &[u8]) -> Result<u32, String> {
    let (head, rest) = bytes.split_first_chunk::<4>().ok_or("a record ends early")?;
    *bytes = rest;
    Ok(u32::from_le_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_logs_read_back_what_was_written() {
        let mut out = Vec::new();
        push_string(&mut out, 7, b"seven");
        push_string(&mut out, 0, b"");
        assert_eq!(strings(&out).unwrap(), [(7, &b"seven"[..]), (0, &b""[..])]);
        assert!(strings(&out[..out.len() - 1]).is_err());
        let mut log = Vec::new();
        push_log(&mut log, 3, b"logError", b"it broke");
        push_log(&mut log, 0, b"", b"");
        assert_eq!(
            logs(&log).unwrap(),
            [
                LogRecord { status: 3, category: b"logError", message: b"it broke" },
                LogRecord { status: 0, category: b"", message: b"" }
            ]
        );
        assert!(logs(&log[..5]).is_err());
    }
}
