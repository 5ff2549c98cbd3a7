//! [`MemberDiscover`]: the endpoints of a service, discovered from vigil
//! membership by a tag (feature `cluster`).
//!
//! A member whose tags match a [`Selector`] (`service=billing`) is an
//! endpoint: inserted when it comes up (or its tags come to match),
//! removed when it dies, leaves, is reaped, or its tags stop matching. An
//! endpoint out of rotation stays inserted (the layer holds it back), so
//! the balancer keeps its load estimate.
//!
//! Where to reach an endpoint comes from its tags: `port` (required: a
//! member without a valid one is skipped) on the member's own IP address,
//! and `scheme` (`http`, the default, or `https`; a member with another is
//! skipped).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

use tower::discover::Change;
use vigil_net::{Cluster, Event, Status, Tags};

/// The tag that names where an endpoint listens.
pub const PORT_TAG: &str = "port";
/// The tag that names its scheme.
pub const SCHEME_TAG: &str = "scheme";

/// Which members are endpoints: those whose tag `key` has the value
/// `value`. Written `key=value`.
///
/// ```
/// use vigil_tower::Selector;
///
/// let s: Selector = "service=billing".parse()?;
/// assert_eq!((s.key.as_str(), s.value.as_str()), ("service", "billing"));
/// assert_eq!(
///     "billing".parse::<Selector>().unwrap_err().to_string(),
///     "'billing' is not a selector: write key=value, as service=billing"
/// );
/// # Ok::<(), vigil_tower::SelectorError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// The tag's name.
    pub key: String,
    /// The value it must have.
    pub value: String,
}

impl Selector {
    /// Whether `tags` match.
    pub fn matches(&self, tags: &Tags) -> bool {
        tags.get(&self.key) == Some(self.value.as_str())
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// Text that is not a [`Selector`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError {
    /// The text as written.
    pub text: String,
}

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' is not a selector: write key=value, as service=billing", self.text.escape_debug())
    }
}

impl std::error::Error for SelectorError {}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Selector, SelectorError> {
        match text.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
                Ok(Selector { key: k.trim().to_owned(), value: v.trim().to_owned() })
            }
            _ => Err(SelectorError { text: text.to_owned() }),
        }
    }
}

/// A member that is an endpoint: its name, where to reach it, its tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member's name: the endpoint's key and its name to the source.
    pub name: Arc<str>,
    /// Where its service listens: the member's IP and its `port` tag.
    pub addr: SocketAddr,
    /// `http` or `https`, from its `scheme` tag.
    pub scheme: String,
    /// Its tags.
    pub tags: Tags,
}

impl Member {
    /// `scheme://ip:port`.
    ///
    /// ```
    /// use vigil_tower::discover::Member;
    ///
    /// let m = Member { name: "b-1".into(), addr: "[::1]:8080".parse().unwrap(), scheme: "http".into(), tags: Default::default() };
    /// assert_eq!(m.uri(), "http://[::1]:8080");
    /// ```
    pub fn uri(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// [`Member::uri`] as an [`http::Uri`].
    pub fn http_uri(&self) -> http::Uri {
        // The scheme is http or https and the authority an IP address and a
        // port: always a valid URI.
        self.uri().parse().expect("a scheme and a socket address make a valid URI")
    }

    /// The endpoint of a member with these tags at this gossip address, if
    /// it has a valid port tag.
    fn from_tags(name: &str, gossip: SocketAddr, tags: &Tags) -> Option<Member> {
        let port: u16 = tags.get(PORT_TAG)?.parse().ok().filter(|p| *p != 0)?;
        let scheme = tags.get(SCHEME_TAG).unwrap_or("http");
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let scheme = scheme.to_owned();
        Some(Member { name: Arc::from(name), addr: SocketAddr::new(gossip.ip(), port), scheme, tags: tags.clone() })
    }
}

/// The endpoints of one service, as a [`tower::discover::Discover`]
/// stream: each member inserted is turned into a service by the function
/// given (typically a client to [`Member::uri`], wrapped by
/// [`HealthLayer::endpoint`](crate::HealthLayer::endpoint)).
///
/// Changes not yet taken are kept one per member, the latest winning, so
/// however long the balancer goes without reading them (or however fast
/// tags flip), what waits is bounded by the number of members. Events the
/// member's stream skipped (a reader fallen behind) are made up for by
/// reading its whole view again.
///
/// Made inside a tokio runtime: a task follows the member's events, until
/// the member stops or the stream is dropped. The stream ends when the
/// member stops.
pub struct MemberDiscover<S> {
    shared: Arc<Mutex<Pending>>,
    make: Box<dyn FnMut(&Member) -> S + Send>,
}

/// Changes waiting for the balancer: per member, the latest (an endpoint
/// to insert, or `None` to remove).
#[derive(Debug, Default)]
struct Pending {
    changes: BTreeMap<Arc<str>, Option<Member>>,
    waker: Option<Waker>,
    ended: bool,
}

impl<S> fmt::Debug for MemberDiscover<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemberDiscover").finish_non_exhaustive()
    }
}

impl<S> MemberDiscover<S> {
    /// The members of `cluster` that `selector` matches, each made into a
    /// service by `make`.
    pub fn new(cluster: Arc<Cluster>, selector: Selector, make: impl FnMut(&Member) -> S + Send + 'static) -> Self {
        let shared = Arc::new(Mutex::new(Pending::default()));
        tokio::spawn(follow(cluster, selector, Arc::downgrade(&shared)));
        MemberDiscover { shared, make: Box::new(make) }
    }

    /// Changes waiting to be taken (at most one per member).
    pub fn waiting(&self) -> usize {
        lock(&self.shared).changes.len()
    }
}

