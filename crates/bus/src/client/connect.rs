//! Connection setup: a [`Client`] over a byte stream, its two halves, an in-process [`Link`]
//! or a Unix-domain socket, and the hello that names the client and refuses a router built
//! from another contract.
//!
//! It starts the connection's reader and writer; what they do afterwards is theirs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use super::connection::{CloseOnDrop, Connection, ConnectionState, send_command, write_loop};
use super::inbound::read_loop;
use super::{Client, ClientOptions, HelloInfo, Peer, into_map};
use crate::error::BusError;
use crate::link::{FramedSink, FramedSource, Link, Sink, Source};
use crate::outbox::Outbox;
use crate::wire::contract_digest;

impl Client {
    /// Says hello over `stream` and checks the router's contract digest.
    ///
    /// # Errors
    ///
    /// [`BusError::ContractMismatch`] for a router built from another contract, the router's
    /// refusal of the hello, or [`BusError::RouterLost`].
    pub async fn connect<S>(stream: S, options: ClientOptions) -> Result<Self, BusError>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        Self::connect_halves(reader, writer, options).await
    }

    /// As [`Client::connect`], given the stream's two halves.
    ///
    /// # Errors
    ///
    /// As [`Client::connect`].
    pub async fn connect_halves<R, W>(
        reader: R,
        writer: W,
        options: ClientOptions,
    ) -> Result<Self, BusError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::connect_io(FramedSource::new(reader), FramedSink::new(writer), options).await
    }

    /// Connects over an in-process [`Link`] from [`crate::Router::connect_link_as`]: the same
    /// client, with envelopes handed over as values rather than framed JSON.
    ///
    /// # Errors
    ///
    /// As [`Client::connect`].
    pub async fn connect_link(link: Link, options: ClientOptions) -> Result<Self, BusError> {
        let (source, sink) = link.split(true);
        Self::connect_io(source, sink, options).await
    }

    async fn connect_io(
        source: impl Source,
        sink: impl Sink,
        options: ClientOptions,
    ) -> Result<Self, BusError> {
        let connection = Arc::new(Connection {
            outbox: Outbox::new(),
            state: Mutex::new(ConnectionState {
                next_call: 0,
                pending: BTreeMap::new(),
                calls: BTreeMap::new(),
                services: BTreeMap::new(),
                subs: BTreeMap::new(),
                max_sub: 0,
                early: BTreeMap::new(),
                lost: None,
                next_local: 0,
            }),
            store_root: options.store_root,
            local: Mutex::new(BTreeMap::new()),
        });
        tokio::spawn(write_loop(sink, Arc::clone(&connection)));
        tokio::spawn(read_loop(source, Arc::clone(&connection)));
        let life = Arc::new(CloseOnDrop(Arc::clone(&connection)));
        let identity = Peer {
            client_id: options.client_id.as_str().into(),
            incarnation: options.incarnation,
        };
        let body = json!({
            "clientId": options.client_id.as_str(),
            "clientIncarnation": options.incarnation.to_string(),
            "supportedMajors": [1],
        });
        let value = send_command(&connection, "bus.hello", into_map(body), Vec::new()).await?;
        let digest = value
            .get("contractDigest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let ours = contract_digest().hex();
        if digest != ours {
            connection.outbox.kill();
            return Err(BusError::ContractMismatch {
                router: digest.to_owned(),
                client: ours,
            });
        }
        let text = |k: &str| {
            value
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let hello = HelloInfo {
            router_id: text("routerId"),
            connection_id: text("connectionId"),
            limits: value
                .get("limits")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            identity,
        };
        Ok(Self {
            connection,
            _closer: life,
            local_store: Arc::default(),
            hello: Arc::new(hello),
        })
    }

    /// Connects to a router's Unix-domain socket.
    ///
    /// # Errors
    ///
    /// [`BusError::Connect`], then as [`Client::connect`].
    pub async fn connect_unix(path: &Path, options: ClientOptions) -> Result<Self, BusError> {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        let (reader, writer) =
            crate::uds::split_tokio(stream).map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        Self::connect_halves(reader, writer, options).await
    }
}
