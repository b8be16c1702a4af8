//! Many servers called together: a [`Fanout`] holds N [`Peer`]s and scatters requests to all
//! of them before it gathers any reply, so that N servers that each take a millisecond answer
//! a gather in about a millisecond, not N.
//!
//! A gather sends every request first (each one vectored write into its pipe or socket, which
//! does not wait for the server), then receives the replies in order, each into the caller's
//! own buffer. Nothing runs on other threads: the servers work in parallel, and the client
//! waits in the kernel (or spins, per [`crate::Wait`]) for one reply after another, the sum of
//! those waits being the slowest server's time. One deadline, the fan-out's timeout, counts
//! from the start of the gather for every server, so a gather never takes longer than that
//! (plus the time to read the replies that came).
//!
//! A server that fails — exits, stops answering, answers ERROR, sends a reply of another shape
//! — is a [`ServerError`] naming it (its index and command line) in its place in
//! [`Gathered::results`]; the other servers' replies stand, in their buffers, and the fan-out
//! goes on with them (the failed one answers every later call with an error at once, unless
//! it only answered ERROR and stays usable).

use std::fmt;
use std::time::{Duration, Instant};

use crate::codec::{Values, ValuesMut};
use crate::error::{Error, Result};
use crate::peer::{CallTiming, Options, Peer};

/// One server of a [`Fanout`] that failed, and how.
#[derive(Debug)]
pub struct ServerError {
    /// Its index among the fan-out's servers.
    pub index: usize,
    /// Its command line (or the name it was given).
    pub server: String,
    /// What failed.
    pub error: Error,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server {} (`{}`): {}", self.index, self.server, self.error)
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// What one gather brought back: per server, in order, its call's timing or its error.
#[derive(Debug)]
pub struct Gathered {
    /// One entry per server.
    pub results: Vec<std::result::Result<CallTiming, ServerError>>,
    /// Nanoseconds from the first send to the last reply (or error).
    pub elapsed_ns: u64,
}

impl Gathered {
    /// The servers that failed.
    pub fn failures(&self) -> impl Iterator<Item = &ServerError> {
        self.results.iter().filter_map(|r| r.as_ref().err())
    }

    /// Every timing, or the first failure.
    ///
    /// # Errors
    /// The first [`ServerError`], in server order.
    pub fn into_result(self) -> std::result::Result<Vec<CallTiming>, ServerError> {
        self.results.into_iter().collect()
    }
}

/// A server of the fan-out: its peer, and how to name it.
#[derive(Debug)]
struct Member {
    peer: Peer,
    name: String,
}

/// N peers called together ([module documentation](self)).
#[derive(Debug)]
pub struct Fanout {
    members: Vec<Member>,
    timeout: Option<Duration>,
}

impl Fanout {
    /// A fan-out over `peers`, each named by the string beside it (its command line, say),
    /// with `timeout` for every gather (`None`: each server's own reply timeout, counted from
    /// the moment the gather waits for it).
    pub fn new(peers: Vec<(String, Peer)>, timeout: Option<Duration>) -> Fanout {
        let members = peers.into_iter().map(|(name, peer)| Member { peer, name }).collect();
        Fanout { members, timeout }
    }

