//! A small stub resolver for the seeds that need more than the system's
//! `getaddrinfo`: SRV records (`dnssrv+_vigil._udp.example.`), asked of the
//! name servers in `/etc/resolv.conf` over UDP, and over TCP when the answer
//! was truncated.
//!
//! A DNS answer is untrusted input: [`parse_response`] checks every count,
//! length and compression pointer against the message before it reads, so a
//! hostile or broken server gets a [`DnsError`], never a panic, a loop or an
//! allocation larger than the message.
//!
//! # Examples
//!
//! ```
//! use vigil_net::dns::{Question, RecordType, encode_query, parse_response};
//!
//! let q = Question::new("_vigil._udp.example.", RecordType::Srv)?;
//! let query = encode_query(0x1234, &q);
//! // A server that knows nothing of the name answers NXDOMAIN: the query
//! // echoed with the response bit and rcode 3.
//! let mut answer = query.clone();
//! answer[2] |= 0x80;
//! answer[3] = 0x03;
//! answer[11] = 0; // no additional records
//! let question_end = 12 + q.wire_len();
//! let err = parse_response(&answer[..question_end], 0x1234, &q).unwrap_err();
//! assert_eq!(err.to_string(), "_vigil._udp.example.: no such name");
//! # Ok::<(), vigil_net::dns::DnsError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// The longest name on the wire (RFC 1035 §2.3.4).
const MAX_NAME: usize = 255;
/// The longest label.
const MAX_LABEL: usize = 63;
/// Compression pointers followed at most in one name.
const MAX_POINTERS: usize = 32;
/// The UDP payload this resolver says it takes (EDNS0), the size the DNS
/// flag day 2020 recommends.
const UDP_PAYLOAD: u16 = 1232;
/// Name servers asked at most, as glibc's `MAXNS`.
const MAX_SERVERS: usize = 3;
/// Search domains kept at most.
const MAX_SEARCH: usize = 6;
/// The largest `/etc/resolv.conf` read.
const MAX_RESOLV_CONF: u64 = 64 * 1024;

/// A record type this resolver asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    /// An IPv4 address.
    A,
    /// An IPv6 address.
    Aaaa,
    /// A service's targets and ports (RFC 2782).
    Srv,
}

impl RecordType {
    fn code(self) -> u16 {
        match self {
            RecordType::A => 1,
            RecordType::Aaaa => 28,
            RecordType::Srv => 33,
        }
    }
}

const TYPE_CNAME: u16 = 5;
const TYPE_OPT: u16 = 41;
const CLASS_IN: u16 = 1;

/// What went wrong resolving a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsError {
    /// The name cannot be asked: too long, an empty or oversized label, or
    /// a character DNS names do not carry.
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The server says the name does not exist (NXDOMAIN).
    NoSuchName(String),
    /// The server failed or refused (its response code).
    Server {
        /// The name asked.
        name: String,
        /// The response code (2 SERVFAIL, 5 REFUSED, ...).
        rcode: u8,
    },
    /// The answer broke the message format.
    Malformed(&'static str),
    /// The answer does not answer the question asked (another id, name or
    /// type): ignored while waiting for the real one.
    Mismatch,
    /// The answer was truncated (asked again over TCP).
    Truncated,
    /// No server answered in time.
    Timeout(String),
    /// No name server is configured.
    NoServers,
    /// A socket or file error, with what was being done.
    Io(String),
}

impl fmt::Display for DnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DnsError::BadName { name, why } => write!(f, "{name:?} is not a DNS name: {why}"),
            DnsError::NoSuchName(name) => write!(f, "{name}: no such name"),
            DnsError::Server { name, rcode } => write!(f, "{name}: the name server answered with error {rcode}"),
            DnsError::Malformed(why) => write!(f, "a malformed DNS answer ({why})"),
            DnsError::Mismatch => write!(f, "a DNS answer to another question"),
            DnsError::Truncated => write!(f, "a truncated DNS answer"),
            DnsError::Timeout(name) => write!(f, "{name}: no name server answered"),
            DnsError::NoServers => write!(f, "no name server is configured (no nameserver line in /etc/resolv.conf)"),
            DnsError::Io(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for DnsError {}

/// One question: a name, absolute (ending in `.`, which is added if
/// missing), and a type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The labels, lowercase.
    labels: Vec<String>,
    kind: RecordType,
}

