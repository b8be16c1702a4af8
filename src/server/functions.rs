//! [`Functions`]: a handler that serves several functions by name — `rhs`, `jac`, `observe`
//! — each a closure over a PARTS request's parts that writes the reply's parts.

use super::handler::{Handler, Request, Response};
use crate::error::{Error, Result};
use crate::parts::{MAX_FUNCTIONS, PartsOut, check_function_name};

/// One function of a [`Functions`] server: reads the call's parts, writes the reply's into
/// the (empty) [`PartsOut`], or returns the message of an ERROR reply.
pub type Function =
    Box<dyn FnMut(Request<'_>, &mut PartsOut) -> std::result::Result<(), String> + Send>;

/// Functions served by name through PARTS requests (docs/PROTOCOL.md §15), announced in the
/// server's HELLO. A DATA request, or a PARTS request naming no function, gets an ERROR
/// naming them; the conversation goes on.
///
/// ```
/// use peerpipe::parts::{Part, PartMut};
/// use peerpipe::server::{Functions, ServeOptions, serve};
/// use peerpipe::transport::{Transport, Wait};
/// use peerpipe::{Options, Peer};
///
/// let mut server = Functions::new("ode")
///     .with("rhs", |call, reply| {
///         let (t, y) = (call.f64(0)?[0], call.f64(1)?);
///         let dy = reply.f64(2)?;
///         dy[0] = y[1];
///         dy[1] = -y[0] + t.cos();
///         Ok(())
///     })?
///     .with("observe", |call, reply| {
///         let y = call.f64(0)?;
///         reply.f64(1)?[0] = y.iter().sum();
///         Ok(())
///     })?;
/// let (client_end, mut server_end) = Transport::pipe_pair(Wait::Block)?;
/// let thread = std::thread::spawn(move || serve(&mut server_end, &mut server, &ServeOptions::default()));
/// let mut peer = Peer::connect(client_end, Options::default())?;
/// assert_eq!(peer.server_hello().functions, ["rhs", "observe"]);
/// let (t, y, mut dy) = (0.0, [1.0, 2.0], [0.0; 2]);
/// peer.call_parts("rhs", &[Part::f64(&[t]), Part::f64(&y)], &mut [PartMut::f64(&mut dy)])?;
/// assert_eq!(dy, [2.0, 0.0]);
/// let mut sum = [0.0];
/// peer.call_parts("observe", &[Part::f64(&[1.0; 100])], &mut [PartMut::f64(&mut sum)])?;
/// assert_eq!(sum, [100.0]);
/// peer.close()?;
/// thread.join().unwrap()?;
/// # Ok::<(), peerpipe::Error>(())
/// ```
pub struct Functions {
    name: String,
    entries: Vec<(String, Function)>,
}

impl std::fmt::Debug for Functions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Functions")
            .field("name", &self.name)
            .field("functions", &self.names())
            .finish()
    }
}

impl Functions {
    /// A server that serves no function yet, announcing `handler=NAME` in its HELLO.
    pub fn new(name: &str) -> Functions {
        Functions { name: name.to_owned(), entries: Vec::new() }
    }

    /// Adds `function` under `name`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `name` is not a valid function name (1–64 ASCII
    /// letters, digits, `_ . : -`), is already taken, or the server has [`MAX_FUNCTIONS`].
    pub fn add(
        &mut self,
        name: &str,
        function: impl FnMut(Request<'_>, &mut PartsOut) -> std::result::Result<(), String>
        + Send
        + 'static,
    ) -> Result<()> {
        let invalid = |reason: String| Error::InvalidArgument { what: "function name", reason };
        check_function_name(name).map_err(invalid)?;
        if self.entries.iter().any(|(n, _)| n == name) {
            return Err(invalid(format!("{name:?} is served already")));
        }
        if self.entries.len() >= MAX_FUNCTIONS {
            return Err(invalid(format!("a server serves at most {MAX_FUNCTIONS} functions")));
        }
        self.entries.push((name.to_owned(), Box::new(function)));
        Ok(())
    }

    /// [`Functions::add`], by value, for chaining.
    ///
    /// # Errors
    /// As [`Functions::add`].
    pub fn with(
        mut self,
        name: &str,
        function: impl FnMut(Request<'_>, &mut PartsOut) -> std::result::Result<(), String>
        + Send
        + 'static,
    ) -> Result<Functions> {
        self.add(name, function)?;
        Ok(self)
    }

    /// The names served, in the order they were added.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|(n, _)| n.as_str()).collect()
    }
}

impl Handler for Functions {
    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _)| n.clone()).collect()
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> std::result::Result<Response<'a>, String> {
        match self.entries.iter_mut().find(|(n, _)| n == request.function) {
            Some((_, function)) => function(request, out).map(|()| Response::Parts),
            None if request.function.is_empty() => Err(no_function_named(&self.names().join(", "))),
            None => Err(unknown_function(request.function, &self.functions())),
        }
    }
}

/// The message of the ERROR answering a request to the default function — a DATA request,
/// or a PARTS request that names none — from a server that serves only the functions named in
/// `names` (joined with ", ").
pub(crate) fn no_function_named(names: &str) -> String {
    format!("no function named: this server serves functions by name ({names}); name one")
}

/// The message of the ERROR answering a call to a function the server does not serve.
pub(crate) fn unknown_function(function: &str, functions: &[String]) -> String {
    if functions.is_empty() {
        format!(
            "unknown function {function:?}: this server serves no functions by name, only its \
             default function (a PARTS request that names none)"
        )
    } else {
        format!("unknown function {function:?}: this server has {}", functions.join(", "))
    }
}
