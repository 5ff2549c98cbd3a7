//! What a web page cannot do with the API, whatever it sends.
//!
//! - **Host.** A request must name the API by an address it listens on
//!   (`IP:PORT`, `[IPv6]:PORT`; any IP on its port when it listens on every
//!   interface), by `localhost:PORT` when it listens on loopback, or by a
//!   name given with `--http-host`; anything else is refused with 421. A
//!   page that rebinds its own name to this host's address (DNS rebinding)
//!   sends its own name, so it reads nothing.
//! - **Origin.** A request that says it comes from a page (`Origin`) must
//!   come from the API's own pages: `http://` or `https://` and the Host it
//!   names. Others are refused with 403; requests without `Origin` (curl,
//!   the command line, monitoring) are not affected.
//! - **Content-Type.** Every `POST`, and every other request with a body,
//!   must say `Content-Type: application/json` (415 otherwise). A page can
//!   send a cross-origin "simple" request without asking first only with
//!   another type, so no such request reaches a change.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// A host as a `Host` header or `--http-host` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    Ip(IpAddr),
    /// A DNS name, in lower case.
    Dns(String),
}

/// A name the API may be reached by besides its own addresses: `NAME`
/// (on any port) or `NAME:PORT` (a Host without a port names port 80).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    name: Name,
    port: Option<u16>,
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.name, self.port) {
            (Name::Ip(IpAddr::V6(ip)), Some(p)) => write!(f, "[{ip}]:{p}"),
            (Name::Ip(IpAddr::V6(ip)), None) => write!(f, "[{ip}]"),
            (Name::Ip(ip), Some(p)) => write!(f, "{ip}:{p}"),
            (Name::Ip(ip), None) => write!(f, "{ip}"),
            (Name::Dns(n), Some(p)) => write!(f, "{n}:{p}"),
            (Name::Dns(n), None) => write!(f, "{n}"),
        }
    }
}

/// Text that is not a host name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadHost;

impl std::fmt::Display for BadHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a host name (NAME or NAME:PORT, e.g. vigil.example.com or vigil:8470)")
    }
}

impl std::error::Error for BadHost {}

/// Reads `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6
/// one, and a port from 1 to 65535.
///
/// ```
/// use vigil_agent::api::origin::Host;
///
/// assert_eq!("Vigil.Example.com:8470".parse::<Host>().unwrap().to_string(), "vigil.example.com:8470");
/// assert_eq!("[::1]".parse::<Host>().unwrap().to_string(), "[::1]");
/// assert!("vigil:0".parse::<Host>().is_err());
/// assert!("a b".parse::<Host>().is_err());
/// ```
impl std::str::FromStr for Host {
    type Err = BadHost;

    fn from_str(text: &str) -> Result<Host, BadHost> {
        parse(text).ok_or(BadHost)
    }
}

/// `host[:port]`, if it is one.
fn parse(text: &str) -> Option<Host> {
    let (name, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (ip, after) = rest.split_once(']')?;
            (Name::Ip(IpAddr::V6(ip.parse::<Ipv6Addr>().ok()?)), after)
        }
        None => {
            let (name, after) = match text.find(':') {
                Some(i) => (&text[..i], &text[i..]),
                None => (text, ""),
            };
            let name = match name.parse::<IpAddr>() {
                Ok(ip @ IpAddr::V4(_)) => Name::Ip(ip),
                _ if !name.is_empty()
                    && name.len() <= 253
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) =>
                {
                    Name::Dns(name.to_ascii_lowercase())
                }
                _ => return None,
            };
            (name, after)
        }
    };
    let port = match port {
        "" => None,
        p => {
            let p = p.strip_prefix(':')?;
            if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some(p.parse::<u16>().ok().filter(|&p| p > 0)?)
        }
    };
    Some(Host { name, port })
}

/// The names the API answers to.
#[derive(Debug)]
pub struct Hosts {
    bound: SocketAddr,
    extra: Vec<Host>,
}

impl Hosts {
    /// The names of an API bound to `bound`, and `extra` ones.
    pub fn new(bound: SocketAddr, extra: Vec<Host>) -> Hosts {
        Hosts { bound, extra }
    }

    /// Whether a `Host` of `text` names this API.
    fn allows(&self, text: &str) -> bool {
        let Some(given) = parse(text) else { return false };
        let (ip, port) = (self.bound.ip().to_canonical(), self.bound.port());
        // Without a port, a Host names port 80.
        let on_port = given.port.unwrap_or(80) == port;
        let ours = match &given.name {
            Name::Ip(given) => on_port && (ip.is_unspecified() || given.to_canonical() == ip),
            Name::Dns(n) => on_port && n == "localhost" && (ip.is_loopback() || ip.is_unspecified()),
        };
        ours || self.extra.iter().any(|h| h.name == given.name && h.port.is_none_or(|p| given.port.unwrap_or(80) == p))
    }

    /// What the API answers to, in words.
    fn described(&self) -> String {
        let (ip, port) = (self.bound.ip().to_canonical(), self.bound.port());
        let mut names = Vec::new();
        if ip.is_unspecified() {
            names.push(format!("any of this host's addresses on port {port}"));
        } else {
            names.push(SocketAddr::new(ip, port).to_string());
        }
        if ip.is_loopback() || ip.is_unspecified() {
            names.push(format!("localhost:{port}"));
        }
        names.extend(self.extra.iter().take(8).map(ToString::to_string));
        if self.extra.len() > 8 {
            names.push(format!("{} more", self.extra.len() - 8));
        }
        names.join(", ")
    }
}