impl Question {
    /// A question for `name`; the name is checked here, so that nothing is
    /// sent for a name the wire cannot carry.
    pub fn new(name: &str, kind: RecordType) -> Result<Question, DnsError> {
        let bad = |why| DnsError::BadName { name: name.chars().take(300).collect(), why };
        let trimmed = name.strip_suffix('.').unwrap_or(name);
        if trimmed.is_empty() {
            return Err(bad("it is empty"));
        }
        let mut labels = Vec::new();
        let mut wire = 1;
        for label in trimmed.split('.') {
            if label.is_empty() {
                return Err(bad("it has an empty label"));
            }
            if label.len() > MAX_LABEL {
                return Err(bad("a label is longer than 63 bytes"));
            }
            if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(bad("only letters, digits, '-' and '_' may appear in a label"));
            }
            wire += 1 + label.len();
            labels.push(label.to_ascii_lowercase());
        }
        if wire > MAX_NAME {
            return Err(bad("it is longer than 255 bytes"));
        }
        Ok(Question { labels, kind })
    }

    /// The name, absolute.
    pub fn name(&self) -> String {
        let mut s = self.labels.join(".");
        s.push('.');
        s
    }

    /// The record type asked.
    pub fn kind(&self) -> RecordType {
        self.kind
    }

    /// Bytes of the question section: the encoded name, type and class.
    pub fn wire_len(&self) -> usize {
        self.labels.iter().map(|l| 1 + l.len()).sum::<usize>() + 1 + 4
    }
}

/// A service target from an SRV record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SrvTarget {
    /// Lower is preferred.
    pub priority: u16,
    /// Relative weight among equal priorities.
    pub weight: u16,
    /// The service's port on the target.
    pub port: u16,
    /// The target host, absolute, lowercase.
    pub target: String,
}

/// What an answer held: the records that answer the question (through any
/// CNAMEs it also held), and the addresses of names the server added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// SRV records answering the question.
    pub srv: Vec<SrvTarget>,
    /// A and AAAA records answering the question.
    pub addrs: Vec<IpAddr>,
    /// Addresses the message carried for other names (the SRV targets, in
    /// the additional section), by lowercase absolute name.
    pub extra: BTreeMap<String, Vec<IpAddr>>,
}

/// The query for `q` with id `id`: recursion desired, one question, and an
/// EDNS0 record offering a 1232-byte UDP answer.
pub fn encode_query(id: u16, q: &Question) -> Vec<u8> {
    let mut m = Vec::with_capacity(12 + q.wire_len() + 11);
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00]); // RD
    m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 1]); // 1 question, 1 additional
    for label in &q.labels {
        m.push(u8::try_from(label.len()).unwrap_or(0));
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&q.kind.code().to_be_bytes());
    m.extend_from_slice(&CLASS_IN.to_be_bytes());
    // OPT: root name, type 41, class = payload size, ttl 0, no data.
    m.push(0);
    m.extend_from_slice(&TYPE_OPT.to_be_bytes());
    m.extend_from_slice(&UDP_PAYLOAD.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    m
}

