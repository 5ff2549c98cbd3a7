//! The members a new member joins through, as an operator writes them, and
//! how they become addresses.
//!
//! Four forms, the last two in the convention of Grafana's dskit (the
//! memberlist seeds of Mimir, Loki and Tempo):
//!
//! | form | resolved to |
//! |---|---|
//! | `10.0.0.1:7946`, `[fd00::1]:7946` | that address |
//! | `seed.example:7946` | every A and AAAA record of the name, by the system's resolver |
//! | `dns+seed.example:7946` | the same, said explicitly |
//! | `dnssrv+_vigil._udp.vigil.example.` | every SRV target of the name with its port, each target's addresses from the answer or else looked up |
//!
//! Names are resolved when the member starts and again every time it
//! knows no live member and goes back to its seeds, so records that change
//! (a Kubernetes headless Service, a seed that moved) keep working.
//!
//! ```
//! use vigil_net::Seed;
//!
//! let seed: Seed = "dnssrv+_vigil._udp.vigil.default.svc.cluster.local.".parse()?;
//! assert_eq!(seed, Seed::Srv("_vigil._udp.vigil.default.svc.cluster.local.".into()));
//! assert_eq!(seed.to_string(), "dnssrv+_vigil._udp.vigil.default.svc.cluster.local.");
//! assert!("seed.example".parse::<Seed>().unwrap_err().to_string().contains("HOST:PORT"));
//! # Ok::<(), vigil_net::SeedError>(())
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use crate::dns::{self, Question, RecordType, ResolvConf};

/// Addresses one resolution yields at most, all seeds together (the node
/// keeps as many seeds).
pub(crate) const MAX_RESOLVED: usize = 256;

/// How long one name may take to resolve, whatever the resolver does.
const RESOLVE_WAIT: Duration = Duration::from_secs(10);

/// A seed as given: an address, a host name with a port, or a DNS SRV
/// name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seed {
    /// An address: no lookup.
    Addr(SocketAddr),
    /// `host:port` or `dns+host:port`: every address the name resolves to.
    Host {
        /// The name.
        host: String,
        /// The port.
        port: u16,
        /// Written with `dns+`.
        explicit: bool,
    },
    /// `dnssrv+NAME`: the SRV record's targets and ports.
    Srv(String),
}

/// A seed that cannot be used, with what was typed and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedError {
    /// What was given, cut to 200 characters.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for SeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a seed: {}", self.text, self.why)
    }
}

impl std::error::Error for SeedError {}

impl FromStr for Seed {
    type Err = SeedError;

    fn from_str(text: &str) -> Result<Seed, SeedError> {
        let bad = |why: &str| SeedError { text: text.chars().take(200).collect(), why: why.to_owned() };
        if let Some(name) = text.strip_prefix("dnssrv+") {
            Question::new(name, RecordType::Srv).map_err(|e| bad(&e.to_string()))?;
            return Ok(Seed::Srv(name.to_owned()));
        }
        let (rest, explicit) = match text.strip_prefix("dns+") {
            Some(rest) => (rest, true),
            None => (text, false),
        };
        if let Ok(addr) = rest.parse::<SocketAddr>() {
            if addr.ip().is_unspecified() || addr.port() == 0 {
                return Err(bad("an unspecified address or port 0 reaches nobody"));
            }
            return Ok(if explicit {
                Seed::Host { host: addr.ip().to_string(), port: addr.port(), explicit }
            } else {
                Seed::Addr(addr)
            });
        }
        let expected = "expected IP:PORT, HOST:PORT, dns+HOST:PORT or dnssrv+NAME";
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad(expected))?;
        if host.is_empty() || host.contains([':', '[', ']']) {
            return Err(bad(expected));
        }
        Question::new(host, RecordType::A).map_err(|e| bad(&e.to_string()))?;
        match port.parse::<u16>() {
            Ok(port) if port > 0 => Ok(Seed::Host { host: host.to_owned(), port, explicit }),
            _ => Err(bad("the port must be 1 to 65535")),
        }
    }
}

impl fmt::Display for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seed::Addr(a) => write!(f, "{a}"),
            Seed::Host { host, port, explicit } => {
                let prefix = if *explicit { "dns+" } else { "" };
                if host.contains(':') {
                    write!(f, "{prefix}[{host}]:{port}")
                } else {
                    write!(f, "{prefix}{host}:{port}")
                }
            }
            Seed::Srv(name) => write!(f, "dnssrv+{name}"),
        }
    }
}

/// Resolves one seed: its addresses, or why it has none.
pub(crate) async fn resolve_one(seed: &Seed) -> Result<Vec<SocketAddr>, String> {
    let found = match seed {
        Seed::Addr(a) => Ok(vec![*a]),
        Seed::Host { host, port, .. } => lookup_host(host, *port).await,
        Seed::Srv(name) => {
            let conf = ResolvConf::read(Path::new("/etc/resolv.conf")).map_err(|e| e.to_string())?;
            srv(&conf, name).await
        }
    };
    match found {
        Ok(a) if a.is_empty() => Err("resolved to no address".to_owned()),
        other => other,
    }
}