/// Bytes from a request as an error shows them: quoted, at most 64 of
/// them, anything but printable ASCII escaped.
fn shown(bytes: &[u8]) -> String {
    const SHOWN: usize = 64;
    let mut s = String::from("'");
    for &b in bytes.iter().take(SHOWN) {
        match b {
            b'\'' | b'\\' => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('\'');
    if bytes.len() > SHOWN {
        let _ = write!(s, "… ({} bytes)", bytes.len());
    }
    s
}

/// The request's Host, or why it is refused.
fn host<'a>(hosts: &Hosts, req: &'a Request) -> Result<&'a str, ApiError> {
    let refused = |what: &[u8]| {
        ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host {} is not a name of this API (it answers to {}; give others with --http-host)",
                shown(what),
                hosts.described()
            ),
        )
    };
    let mut given = req.headers().get_all(header::HOST).iter();
    let (Some(value), None) = (given.next(), given.next()) else {
        return Err(ApiError::new(StatusCode::MISDIRECTED_REQUEST, "a request needs one Host header"));
    };
    let text = value.to_str().map_err(|_| refused(value.as_bytes()))?;
    if !hosts.allows(text) {
        return Err(refused(value.as_bytes()));
    }
    // A request in absolute form names its host in its target too.
    if let Some(a) = req.uri().authority()
        && !hosts.allows(a.as_str())
    {
        return Err(refused(a.as_str().as_bytes()));
    }
    Ok(text)
}

/// Refuses an `Origin` other than the API's own (`host` as the request
/// named it).
fn origin(headers: &HeaderMap, host: &str) -> Result<(), ApiError> {
    let mut given = headers.get_all(header::ORIGIN).iter();
    let Some(value) = given.next() else { return Ok(()) };
    let own = |v: &str| {
        let authority = v.strip_prefix("http://").or_else(|| v.strip_prefix("https://"));
        authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
    };
    if given.next().is_none() && value.to_str().is_ok_and(own) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "Origin {}: only this API's own pages (http://{host}) may use it from a browser",
            shown(value.as_bytes())
        ),
    ))
}

/// Refuses a `POST`, or a request with a body, that is not JSON.
fn content_type(req: &Request) -> Result<(), ApiError> {
    let headers = req.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers.get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() != b"0");
    if req.method() != Method::POST && !has_body {
        return Ok(());
    }
    let given = headers.get(header::CONTENT_TYPE);
    let json = given
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if json {
        return Ok(());
    }
    let what = given.map_or_else(|| "none was given".to_owned(), |v| format!("not {}", shown(v.as_bytes())));
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!("{} {} needs Content-Type: application/json ({what})", req.method(), req.uri().path()),
    ))
}

/// The three checks, before anything else sees the request.
pub(crate) async fn same_origin(State(hosts): State<Arc<Hosts>>, req: Request, next: Next) -> Response {
    let checked = host(&hosts, &req).and_then(|h| origin(req.headers(), h)).and_then(|()| content_type(&req));
    match checked {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(bound: &str, extra: &[&str]) -> Hosts {
        let extra: Vec<Host> = extra.iter().map(|s| s.parse().unwrap()).collect();
        Hosts::new(bound.parse().unwrap(), extra)
    }

    #[test]
    fn the_api_answers_to_its_addresses_and_the_names_it_is_given() {
        let h = hosts("127.0.0.1:8470", &["vigil.example", "proxy:9000", "[2001:db8::1]:80"]);
        for ok in
            ["127.0.0.1:8470", "localhost:8470", "LOCALHOST:8470", "vigil.example", "vigil.example:1", "proxy:9000"]
        {
            assert!(h.allows(ok), "{ok}");
        }
        assert!(h.allows("[2001:db8::1]:80") && h.allows("[2001:DB8::1]"));
        for bad in [
            "evil.example",
            "evil.example:8470",
            "127.0.0.1",
            "127.0.0.1:8471",
            "10.0.0.1:8470",
            "[::1]:8470",
            "proxy:9001",
            "proxy",
            "localhost",
            "",
            "127.0.0.1:",
            "127.0.0.1:08470x",
            "user@127.0.0.1:8470",
            "127.0.0.1:8470/",
            "[::1",
        ] {
            assert!(!h.allows(bad), "{bad}");
        }
        let v6 = hosts("[::1]:8470", &[]);
        assert!(v6.allows("[::1]:8470") && v6.allows("localhost:8470") && !v6.allows("127.0.0.1:8470"));
        let every = hosts("0.0.0.0:8470", &[]);
        assert!(every.allows("10.1.2.3:8470") && every.allows("[fe80::1]:8470") && every.allows("localhost:8470"));
        assert!(!every.allows("10.1.2.3:80") && !every.allows("rebound.example:8470"));
        let public = hosts("10.0.0.1:8470", &[]);
        assert!(public.allows("10.0.0.1:8470") && !public.allows("localhost:8470"));
    }

    #[test]
    fn names_that_cannot_be_hosts_are_refused() {
        for bad in ["", "a b", "http://x", "x:0", "x:65536", "x:-1", "[::1]x", "ä.example"] {
            assert!(bad.parse::<Host>().is_err(), "{bad}");
        }
    }

    #[test]
    fn what_a_request_sent_is_shown_escaped_and_bounded() {
        assert_eq!(shown(b"evil.example"), "'evil.example'");
        assert_eq!(shown(b"a'b\\c\x00\xff"), "'a\\'b\\\\c\\x00\\xff'");
        let long = shown(&[b'x'; 10_000]);
        assert!(long.len() < 100 && long.ends_with("(10000 bytes)"), "{long}");
    }
}