/// Reads a response to the query `id` for `q`. Every read is bounds
/// checked; compression pointers must point backwards and are followed at
/// most 32 times per name.
pub fn parse_response(msg: &[u8], id: u16, q: &Question) -> Result<Answer, DnsError> {
    let mut r = Reader { msg, at: 0 };
    let got_id = r.u16()?;
    let flags = r.u16()?;
    let (qd, an, ns, ar) = (r.u16()?, r.u16()?, r.u16()?, r.u16()?);
    if got_id != id || flags & 0x8000 == 0 {
        return Err(DnsError::Mismatch);
    }
    if flags & 0x0200 != 0 {
        return Err(DnsError::Truncated);
    }
    match flags & 0x000f {
        0 => {}
        3 => return Err(DnsError::NoSuchName(q.name())),
        rcode => return Err(DnsError::Server { name: q.name(), rcode: rcode as u8 }),
    }
    if qd != 1 {
        return Err(DnsError::Mismatch);
    }
    let qname = r.name()?;
    let (qtype, qclass) = (r.u16()?, r.u16()?);
    if qname != q.name() || qtype != q.kind.code() || qclass != CLASS_IN {
        return Err(DnsError::Mismatch);
    }
    let mut answer = Answer::default();
    // The names that answer: the question's, and what its CNAMEs name.
    let mut owners = vec![qname];
    let mut addresses: Vec<(String, IpAddr)> = Vec::new();
    let total = usize::from(an) + usize::from(ns) + usize::from(ar);
    for i in 0..total {
        let owner = r.name()?;
        let (rtype, rclass) = (r.u16()?, r.u16()?);
        let _ttl = r.u32()?;
        let len = usize::from(r.u16()?);
        let data_end =
            r.at.checked_add(len)
                .filter(|&e| e <= msg.len())
                .ok_or(DnsError::Malformed("a record runs past the message"))?;
        let in_answer = i < usize::from(an);
        if rclass == CLASS_IN {
            match rtype {
                TYPE_CNAME if in_answer => {
                    let target = r.name()?;
                    if owners.contains(&owner) && owners.len() < 8 && !owners.contains(&target) {
                        owners.push(target);
                    }
                }
                33 if in_answer && owners.contains(&owner) => {
                    let (priority, weight, port) = (r.u16()?, r.u16()?, r.u16()?);
                    let target = r.name()?;
                    answer.srv.push(SrvTarget { priority, weight, port, target });
                }
                1 if len == 4 => {
                    let b = r.take(4)?;
                    addresses.push((owner, IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))));
                }
                28 if len == 16 => {
                    let b: [u8; 16] = r.take(16)?.try_into().map_err(|_| DnsError::Malformed("an AAAA record"))?;
                    addresses.push((owner, IpAddr::V6(Ipv6Addr::from(b))));
                }
                1 | 28 => return Err(DnsError::Malformed("an address record of the wrong length")),
                _ => {}
            }
        }
        if r.at > data_end {
            return Err(DnsError::Malformed("a record's data is longer than its length says"));
        }
        r.at = data_end;
    }
    for (owner, ip) in addresses {
        let wanted = match (q.kind, ip) {
            (RecordType::A, IpAddr::V4(_)) | (RecordType::Aaaa, IpAddr::V6(_)) => owners.contains(&owner),
            _ => false,
        };
        if wanted {
            answer.addrs.push(ip);
        } else {
            let list = answer.extra.entry(owner).or_default();
            if !list.contains(&ip) {
                list.push(ip);
            }
        }
    }
    Ok(answer)
}