    /// Spawns one server per command line ([`Peer::spawn_shell`]), all at once, each on a
    /// thread of its own so that slow starts (`srun`, `ssh`) overlap; `options.timeout` is
    /// every gather's deadline.
    ///
    /// # Errors
    /// The first server that could not be spawned, named ([`Error`] of [`Peer::spawn_shell`],
    /// its message naming the server's index and command line where it has text to name it
    /// in); every server that did start is then terminated and reaped.
    pub fn spawn_shell<S: AsRef<str> + Sync>(lines: &[S], options: Options) -> Result<Fanout> {
        let started: Vec<Result<Peer>> = std::thread::scope(|scope| {
            let spawning: Vec<_> = lines
                .iter()
                .map(|line| {
                    let options = options.clone();
                    scope.spawn(move || Peer::spawn_shell(line.as_ref(), options))
                })
                .collect();
            spawning
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        let mut peers = Vec::with_capacity(started.len());
        let mut first_error = None;
        for (index, (line, peer)) in lines.iter().zip(started).enumerate() {
            match peer {
                Ok(peer) => peers.push((line.as_ref().to_owned(), peer)),
                Err(e) if first_error.is_none() => {
                    let name = format!("server {index} `{}`", line.as_ref());
                    first_error = Some(crate::process::naming(e, &name));
                }
                Err(_) => {}
            }
        }
        if let Some(error) = first_error {
            for (_, peer) in peers {
                let _ = peer.terminate();
            }
            return Err(error);
        }
        Ok(Fanout::new(peers, options.timeout))
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when there is no server.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Server `index`'s peer (its HELLO, its pid, its statistics).
    pub fn peer(&self, index: usize) -> Option<&Peer> {
        self.members.get(index).map(|m| &m.peer)
    }

    /// Server `index`'s name.
    pub fn name(&self, index: usize) -> Option<&str> {
        self.members.get(index).map(|m| m.name.as_str())
    }

    /// Sends `request` to every server, then gathers each reply into `replies[i]` (one buffer
    /// per server, of the dtype and count its reply must have).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before anything is sent when there is not one reply buffer
    /// per server. Each server's own failure is in its place in [`Gathered::results`]; on a
    /// failure, the contents of that server's buffer are unspecified.
    pub fn scatter(
        &mut self,
        request: Values<'_>,
        replies: &mut [ValuesMut<'_>],
    ) -> Result<Gathered> {
        let requests = vec![request; self.members.len()];
        self.call_each(&requests, replies)
    }

    /// Sends `requests[i]` to server `i`, every one before any reply is awaited, then gathers
    /// each reply into `replies[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] before anything is sent when there is not one request and
    /// one reply buffer per server. Each server's own failure is in its place in
    /// [`Gathered::results`].
    pub fn call_each(
        &mut self,
        requests: &[Values<'_>],
        replies: &mut [ValuesMut<'_>],
    ) -> Result<Gathered> {
        let n = self.members.len();
        if requests.len() != n || replies.len() != n {
            return Err(Error::InvalidArgument {
                what: "fan-out",
                reason: format!(
                    "{n} servers need {n} requests and {n} reply buffers, found {} and {}",
                    requests.len(),
                    replies.len()
                ),
            });
        }
        let started = Instant::now();
        let until = self.timeout.map(|t| started + t);
        let mut sent: Vec<Option<ServerError>> = Vec::with_capacity(n);
        for (index, (member, request)) in self.members.iter_mut().zip(requests).enumerate() {
            sent.push(member.peer.send(*request).err().map(|e| named(index, member, e)));
        }
        let mut results = Vec::with_capacity(n);
        for (index, ((member, reply), failed)) in
            self.members.iter_mut().zip(replies.iter_mut()).zip(sent).enumerate()
        {
            if let Some(failed) = failed {
                results.push(Err(failed));
                continue;
            }
            // One deadline for the whole gather: what is left of it for this server.
            let own = member.peer.options().timeout;
            if let Some(until) = until {
                member.peer.set_timeout(Some(until.saturating_duration_since(Instant::now())));
            }
            let len = reply.len();
            let received = member.peer.recv(reply.slice_mut(0..len));
            member.peer.set_timeout(own);
            results.push(received.map(|r| r.timing).map_err(|e| named(index, member, e)));
        }
        Ok(Gathered { results, elapsed_ns: started.elapsed().as_nanos() as u64 })
    }

    /// Closes every server ([`Peer::close`]: BYE, reaped), all of them even when one fails.
    ///
    /// # Errors
    /// The first server that did not close cleanly, named.
    pub fn close(self) -> std::result::Result<(), ServerError> {
        let mut first = Ok(());
        for (index, member) in self.members.into_iter().enumerate() {
            let Member { peer, name } = member;
            if let Err(error) = peer.close()
                && first.is_ok()
            {
                first = Err(ServerError { index, server: name, error });
            }
        }
        first
    }
}

fn named(index: usize, member: &Member, error: Error) -> ServerError {
    ServerError { index, server: member.name.clone(), error }
}
