//! Where a tcp server listens: an address its client can reach.
//!
//! The server announces the address it listens on, so that address must be one the client
//! can connect to — on another machine, when a launcher started the server there. In order:
//!
//! 1. the address or interface the user names (`--listen`, [`parse_listen`]);
//! 2. under Slurm (`srun`), the local address that routes to the node the step was launched
//!    from (`$SLURM_LAUNCH_NODE_IPADDR`): found by connecting a UDP socket to it and reading
//!    the socket's own address, which asks the kernel's routing table and sends nothing;
//! 3. under ssh, the address the client reached this machine at (the third field of
//!    `$SSH_CONNECTION`);
//! 4. else 127.0.0.1.
//!
//! Slurm comes before ssh because `srun` passes its own environment on to the task: a user
//! logged in over ssh who runs `srun` hands the task an `$SSH_CONNECTION` that names the login
//! node, not the node the task runs on, while `$SLURM_LAUNCH_NODE_IPADDR` is set by Slurm for
//! this task. [`choose_listen_ip`] is the rule as a pure function of those two variables.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use crate::error::{Error, Result};

/// The variable Slurm sets in every task of a step: the address of the node `srun` ran on.
pub const SLURM_LAUNCH_VAR: &str = "SLURM_LAUNCH_NODE_IPADDR";

/// The variable sshd sets: `CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT`.
pub const SSH_CONNECTION_VAR: &str = "SSH_CONNECTION";

/// What `--listen` names, before any interface is looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenSpec {
    /// An address, with port 0 (a free one) unless one was given.
    Addr(SocketAddr),
    /// A network interface (`eth0`, `ib0`): its IPv4 address, else its first IPv6 address
    /// that is not link-local.
    Interface {
        /// The interface's name.
        name: String,
        /// The port; 0 for a free one.
        port: u16,
    },
}

impl ListenSpec {
    /// Parses `IP`, `IP:PORT`, `[IPv6]:PORT`, `IFACE` or `IFACE:PORT`, without looking
    /// anything up: a text that is not an address is taken as an interface name.
    ///
    /// ```
    /// use peerpipe::transport::tcp::ListenSpec;
    /// assert_eq!(ListenSpec::parse("10.0.0.2").unwrap(), ListenSpec::Addr("10.0.0.2:0".parse().unwrap()));
    /// assert_eq!(
    ///     ListenSpec::parse("ib0:7000").unwrap(),
    ///     ListenSpec::Interface { name: "ib0".into(), port: 7000 }
    /// );
    /// assert!(ListenSpec::parse("eth0:http").is_err());
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the accepted forms, for an empty text, a port that is
    /// not a number from 0 to 65535, or a name no interface could have.
    pub fn parse(text: &str) -> Result<ListenSpec> {
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(ListenSpec::Addr(SocketAddr::new(ip, 0)));
        }
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(ListenSpec::Addr(addr));
        }
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => match port.parse::<u16>() {
                Ok(port) => (name, port),
                Err(_) => return Err(bad_listen(text, "the part after ':' is not a port")),
            },
            None => (text, 0),
        };
        // Linux's own rule for interface names (dev_valid_name): 1 to 15 bytes, no '/',
        // ':' or white space, not "." or "..".
        let valid = !name.is_empty()
            && name.len() <= 15
            && name != "."
            && name != ".."
            && !name.contains(|c: char| c == '/' || c == ':' || c.is_whitespace());
        if !valid {
            return Err(bad_listen(text, "neither an address nor an interface name"));
        }
        Ok(ListenSpec::Interface { name: name.to_owned(), port })
    }

    /// The address to listen on: the address itself, or the interface's address looked up
    /// now (`getifaddrs`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there is no such interface (naming those there are)
    /// or it has no usable address; [`Error::Sys`] when the interfaces cannot be listed.
    pub fn resolve(&self) -> Result<SocketAddr> {
        match self {
            ListenSpec::Addr(addr) => Ok(*addr),
            ListenSpec::Interface { name, port } => {
                let ip = interface_address(name, &local_interface_addresses()?)?;
                Ok(SocketAddr::new(ip, *port))
            }
        }
    }
}

fn bad_listen(text: &str, why: &str) -> Error {
    Error::InvalidArgument {
        what: "listen address",
        reason: format!(
            "expected IP, IP:PORT, [IPv6]:PORT, INTERFACE or INTERFACE:PORT, found {text:?}: \
             {why}"
        ),
    }
}