/// A bounds-checked cursor over a message.
struct Reader<'a> {
    msg: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DnsError> {
        let end =
            self.at.checked_add(n).filter(|&e| e <= self.msg.len()).ok_or(DnsError::Malformed("it ends early"))?;
        let out = &self.msg[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, DnsError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, DnsError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A name at the cursor, lowercase and absolute; the cursor moves past
    /// its bytes here (not past what its pointers point to).
    fn name(&mut self) -> Result<String, DnsError> {
        let mut out = String::new();
        let mut wire = 1;
        let mut pos = self.at;
        let mut resume = None;
        let mut pointers = 0;
        loop {
            let len = *self.msg.get(pos).ok_or(DnsError::Malformed("a name runs past the message"))?;
            match len & 0xc0 {
                0x00 if len == 0 => {
                    pos += 1;
                    break;
                }
                0x00 => {
                    let len = usize::from(len);
                    let label = self
                        .msg
                        .get(pos + 1..pos + 1 + len)
                        .ok_or(DnsError::Malformed("a label runs past the message"))?;
                    wire += 1 + len;
                    if wire > MAX_NAME {
                        return Err(DnsError::Malformed("a name longer than 255 bytes"));
                    }
                    if !label.iter().all(|&b| b.is_ascii_graphic() && b != b'.') {
                        return Err(DnsError::Malformed("a label with a byte names do not carry"));
                    }
                    out.extend(label.iter().map(|&b| char::from(b.to_ascii_lowercase())));
                    out.push('.');
                    pos += 1 + len;
                }
                0xc0 => {
                    let low = *self.msg.get(pos + 1).ok_or(DnsError::Malformed("a pointer runs past the message"))?;
                    let target = usize::from(len & 0x3f) << 8 | usize::from(low);
                    // Backwards only: a pointer can never reach itself.
                    if target >= pos {
                        return Err(DnsError::Malformed("a compression pointer that does not point back"));
                    }
                    pointers += 1;
                    if pointers > MAX_POINTERS {
                        return Err(DnsError::Malformed("too many compression pointers in one name"));
                    }
                    resume.get_or_insert(pos + 2);
                    pos = target;
                }
                _ => return Err(DnsError::Malformed("a label type DNS does not use")),
            }
        }
        self.at = resume.unwrap_or(pos);
        if out.is_empty() {
            out.push('.');
        }
        Ok(out)
    }
}

/// The system's resolver settings, as far as this resolver uses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvConf {
    /// Name servers, port 53, at most three.
    pub servers: Vec<SocketAddr>,
    /// Domains tried for a relative name, at most six.
    pub search: Vec<String>,
    /// A relative name with at least this many dots is tried as it is
    /// first.
    pub ndots: usize,
    /// How long to wait for one server.
    pub timeout: Duration,
    /// Rounds over the servers.
    pub attempts: usize,
}

impl Default for ResolvConf {
    fn default() -> ResolvConf {
        ResolvConf { servers: Vec::new(), search: Vec::new(), ndots: 1, timeout: Duration::from_secs(2), attempts: 2 }
    }
}

impl ResolvConf {
    /// Reads `path` (normally `/etc/resolv.conf`); a missing file is the
    /// defaults with no server. Lines this resolver does not use are
    /// skipped, as the C library skips them.
    pub fn read(path: &Path) -> Result<ResolvConf, DnsError> {
        use std::io::Read;
        let named = |e: std::io::Error| DnsError::Io(format!("{}: {e}", path.display()));
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ResolvConf::default()),
            Err(e) => return Err(named(e)),
        };
        let mut text = String::new();
        file.take(MAX_RESOLV_CONF).read_to_string(&mut text).map_err(named)?;
        Ok(ResolvConf::parse(&text))
    }

    /// Parses the text of a `resolv.conf`.
    ///
    /// ```
    /// use vigil_net::dns::ResolvConf;
    ///
    /// let conf = ResolvConf::parse("nameserver 10.96.0.10\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n");
    /// assert_eq!(conf.servers, ["10.96.0.10:53".parse().unwrap()]);
    /// assert_eq!(conf.search.len(), 2);
    /// assert_eq!(conf.ndots, 5);
    /// ```
    pub fn parse(text: &str) -> ResolvConf {
        let mut conf = ResolvConf::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    // An IPv6 server may carry a zone (fe80::1%eth0): not kept.
                    if let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok())
                        && conf.servers.len() < MAX_SERVERS
                    {
                        conf.servers.push(SocketAddr::new(ip, 53));
                    }
                }
                Some("search") | Some("domain") => {
                    conf.search = words
                        .filter(|w| Question::new(w, RecordType::A).is_ok())
                        .take(MAX_SEARCH)
                        .map(str::to_owned)
                        .collect();
                }
                Some("options") => {
                    for opt in words {
                        let number = |prefix: &str| opt.strip_prefix(prefix).and_then(|v| v.parse::<u64>().ok());
                        if let Some(n) = number("ndots:") {
                            conf.ndots = n.min(15) as usize;
                        } else if let Some(n) = number("timeout:") {
                            conf.timeout = Duration::from_secs(n.clamp(1, 30));
                        } else if let Some(n) = number("attempts:") {
                            conf.attempts = n.clamp(1, 5) as usize;
                        }
                    }
                }
                _ => {}
            }
        }
        conf
    }

    /// The absolute names to try for `name`, in order: an absolute name as
    /// it is; a relative one with the search domains, before or after
    /// itself by `ndots`.
    pub fn candidates(&self, name: &str) -> Vec<String> {
        if name.ends_with('.') {
            return vec![name.to_owned()];
        }
        let searched = self.search.iter().map(|d| format!("{name}.{}.", d.trim_end_matches('.')));
        let itself = format!("{name}.");
        if name.matches('.').count() >= self.ndots {
            std::iter::once(itself).chain(searched).collect()
        } else {
            searched.chain(std::iter::once(itself)).collect()
        }
    }
}

