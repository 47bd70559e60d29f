//! Connection-level limits the HTTP stack (hyper, axum-server) leaves to its user: a
//! connection on which no byte has moved either way for the idle timeout is closed, whatever
//! protocol it speaks (hyper bounds only the wait for an HTTP/1.1 request head).

use std::future::{Future, Ready};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum_server::accept::Accept;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Wraps every accepted TCP stream in [`Idle`] (and turns Nagle off: answers are written whole).
#[derive(Clone, Copy, Debug)]
pub(super) struct IdleAcceptor {
    idle: Duration,
}

impl IdleAcceptor {
    /// Closes connections idle for `idle`.
    pub(super) fn new(idle: Duration) -> Self {
        Self { idle }
    }
}

impl<S> Accept<TcpStream, S> for IdleAcceptor {
    type Stream = Idle<TcpStream>;
    type Service = S;
    type Future = Ready<io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        // Without TCP_NODELAY a small answer can wait for the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        std::future::ready(Ok((Idle::new(stream, self.idle), service)))
    }
}

/// A stream that fails its pending read or write with `TimedOut` once nothing has been read
/// or written for its idle time, which ends the connection serving it.
#[derive(Debug)]
pub(super) struct Idle<I> {
    inner: I,
    idle: Duration,
    /// When a byte last moved.
    last: Instant,
    /// Armed for `last + idle` at most; re-armed lazily when it fires, so a busy connection
    /// pays a clock read per read or write, not a timer update.
    timer: Pin<Box<Sleep>>,
}

impl<I> Idle<I> {
    fn new(inner: I, idle: Duration) -> Self {
        let last = Instant::now();
        Self {
            inner,
            idle,
            last,
            timer: Box::pin(tokio::time::sleep_until(last + idle)),
        }
    }

    fn moved(&mut self) {
        self.last = Instant::now();
    }

    /// Ready once the stream has been idle for its whole idle time.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let due = self.last + self.idle;
            if due <= Instant::now() {
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the connection was idle for too long",
                ));
            }
            self.timer.as_mut().reset(due);
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Idle<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => this.poll_idle(cx).map(Err),
        }
    }
}

impl<I: AsyncWrite + Unpin> Idle<I> {
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match written {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.moved();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // A client that stops reading holds the connection as surely as one that stops
            // writing.
            Poll::Pending => self.poll_idle(cx).map(Err),
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Idle<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