/// Parses `--listen` and looks up an interface name: `IP`, `IP:PORT`, `[IPv6]:PORT`, `IFACE`
/// or `IFACE:PORT`; the port is 0 (a free one) unless given.
///
/// ```
/// use peerpipe::transport::tcp::parse_listen;
/// assert_eq!(parse_listen("127.0.0.1").unwrap().to_string(), "127.0.0.1:0");
/// assert_eq!(parse_listen("[::1]:7000").unwrap().to_string(), "[::1]:7000");
/// assert_eq!(parse_listen("lo").unwrap().to_string(), "127.0.0.1:0");
/// let err = parse_listen("no-such-if0").unwrap_err().to_string();
/// assert!(err.contains("no interface named \"no-such-if0\""), "{err}");
/// ```
///
/// # Errors
/// Those of [`ListenSpec::parse`] and [`ListenSpec::resolve`].
pub fn parse_listen(text: &str) -> Result<SocketAddr> {
    ListenSpec::parse(text)?.resolve()
}

/// The address an interface listens on, from `(interface, address)` pairs as `getifaddrs`
/// lists them: its first IPv4 address, else its first IPv6 address that is not link-local
/// (a link-local address needs a scope the announcement does not carry).
///
/// ```
/// use peerpipe::transport::tcp::interface_address;
/// let listed = [("eth0".to_owned(), "fe80::1".parse().unwrap()), ("eth0".to_owned(), "10.1.0.7".parse().unwrap())];
/// assert_eq!(interface_address("eth0", &listed).unwrap().to_string(), "10.1.0.7");
/// assert!(interface_address("ib0", &listed).is_err());
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] naming the interfaces there are when `name` is not one of them,
/// or saying that it has no usable address.
pub fn interface_address(name: &str, listed: &[(String, IpAddr)]) -> Result<IpAddr> {
    let mine: Vec<IpAddr> = listed.iter().filter(|(n, _)| n == name).map(|&(_, ip)| ip).collect();
    if let Some(v4) = mine.iter().find(|ip| ip.is_ipv4()) {
        return Ok(*v4);
    }
    if let Some(v6) = mine.iter().find(|ip| matches!(ip, IpAddr::V6(v6) if !is_link_local(v6))) {
        return Ok(*v6);
    }
    let reason = if mine.is_empty() {
        let mut names: Vec<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        format!("no interface named {name:?} has an address here (those that do: {})", {
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        })
    } else {
        format!("interface {name:?} has only link-local addresses, which cannot be announced")
    };
    Err(Error::InvalidArgument { what: "listen address", reason })
}

fn is_link_local(ip: &Ipv6Addr) -> bool {
    ip.segments()[0] & 0xffc0 == 0xfe80
}

/// Every address of every interface of this machine (its network namespace), as
/// `(interface, address)` pairs.
///
/// # Errors
/// [`Error::Sys`] when `getifaddrs` fails.
pub fn local_interface_addresses() -> Result<Vec<(String, IpAddr)>> {
    let mut listed = Vec::new();
    for entry in nix::ifaddrs::getifaddrs()? {
        let Some(address) = entry.address else { continue };
        let ip = if let Some(v4) = address.as_sockaddr_in() {
            IpAddr::V4(v4.ip())
        } else if let Some(v6) = address.as_sockaddr_in6() {
            IpAddr::V6(v6.ip())
        } else {
            continue;
        };
        listed.push((entry.interface_name, ip));
    }
    Ok(listed)
}

/// The launchers' variables [`choose_listen_ip`] reads, as found in the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// `$SLURM_LAUNCH_NODE_IPADDR`.
    pub slurm_launch_node: Option<String>,
    /// `$SSH_CONNECTION`.
    pub ssh_connection: Option<String>,
}

impl LaunchEnv {
    /// The variables of this process.
    pub fn from_process() -> LaunchEnv {
        LaunchEnv {
            slurm_launch_node: std::env::var(SLURM_LAUNCH_VAR).ok(),
            ssh_connection: std::env::var(SSH_CONNECTION_VAR).ok(),
        }
    }
}

/// Why the server listens where it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenSource {
    /// The local address that routes to Slurm's launch node, this address.
    Slurm(IpAddr),
    /// The server side of `$SSH_CONNECTION`.
    Ssh,
    /// Neither launcher: loopback.
    Loopback,
}

impl fmt::Display for ListenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenSource::Slurm(launcher) => {
                write!(f, "the local address that routes to ${SLURM_LAUNCH_VAR} ({launcher})")
            }
            ListenSource::Ssh => write!(f, "the server side of ${SSH_CONNECTION_VAR}"),
            ListenSource::Loopback => {
                write!(f, "loopback: neither ${SLURM_LAUNCH_VAR} nor ${SSH_CONNECTION_VAR} is set")
            }
        }
    }
}

