//! The API's listener: at most [`MAX_CONNECTIONS`] connections at once, so
//! clients that open connections and never finish a request (or follow the
//! event stream by the thousand) cannot take the process's file
//! descriptors. Beyond the limit, new connections wait in the kernel's
//! backlog until one closes.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 256;

/// A listener that holds a slot per open connection.
#[derive(Debug)]
pub(crate) struct Bounded {
    inner: TcpListener,
    slots: Arc<Semaphore>,
}

impl Bounded {
    pub(crate) fn new(inner: TcpListener) -> Bounded {
        Bounded { inner, slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)) }
    }
}

/// A connection and its slot, released when it closes.
#[derive(Debug)]
pub(crate) struct Slot {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Bounded {
    type Io = Slot;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Slot, SocketAddr) {
        // The semaphore is never closed.
        let slot = self.slots.clone().acquire_owned().await.expect("the semaphore stays open");
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => return (Slot { stream, _slot: slot }, addr),
                // Out of descriptors, or a connection reset before it was
                // taken: wait a little and go on.
                Err(e) => {
                    tracing::debug!("HTTP accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsyncRead for Slot {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Slot {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