/// Resolves every seed; the addresses, without repeats and at most
/// [`MAX_RESOLVED`], and how many seeds yielded none (each logged with its
/// reason).
pub(crate) async fn resolve(seeds: &[Seed]) -> (Vec<SocketAddr>, u64) {
    let mut out: Vec<SocketAddr> = Vec::new();
    let mut failed = 0;
    let mut conf: Option<ResolvConf> = None;
    for seed in seeds {
        let found = match seed {
            Seed::Addr(a) => Ok(vec![*a]),
            Seed::Host { host, port, .. } => lookup_host(host, *port).await,
            Seed::Srv(name) => {
                if conf.is_none() {
                    conf = Some(ResolvConf::read(Path::new("/etc/resolv.conf")).unwrap_or_else(|e| {
                        tracing::warn!("{e}: no name server to ask for SRV seeds");
                        ResolvConf::default()
                    }));
                }
                let conf = conf.as_ref().map_or_else(ResolvConf::default, Clone::clone);
                srv(&conf, name).await
            }
        };
        match found {
            Ok(addrs) if !addrs.is_empty() => {
                for a in addrs {
                    if !out.contains(&a) && out.len() < MAX_RESOLVED {
                        out.push(a);
                    }
                }
            }
            Ok(_) => {
                failed += 1;
                tracing::warn!("the seed {seed} resolved to no address");
            }
            Err(e) => {
                failed += 1;
                tracing::warn!("cannot resolve the seed {seed}: {e}");
            }
        }
    }
    (out, failed)
}

async fn lookup_host(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    match tokio::time::timeout(RESOLVE_WAIT, tokio::net::lookup_host((host.trim_end_matches('.'), port))).await {
        Ok(Ok(addrs)) => Ok(addrs.take(MAX_RESOLVED).collect()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".to_owned()),
    }
}

/// The SRV targets of `name` with their ports: each target's addresses from
/// the answer's additional records, or else looked up.
async fn srv(conf: &ResolvConf, name: &str) -> Result<Vec<SocketAddr>, String> {
    let answer = tokio::time::timeout(RESOLVE_WAIT, dns::lookup(conf, name, RecordType::Srv))
        .await
        .map_err(|_| "timed out".to_owned())?
        .map_err(|e| e.to_string())?;
    let mut targets = answer.srv;
    targets.sort_by_key(|t| (t.priority, std::cmp::Reverse(t.weight)));
    let mut out = Vec::new();
    for t in targets.iter().filter(|t| t.port != 0 && t.target != ".") {
        match answer.extra.get(&t.target) {
            Some(ips) => out.extend(ips.iter().map(|&ip| SocketAddr::new(ip, t.port))),
            None => match lookup_host(&t.target, t.port).await {
                Ok(addrs) => out.extend(addrs),
                Err(e) => tracing::warn!("the SRV target {} of {name}: {e}", t.target),
            },
        }
        if out.len() >= MAX_RESOLVED {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_forms_read_and_print_back() {
        for text in [
            "10.0.0.1:7946",
            "[fd00::1]:7946",
            "seed.example:7946",
            "dns+seed.example:7946",
            "dns+10.0.0.1:7946",
            "dnssrv+_vigil._udp.vigil.example.",
            "dnssrv+_vigil._udp.vigil",
        ] {
            let seed: Seed = text.parse().unwrap();
            assert_eq!(seed.to_string(), text);
        }
        assert_eq!(
            "seed.example:7946".parse::<Seed>().unwrap(),
            Seed::Host { host: "seed.example".into(), port: 7946, explicit: false }
        );
    }

    #[test]
    fn unusable_seeds_say_what_is_wrong() {
        for (text, why) in [
            ("seed.example", "expected IP:PORT"),
            ("seed.example:0", "1 to 65535"),
            ("seed.example:99999", "1 to 65535"),
            ("0.0.0.0:7946", "reaches nobody"),
            ("10.0.0.1:0", "reaches nobody"),
            ("dns+:7946", "expected"),
            ("bad host:7946", "letters, digits"),
            ("dnssrv+", "empty"),
            ("dnssrv+a..b", "empty label"),
            ("fd00::1:7946x", "expected"),
        ] {
            let err = text.parse::<Seed>().unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains(&format!("{text:?}")), "{err} names what was typed");
        }
    }

    #[tokio::test]
    async fn addresses_and_local_names_resolve_without_repeats() {
        let seeds: Vec<Seed> =
            ["127.0.0.1:7946", "localhost:7946", "127.0.0.1:7946"].iter().map(|s| s.parse().unwrap()).collect();
        let (addrs, failed) = resolve(&seeds).await;
        assert_eq!(failed, 0);
        assert!(addrs.contains(&"127.0.0.1:7946".parse().unwrap()), "{addrs:?}");
        let mut unique = addrs.clone();
        unique.dedup();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), addrs.len(), "{addrs:?}");
    }
}