fn lock(m: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S> futures_core::Stream for MemberDiscover<S> {
    type Item = Result<Change<Arc<str>, S>, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let next = {
            let mut p = lock(&this.shared);
            match p.changes.pop_first() {
                Some(change) => Some(change),
                None if p.ended => return Poll::Ready(None),
                None => {
                    p.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        };
        Poll::Ready(next.map(|(name, member)| {
            Ok(match member {
                Some(m) => Change::Insert(name, (this.make)(&m)),
                None => Change::Remove(name),
            })
        }))
    }
}

impl<S> Unpin for MemberDiscover<S> {}

/// What the follower believes the balancer should hold, and what it passes
/// on when that changes.
struct View {
    selector: Selector,
    inserted: HashMap<Arc<str>, Member>,
    /// name → gossip address, for tags that arrive after the member.
    gossip: HashMap<String, SocketAddr>,
    shared: Weak<Mutex<Pending>>,
}

impl View {
    /// Sets what `name` should be; `false` once the stream is gone.
    fn set(&mut self, name: &str, member: Option<Member>) -> bool {
        let Some(shared) = self.shared.upgrade() else { return false };
        let (key, change) = match member {
            Some(m) => {
                if self.inserted.get(name) == Some(&m) {
                    return true;
                }
                self.inserted.insert(m.name.clone(), m.clone());
                (m.name.clone(), Some(m))
            }
            None => match self.inserted.remove_entry(name) {
                Some((k, _)) => (k, None),
                None => return true,
            },
        };
        let mut p = lock(&shared);
        p.changes.insert(key, change);
        if let Some(w) = p.waker.take() {
            w.wake();
        }
        true
    }

    /// The endpoint `name` at `addr` with `tags` is, if it matches.
    fn endpoint(&self, name: &str, addr: SocketAddr, tags: &Tags) -> Option<Member> {
        self.selector.matches(tags).then(|| Member::from_tags(name, addr, tags)).flatten()
    }

    /// Takes the member's whole view again: every live member that matches
    /// is inserted, every other removed.
    async fn resync(&mut self, cluster: &Cluster) -> bool {
        let Ok(members) = cluster.members().await else { return false };
        let mut live = HashMap::new();
        for m in members {
            self.gossip.insert(m.id.name.clone(), m.addr);
            if matches!(m.status, Status::Alive | Status::Suspect) {
                live.insert(m.id.name.clone(), self.endpoint(&m.id.name, m.addr, &m.tags));
            }
        }
        let gone: Vec<Arc<str>> = self.inserted.keys().filter(|k| !live.contains_key(&***k)).cloned().collect();
        for name in gone {
            if !self.set(&name, None) {
                return false;
            }
        }
        for (name, member) in live {
            if !self.set(&name, member) {
                return false;
            }
        }
        true
    }
}

/// Turns the member's view and events into insertions and removals. The
/// events are read from before the view is, so that nothing falls between.
async fn follow(cluster: Arc<Cluster>, selector: Selector, shared: Weak<Mutex<Pending>>) {
    let mut events = cluster.events();
    let mut view = View { selector, inserted: HashMap::new(), gossip: HashMap::new(), shared };
    let mut missed = 0;
    let mut going = view.resync(&cluster).await;
    while going {
        let Some(e) = events.next().await else { break };
        going = match e.event {
            Event::Up { id, addr, tags } => {
                view.gossip.insert(id.name.clone(), addr);
                let member = view.endpoint(&id.name, addr, &tags);
                view.set(&id.name, member)
            }
            Event::TagsUpdated { id, tags } => match view.gossip.get(&id.name) {
                Some(&addr) => {
                    let member = view.endpoint(&id.name, addr, &tags);
                    view.set(&id.name, member)
                }
                None => true,
            },
            Event::Dead { id, .. } | Event::Left { id } => view.set(&id.name, None),
            Event::Reaped { id, .. } => {
                view.gossip.remove(&id.name);
                view.set(&id.name, None)
            }
            _ => view.shared.strong_count() > 0,
        };
        if going && events.missed() > missed {
            missed = events.missed();
            going = view.resync(&cluster).await;
        }
    }
    if let Some(shared) = view.shared.upgrade() {
        let mut p = lock(&shared);
        p.ended = true;
        if let Some(w) = p.waker.take() {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_needs_a_valid_port_tag() {
        let gossip: SocketAddr = "10.0.0.7:7946".parse().unwrap();
        let tags = |pairs: &[(&str, &str)]| Tags::new(pairs.iter().copied()).unwrap();
        let m = Member::from_tags("b", gossip, &tags(&[("port", "8080"), ("scheme", "https")])).unwrap();
        assert_eq!(m.uri(), "https://10.0.0.7:8080");
        for bad in ["0", "65536", "http", ""] {
            assert!(Member::from_tags("b", gossip, &tags(&[("port", bad)])).is_none(), "port {bad:?}");
        }
        assert!(Member::from_tags("b", gossip, &tags(&[])).is_none());
        assert!(Member::from_tags("b", gossip, &tags(&[("port", "80"), ("scheme", "ftp")])).is_none());
        let v6 = Member::from_tags("b", "[fe80::1]:7946".parse().unwrap(), &tags(&[("port", "80")])).unwrap();
        assert_eq!(v6.http_uri().to_string(), "http://[fe80::1]:80/");
    }

    #[test]
    fn selectors_read_key_equals_value() {
        assert!("=x".parse::<Selector>().is_err());
        assert!("x=".parse::<Selector>().is_err());
        let s: Selector = " service = billing ".parse().unwrap();
        assert_eq!(s.to_string(), "service=billing");
    }
}
