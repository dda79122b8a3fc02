//! Where the manager serves its probes and metrics: bind addresses as kubebuilder spells them.
//!
//! `:8080` serves port 8080 on every interface, IPv4 and IPv6 alike (one dual-stack socket,
//! or IPv4 alone where the kernel has no IPv6); `127.0.0.1:8080` or `[::1]:8080` serve one
//! address; `0` serves nothing.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use anyhow::Context as _;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

#[cfg(any(feature = "webhooks", feature = "secure-metrics"))]
pub(crate) mod tls;

/// A `--*-bind-address` flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindAddress {
    /// `0`: do not serve.
    Disabled,
    /// `:<port>`: every interface, IPv4 and IPv6.
    AnyHost(u16),
    /// One address and port.
    Address(SocketAddr),
}

impl FromStr for BindAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "0" {
            return Ok(BindAddress::Disabled);
        }
        if let Some(port) = text.strip_prefix(':') {
            return port
                .parse()
                .map(BindAddress::AnyHost)
                .map_err(|_| format!("`{text}` has no valid port after `:`"));
        }
        text.parse().map(BindAddress::Address).map_err(|_| {
            format!("`{text}` is not `:<port>`, `<ip>:<port>`, `[<ipv6>]:<port>` or `0`")
        })
    }
}

impl fmt::Display for BindAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindAddress::Disabled => f.write_str("0"),
            BindAddress::AnyHost(port) => write!(f, ":{port}"),
            BindAddress::Address(addr) => write!(f, "{addr}"),
        }
    }
}

/// Binds `address`; `None` when it is disabled. Fails at once if the address is taken.
pub fn listen(address: BindAddress) -> anyhow::Result<Option<TcpListener>> {
    let listener = match address {
        BindAddress::Disabled => return Ok(None),
        BindAddress::AnyHost(port) => {
            dual_stack(port).or_else(|_| bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))))
        }
        BindAddress::Address(addr) => bind(addr),
    };
    listener
        .with_context(|| format!("cannot listen on {address}"))
        .map(Some)
}

/// Serves `router` on `address` in the background, unless it is disabled.
pub fn serve(address: BindAddress, router: axum::Router) -> anyhow::Result<()> {
    if let Some(listener) = listen(address)? {
        tokio::spawn(async move { axum::serve(listener, router).await });
    }
    Ok(())
}

/// One socket on `[::]:port` that accepts IPv4 too.
fn dual_stack(port: u16) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_only_v6(false)?;
    socket.set_reuse_address(true)?;
    socket.bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)).into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket.into())
}

fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = std::net::TcpListener::bind(addr)?;
    socket.set_nonblocking(true)?;
    TcpListener::from_std(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubebuilders_spellings() {
        assert_eq!(":8080".parse(), Ok(BindAddress::AnyHost(8080)));
        assert_eq!("0".parse(), Ok(BindAddress::Disabled));
        assert_eq!(
            "127.0.0.1:8081".parse(),
            Ok(BindAddress::Address(SocketAddr::from((
                [127, 0, 0, 1],
                8081
            ))))
        );
        assert_eq!(
            "[::1]:8081".parse::<BindAddress>().map(|a| a.to_string()),
            Ok("[::1]:8081".to_string())
        );
        assert!(":http".parse::<BindAddress>().is_err());
        assert!("localhost".parse::<BindAddress>().is_err());
    }

    #[tokio::test]
    async fn any_host_serves_ipv4_and_ipv6() {
        let listener = listen(BindAddress::AnyHost(0))
            .unwrap()
            .expect("a listener");
        let local = listener.local_addr().unwrap();
        let v4 = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, local.port())).await;
        assert!(v4.is_ok(), "IPv4 refused: {v4:?}");
        if local.is_ipv6() {
            let v6 = tokio::net::TcpStream::connect((Ipv6Addr::LOCALHOST, local.port())).await;
            assert!(v6.is_ok(), "IPv6 refused: {v6:?}");
        }
    }

    #[test]
    fn disabled_serves_nothing() {
        assert!(listen(BindAddress::Disabled).unwrap().is_none());
    }
}