/// Asks the configured servers for `name`'s records of type `kind`,
/// trying the search domains for a relative name; the first name that
/// exists and has records of that type answers.
pub async fn lookup(conf: &ResolvConf, name: &str, kind: RecordType) -> Result<Answer, DnsError> {
    if conf.servers.is_empty() {
        return Err(DnsError::NoServers);
    }
    let mut last = DnsError::NoSuchName(name.to_owned());
    for candidate in conf.candidates(name) {
        let q = Question::new(&candidate, kind)?;
        match ask(conf, &q).await {
            Ok(a) if !a.srv.is_empty() || !a.addrs.is_empty() => return Ok(a),
            Ok(_) => last = DnsError::NoSuchName(q.name()),
            Err(e @ (DnsError::NoSuchName(_) | DnsError::Server { .. })) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// One question to the servers in turn, `attempts` rounds.
async fn ask(conf: &ResolvConf, q: &Question) -> Result<Answer, DnsError> {
    for _ in 0..conf.attempts {
        for &server in &conf.servers {
            let id: u16 = rand::random();
            match ask_udp(server, id, q, conf.timeout).await {
                Err(DnsError::Truncated) => match ask_tcp(server, id, q, conf.timeout).await {
                    Err(DnsError::Timeout(_) | DnsError::Io(_) | DnsError::Malformed(_) | DnsError::Mismatch) => {}
                    done => return done,
                },
                Err(DnsError::Timeout(_) | DnsError::Io(_) | DnsError::Malformed(_)) => {}
                done => return done,
            }
        }
    }
    Err(DnsError::Timeout(q.name()))
}

async fn ask_udp(server: SocketAddr, id: u16, q: &Question, wait: Duration) -> Result<Answer, DnsError> {
    let io = |e: std::io::Error| DnsError::Io(format!("asking {server}: {e}"));
    let local: SocketAddr =
        if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().map_err(|_| DnsError::NoServers)?;
    let socket = tokio::net::UdpSocket::bind(local).await.map_err(io)?;
    socket.connect(server).await.map_err(io)?;
    socket.send(&encode_query(id, q)).await.map_err(io)?;
    let deadline = tokio::time::Instant::now() + wait;
    let mut buf = vec![0u8; usize::from(UDP_PAYLOAD)];
    loop {
        let n = match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
            Ok(r) => r.map_err(io)?,
            Err(_) => return Err(DnsError::Timeout(q.name())),
        };
        match parse_response(&buf[..n], id, q) {
            // Someone else's answer (or a forgery without the id): wait on.
            Err(DnsError::Mismatch) => continue,
            done => return done,
        }
    }
}

async fn ask_tcp(server: SocketAddr, id: u16, q: &Question, wait: Duration) -> Result<Answer, DnsError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let io = |e: std::io::Error| DnsError::Io(format!("asking {server} over TCP: {e}"));
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(server).await.map_err(io)?;
        let query = encode_query(id, q);
        let mut framed =
            u16::try_from(query.len()).map_err(|_| DnsError::Malformed("query too long"))?.to_be_bytes().to_vec();
        framed.extend_from_slice(&query);
        stream.write_all(&framed).await.map_err(io)?;
        let len = usize::from(stream.read_u16().await.map_err(io)?);
        let mut msg = vec![0u8; len];
        stream.read_exact(&mut msg).await.map_err(io)?;
        parse_response(&msg, id, q)
    };
    tokio::time::timeout(wait, exchange).await.unwrap_or_else(|_| Err(DnsError::Timeout(q.name())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &str, kind: RecordType) -> Question {
        Question::new(name, kind).unwrap()
    }

    /// A response to `query` with the given answer records appended raw.
    fn respond(query: &[u8], q: &Question, an: u16, ar: u16, records: &[u8]) -> Vec<u8> {
        let mut m = query[..12 + q.wire_len()].to_vec();
        m[2] |= 0x80;
        m[6..8].copy_from_slice(&an.to_be_bytes());
        m[10..12].copy_from_slice(&ar.to_be_bytes());
        m.extend_from_slice(records);
        m
    }

    fn record(owner: &[u8], rtype: u16, data: &[u8]) -> Vec<u8> {
        let mut r = owner.to_vec();
        r.extend_from_slice(&rtype.to_be_bytes());
        r.extend_from_slice(&CLASS_IN.to_be_bytes());
        r.extend_from_slice(&[0, 0, 0, 30]);
        r.extend_from_slice(&u16::try_from(data.len()).unwrap().to_be_bytes());
        r.extend_from_slice(data);
        r
    }

    fn srv(port: u16, target: &[u8]) -> Vec<u8> {
        let mut d = vec![0, 10, 0, 5];
        d.extend_from_slice(&port.to_be_bytes());
        d.extend_from_slice(target);
        d
    }

    #[test]
    fn an_srv_answer_with_compressed_names_and_additional_addresses_is_read_whole() {
        let question = q("_vigil._udp.vigil.default.svc.", RecordType::Srv);
        let query = encode_query(7, &question);
        // Owner: a pointer to the question's name at offset 12. Targets:
        // "a" and "b" then a pointer to "vigil.default.svc." (offset 12 +
        // 1+6 + 1+4 = 24).
        let mut recs = Vec::new();
        recs.extend(record(&[0xc0, 12], 33, &srv(7946, &[1, b'a', 0xc0, 24])));
        recs.extend(record(&[0xc0, 12], 33, &srv(7947, &[1, b'b', 0xc0, 24])));
        recs.extend(record(&[1, b'a', 0xc0, 24], 1, &[10, 0, 0, 1]));
        recs.extend(record(&[1, b'b', 0xc0, 24], 28, &Ipv6Addr::LOCALHOST.octets()));
        let msg = respond(&query, &question, 2, 2, &recs);
        let a = parse_response(&msg, 7, &question).unwrap();
        assert_eq!(a.srv.len(), 2);
        assert_eq!(a.srv[0], SrvTarget { priority: 10, weight: 5, port: 7946, target: "a.vigil.default.svc.".into() });
        assert_eq!(a.srv[1].target, "b.vigil.default.svc.");
        assert_eq!(a.extra["a.vigil.default.svc."], [IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);
        assert_eq!(a.extra["b.vigil.default.svc."], [IpAddr::V6(Ipv6Addr::LOCALHOST)]);
        assert!(a.addrs.is_empty());
    }

    #[test]
    fn addresses_through_a_cname_answer_the_question() {
        let question = q("seed.example.", RecordType::A);
        let query = encode_query(9, &question);
        let mut recs = record(&[0xc0, 12], TYPE_CNAME, &[4, b'h', b'o', b's', b't', 0xc0, 17]);
        // The CNAME's data starts 12 bytes into its record (owner pointer,
        // type, class, ttl, length), which starts after the question.
        let host_at = u8::try_from(12 + question.wire_len() + 12).unwrap();
        recs.extend(record(&[0xc0, host_at], 1, &[192, 0, 2, 7]));
        let msg = respond(&query, &question, 2, 0, &recs);
        let a = parse_response(&msg, 9, &question).unwrap();
        assert_eq!(a.addrs, [IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))]);
    }

    #[test]
    fn hostile_answers_are_refused_with_their_reason() {
        let question = q("x.example.", RecordType::Srv);
        let query = encode_query(1, &question);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            // A pointer to itself, and one forward.
            (respond(&query, &question, 1, 0, &[0xc0, 28]), "does not point back"),
            (respond(&query, &question, 1, 0, &[0xc0, 60]), "does not point back"),
            // A record claiming more data than the message holds.
            (respond(&query, &question, 1, 0, &[0xc0, 12, 0, 33, 0, 1, 0, 0, 0, 0, 0xff, 0xff]), "past the message"),
            // 65535 answers announced, none present.
            (respond(&query, &question, 0xffff, 0, &[]), "past the message"),
            // A reserved label type.
            (respond(&query, &question, 1, 0, &[0x80]), "label type"),
            // An A record of 5 bytes.
            (respond(&query, &question, 1, 0, &record(&[0xc0, 12], 1, &[1, 2, 3, 4, 5])), "wrong length"),
        ];
        for (msg, want) in cases {
            let err = parse_response(&msg, 1, &question).unwrap_err().to_string();
            assert!(err.contains(want), "{err} (wanted {want})");
        }
        // A chain of backward pointers longer than the limit: each points
        // to the one before it, the first to a root label.
        let mut msg = respond(&query, &question, 1, 0, &[]);
        let mut previous = msg.len();
        msg.push(0);
        for _ in 0..40 {
            let here = msg.len();
            msg.extend_from_slice(&(0xc000 | u16::try_from(previous).unwrap()).to_be_bytes());
            previous = here;
        }
        let mut r = Reader { msg: &msg, at: previous };
        assert!(r.name().unwrap_err().to_string().contains("too many compression pointers"));
        // Within the limit, the same chain reads as the root.
        let mut r = Reader { msg: &msg, at: previous - 2 * 9 };
        assert_eq!(r.name().unwrap(), ".");
        // Another id or a query (no response bit): not ours.
        let mut other = respond(&query, &question, 0, 0, &[]);
        assert_eq!(parse_response(&other, 2, &question), Err(DnsError::Mismatch));
        other[2] &= 0x7f;
        assert_eq!(parse_response(&other, 1, &question), Err(DnsError::Mismatch));
        // Truncation and server errors.
        let mut tc = respond(&query, &question, 0, 0, &[]);
        tc[2] |= 0x02;
        assert_eq!(parse_response(&tc, 1, &question), Err(DnsError::Truncated));
        let mut fail = respond(&query, &question, 0, 0, &[]);
        fail[3] = 2;
        assert_eq!(parse_response(&fail, 1, &question), Err(DnsError::Server { name: "x.example.".into(), rcode: 2 }));
    }

    #[test]
    fn every_prefix_of_a_good_answer_is_an_error_not_a_panic() {
        let question = q("_vigil._udp.vigil.default.svc.", RecordType::Srv);
        let query = encode_query(7, &question);
        let recs = record(&[0xc0, 12], 33, &srv(7946, &[1, b'a', 0xc0, 24]));
        let msg = respond(&query, &question, 1, 0, &recs);
        assert!(parse_response(&msg, 7, &question).is_ok());
        for cut in 0..msg.len() {
            assert!(parse_response(&msg[..cut], 7, &question).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn names_the_wire_cannot_carry_are_refused_before_anything_is_sent() {
        for (name, why) in [
            ("", "empty"),
            ("a..b", "empty label"),
            (&"x".repeat(64), "63 bytes"),
            ("bad name.example", "letters, digits"),
            (&["abcdefgh"; 30].join("."), "255 bytes"),
        ] {
            let err = Question::new(name, RecordType::Srv).unwrap_err().to_string();
            assert!(err.contains(why), "{name}: {err}");
        }
        assert_eq!(q("Vigil.Example", RecordType::A).name(), "vigil.example.");
    }

    #[test]
    fn relative_names_go_through_the_search_list_by_ndots() {
        let conf = ResolvConf::parse(
            "# comment\nnameserver 10.96.0.10\nnameserver fe80::1%eth0\nnameserver ::1\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5 timeout:1 attempts:3\n",
        );
        assert_eq!(conf.servers, ["10.96.0.10:53".parse().unwrap(), "[::1]:53".parse().unwrap()]);
        assert_eq!((conf.ndots, conf.timeout, conf.attempts), (5, Duration::from_secs(1), 3));
        assert_eq!(
            conf.candidates("_vigil._udp.vigil"),
            ["_vigil._udp.vigil.ns.svc.cluster.local.", "_vigil._udp.vigil.svc.cluster.local.", "_vigil._udp.vigil."]
        );
        assert_eq!(conf.candidates("vigil.example."), ["vigil.example."]);
        let plain = ResolvConf::parse("nameserver 192.0.2.1\nsearch corp\n");
        assert_eq!(plain.candidates("a.b"), ["a.b.", "a.b.corp."]);
    }

    /// A name server on loopback that answers each query with the
    /// datagrams a closure makes of it, in order.
    async fn server(answer: impl Fn(&[u8]) -> Vec<Vec<u8>> + Send + 'static) -> SocketAddr {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 512];
            while let Ok((n, from)) = socket.recv_from(&mut buf).await {
                for reply in answer(&buf[..n]) {
                    let _ = socket.send_to(&reply, from).await;
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_forged_answer_with_another_id_is_ignored_and_the_real_one_taken() {
        let question = q("_vigil._udp.example.", RecordType::Srv);
        let q2 = question.clone();
        // First an answer with another id pointing elsewhere (a blind
        // forger's guess), then the real one.
        let addr = server(move |query| {
            let id = u16::from_be_bytes([query[0], query[1]]);
            let mut forged = respond(query, &q2, 1, 0, &record(&[0xc0, 12], 33, &srv(666, &[1, b'f', 0xc0, 24])));
            forged[0..2].copy_from_slice(&id.wrapping_add(1).to_be_bytes());
            let real = respond(query, &q2, 1, 0, &record(&[0xc0, 12], 33, &srv(7946, &[1, b'n', 0xc0, 24])));
            vec![forged, real]
        })
        .await;
        let conf = ResolvConf { servers: vec![addr], ..ResolvConf::default() };
        let a = lookup(&conf, "_vigil._udp.example.", RecordType::Srv).await.unwrap();
        assert_eq!(a.srv.len(), 1);
        assert_eq!((a.srv[0].target.as_str(), a.srv[0].port), ("n.example.", 7946));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_server_times_out_after_every_attempt() {
        let addr = server(|_| Vec::new()).await;
        let conf =
            ResolvConf { servers: vec![addr], attempts: 2, timeout: Duration::from_secs(2), ..ResolvConf::default() };
        let started = tokio::time::Instant::now();
        let err = lookup(&conf, "quiet.example.", RecordType::Srv).await.unwrap_err();
        assert_eq!(err, DnsError::Timeout("quiet.example.".into()));
        assert_eq!(started.elapsed(), Duration::from_secs(4));
    }
}
