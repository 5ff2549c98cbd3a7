//! What the tests on real sockets share: waiting for every member's view,
//! counting the live, and waiting for an event.

use std::time::Duration;

use tokio::time::{Instant, sleep};
use vigil_membership::{Event, MemberView, Status};
use vigil_net::{Cluster, Events};

/// Waits until `check` holds for every member, or `bound` passes.
pub(crate) async fn until_all(members: &[Cluster], bound: Duration, check: impl Fn(&[MemberView]) -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        let mut all = true;
        for m in members {
            if !check(&m.members().await.expect("running")) {
                all = false;
                break;
            }
        }
        if all {
            return true;
        }
        sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The members a view holds alive.
pub(crate) fn alive(views: &[MemberView]) -> usize {
    views.iter().filter(|v| v.status == Status::Alive).count()
}

/// The first event matching `want` within `bound`.
pub(crate) async fn event(events: &mut Events, bound: Duration, want: impl Fn(&Event) -> bool) -> Option<Event> {
    let deadline = Instant::now() + bound;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, events.next()).await {
            Ok(Some(e)) if want(&e.event) => return Some(e.event),
            Ok(Some(_)) => {}
            _ => return None,
        }
    }
}