/// Where a server listens when `--listen` is not given, and why: the rule of this module's
/// documentation over the launchers' variables, with `route` asked for the local address
/// that routes to an address ([`local_address_towards`] in a real server). An empty variable
/// counts as unset; an `$SSH_CONNECTION` without an address in its third field is ignored.
///
/// ```
/// use std::net::IpAddr;
/// use peerpipe::transport::tcp::{LaunchEnv, ListenSource, choose_listen_ip};
/// let env = LaunchEnv {
///     slurm_launch_node: Some("10.9.0.1".into()),
///     ssh_connection: Some("192.168.1.5 50000 192.168.1.9 22".into()),
/// };
/// let route = |_to: IpAddr| Ok("10.9.0.7".parse().unwrap());
/// let (ip, why) = choose_listen_ip(&env, route).unwrap();
/// assert_eq!((ip.to_string(), why), ("10.9.0.7".into(), ListenSource::Slurm("10.9.0.1".parse().unwrap())));
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when `$SLURM_LAUNCH_NODE_IPADDR` is not an address, or when
/// `route` finds no local address towards it: listening on loopback instead would announce
/// an address the launching node cannot reach, so the message says to name one with
/// `--listen`.
pub fn choose_listen_ip(
    env: &LaunchEnv,
    route: impl FnOnce(IpAddr) -> io::Result<IpAddr>,
) -> Result<(IpAddr, ListenSource)> {
    if let Some(text) = set_value(&env.slurm_launch_node) {
        let launcher: IpAddr = text.parse().map_err(|_| Error::InvalidArgument {
            what: "listen address",
            reason: format!(
                "${SLURM_LAUNCH_VAR} is {text:?}, not an IP address; name the address or \
                 interface to listen on with --listen"
            ),
        })?;
        return match route(launcher) {
            Ok(ip) => Ok((ip, ListenSource::Slurm(launcher))),
            Err(e) => Err(Error::InvalidArgument {
                what: "listen address",
                reason: format!(
                    "no local address routes to ${SLURM_LAUNCH_VAR}={launcher} ({e}); name the \
                     address or interface to listen on with --listen"
                ),
            }),
        };
    }
    if let Some(ip) = set_value(&env.ssh_connection)
        .and_then(|v| v.split_whitespace().nth(2))
        .and_then(|ip| ip.parse::<IpAddr>().ok())
    {
        return Ok((ip, ListenSource::Ssh));
    }
    Ok((IpAddr::V4(Ipv4Addr::LOCALHOST), ListenSource::Loopback))
}

