//! The ways into a router: any byte stream (split or whole, bound to one client id or not),
//! the in-memory byte pipe, the in-process envelope [`Link`], and Unix-domain sockets (a
//! private directory, a 0600 socket, an accept loop until shutdown).
//!
//! Every transport ends in the same connection code; nothing here knows a command.

use std::path::Path;
use std::sync::Arc;

use flysim_types::Id;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Router;
use super::connection::serve_connection;
use crate::error::BusError;
use crate::link::{FramedSink, FramedSource, Link, Sink, Source};
use crate::store::create_private_dir;

impl Router {
    /// Serves one connection over any byte stream (the in-memory and Unix transports use this).
    pub fn serve<S>(&self, stream: S)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        self.serve_halves(reader, writer);
    }

    /// Opens an in-process connection that carries envelopes as values (see [`Link`]) and
    /// returns the client's end, for [`crate::Client::connect_link`]. Its hello must name
    /// `client_id`, as with [`Router::connect_in_memory_as`].
    #[must_use]
    pub fn connect_link_as(&self, client_id: Id) -> Link {
        let (client, router) = Link::pair();
        let (source, sink) = router.split(false);
        self.spawn_connection(source, sink, Some(client_id));
        client
    }

    /// Serves one connection given its two halves (a Unix stream splits without a lock).
    pub fn serve_halves<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.spawn_connection(FramedSource::new(reader), FramedSink::new(writer), None);
    }

    /// Serves one launcher-bound connection: its hello must name `client_id`, or it is refused
    /// with `NOT_AUTHORIZED` before anything is registered.
    pub fn serve_as<S>(&self, stream: S, client_id: Id)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        self.spawn_connection(
            FramedSource::new(reader),
            FramedSink::new(writer),
            Some(client_id),
        );
    }

    fn spawn_connection(&self, source: impl Source, sink: impl Sink, bound: Option<Id>) {
        let core = Arc::clone(&self.core);
        tokio::spawn(async move { serve_connection(core, source, sink, bound).await });
    }

    /// Opens an in-memory connection and returns the client's end (`buffer` bytes each way; a
    /// tiny buffer forces partial reads and writes). The hello may name any client id.
    #[must_use]
    pub fn connect_in_memory(&self, buffer: usize) -> tokio::io::DuplexStream {
        let (client, router) = tokio::io::duplex(buffer);
        self.serve(router);
        client
    }

    /// Opens an in-memory connection bound to `client_id` (what a launcher hands a worker).
    #[must_use]
    pub fn connect_in_memory_as(&self, buffer: usize, client_id: Id) -> tokio::io::DuplexStream {
        let (client, router) = tokio::io::duplex(buffer);
        self.serve_as(router, client_id);
        client
    }

    /// Binds a Unix-domain socket at `path` (its directory is created with mode 0700, the socket
    /// gets mode 0600) and serves every connection on it until shutdown.
    ///
    /// # Errors
    ///
    /// [`BusError::Connect`] when the socket cannot be bound, [`BusError::Store`] for its directory.
    pub fn listen_unix(&self, path: &Path) -> Result<(), BusError> {
        self.listen(path, None)
    }

    /// Binds a Unix-domain socket for one participant: every hello on it must name `client_id`
    /// (`NOT_AUTHORIZED` otherwise). A launcher gives each worker its own socket this way.
    ///
    /// # Errors
    ///
    /// As [`Router::listen_unix`].
    pub fn listen_unix_as(&self, path: &Path, client_id: Id) -> Result<(), BusError> {
        self.listen(path, Some(client_id))
    }

    fn listen(&self, path: &Path, bound: Option<Id>) -> Result<(), BusError> {
        use std::os::unix::fs::PermissionsExt as _;
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let listener =
            tokio::net::UnixListener::bind(path).map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| BusError::store("protect socket", path.to_owned(), e))?;
        let router = self.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                if router.lock().shut {
                    break;
                }
                let Ok((reader, writer)) = crate::uds::split_tokio(stream) else {
                    continue;
                };
                router.spawn_connection(
                    FramedSource::new(reader),
                    FramedSink::new(writer),
                    bound.clone(),
                );
            }
        });
        Ok(())
    }
}