/// A variable's value, `None` when unset or blank.
fn set_value(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// The local address the kernel would send from to reach `to`: a UDP socket connected to it
/// (which sends nothing) reports its own address. Port 9 (discard) only fills the connect.
///
/// ```
/// use peerpipe::transport::tcp::local_address_towards;
/// let from = local_address_towards("127.0.0.1".parse().unwrap()).unwrap();
/// assert!(from.is_loopback());
/// ```
///
/// # Errors
/// The socket's [`io::Error`]: `ENETUNREACH` when no route leads there.
pub fn local_address_towards(to: IpAddr) -> io::Result<IpAddr> {
    let any = match to {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = UdpSocket::bind(SocketAddr::new(any, 0))?;
    socket.connect(SocketAddr::new(to, 9))?;
    Ok(socket.local_addr()?.ip())
}

/// Where this server listens when `--listen` is not given: [`choose_listen_ip`] over this
/// process's environment and routing table.
///
/// # Errors
/// Those of [`choose_listen_ip`].
pub fn default_listen_ip() -> Result<IpAddr> {
    choose_listen_ip(&LaunchEnv::from_process(), local_address_towards).map(|(ip, _)| ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(slurm: Option<&str>, ssh: Option<&str>) -> LaunchEnv {
        LaunchEnv {
            slurm_launch_node: slurm.map(str::to_owned),
            ssh_connection: ssh.map(str::to_owned),
        }
    }

    fn never_asked(_: IpAddr) -> io::Result<IpAddr> {
        panic!("the route is asked only under Slurm")
    }

    #[test]
    fn slurm_s_launch_node_comes_before_an_inherited_ssh_connection() {
        let asked = std::cell::Cell::new(None);
        let route = |to: IpAddr| {
            asked.set(Some(to));
            Ok("10.251.0.2".parse().unwrap())
        };
        let e = env(Some("10.251.0.1"), Some("192.168.1.5 50000 192.168.1.9 22"));
        let (ip, why) = choose_listen_ip(&e, route).unwrap();
        assert_eq!(ip.to_string(), "10.251.0.2");
        assert_eq!(why, ListenSource::Slurm("10.251.0.1".parse().unwrap()));
        assert_eq!(asked.get(), Some("10.251.0.1".parse().unwrap()));
        assert!(why.to_string().contains("SLURM_LAUNCH_NODE_IPADDR (10.251.0.1)"), "{why}");
    }

    #[test]
    fn ssh_then_loopback_when_slurm_is_not_there_or_empty() {
        let ssh = Some("192.168.1.5 50000 192.168.1.9 22");
        for slurm in [None, Some(""), Some("  ")] {
            let (ip, why) = choose_listen_ip(&env(slurm, ssh), never_asked).unwrap();
            assert_eq!((ip.to_string(), why), ("192.168.1.9".to_owned(), ListenSource::Ssh));
        }
        let v6 = Some("fd00::5 50000 fd00::9 22");
        assert_eq!(choose_listen_ip(&env(None, v6), never_asked).unwrap().0.to_string(), "fd00::9");
        for ssh in [None, Some(""), Some("192.168.1.5 50000"), Some("a b not-an-ip 22")] {
            let (ip, why) = choose_listen_ip(&env(None, ssh), never_asked).unwrap();
            assert_eq!((ip, why), (IpAddr::V4(Ipv4Addr::LOCALHOST), ListenSource::Loopback));
        }
    }

    #[test]
    fn a_bad_or_unroutable_launch_node_is_an_error_that_says_to_use_listen() {
        let err = choose_listen_ip(&env(Some("node17"), None), never_asked).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("SLURM_LAUNCH_NODE_IPADDR is \"node17\", not an IP"), "{text}");
        assert!(text.contains("--listen"), "{text}");
        let unreachable = |_| Err(io::Error::from_raw_os_error(libc::ENETUNREACH));
        let err = choose_listen_ip(&env(Some("10.9.0.1"), None), unreachable).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("no local address routes to $SLURM_LAUNCH_NODE_IPADDR=10.9.0.1"));
        assert!(text.contains("--listen") && text.contains("unreachable"), "{text}");
    }

    #[test]
    fn the_route_to_a_local_address_is_that_address_and_loopback_is_loopback() {
        assert!(local_address_towards(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap().is_loopback());
        let listed = local_interface_addresses().unwrap();
        for (_, ip) in listed.iter().filter(|(_, ip)| ip.is_ipv4()) {
            assert_eq!(local_address_towards(*ip).unwrap(), *ip, "{listed:?}");
        }
    }

    #[test]
    fn listen_specs_parse_addresses_and_interface_names_and_refuse_the_rest() {
        let addr = |t: &str| ListenSpec::Addr(t.parse().unwrap());
        assert_eq!(ListenSpec::parse("10.0.0.2:7000").unwrap(), addr("10.0.0.2:7000"));
        assert_eq!(ListenSpec::parse("::1").unwrap(), addr("[::1]:0"));
        let iface = |name: &str, port| ListenSpec::Interface { name: name.into(), port };
        assert_eq!(ListenSpec::parse("eth0").unwrap(), iface("eth0", 0));
        assert_eq!(ListenSpec::parse("veth-n1:0").unwrap(), iface("veth-n1", 0));
        for bad in ["", ":7000", "eth0:70000", "a/b", "two words", "..", "sixteen-letters0"] {
            let text = ListenSpec::parse(bad).unwrap_err().to_string();
            assert!(text.contains("expected IP, IP:PORT, [IPv6]:PORT, INTERFACE or"), "{text}");
        }
    }

    #[test]
    fn an_interface_listens_on_its_ipv4_else_a_routable_ipv6_address() {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, IpAddr)> {
            list.iter().map(|(n, ip)| (n.to_string(), ip.parse().unwrap())).collect()
        };
        let listed = pairs(&[("ib0", "fe80::2"), ("ib0", "fd00::7"), ("lo", "127.0.0.1")]);
        assert_eq!(interface_address("ib0", &listed).unwrap().to_string(), "fd00::7");
        let only_link_local = pairs(&[("ib0", "fe80::2")]);
        let err = interface_address("ib0", &only_link_local).unwrap_err().to_string();
        assert!(err.contains("only link-local addresses"), "{err}");
        let err = interface_address("eth9", &listed).unwrap_err().to_string();
        assert!(err.contains("no interface named \"eth9\"") && err.contains("ib0, lo"), "{err}");
        let lo = local_interface_addresses().unwrap();
        assert_eq!(interface_address("lo", &lo).unwrap(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
}
