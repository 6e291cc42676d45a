//! A small HTTP/1.1 server (hyper) for the Prometheus endpoint and the AdminServer: GET and
//! HEAD only, a bounded number of connections, a bounded time to send the request head, and
//! optionally HTTPS (the AdminServer's `admin.forceHttps` / `admin.portUnification`).

use crate::limits::{HTTP_CONNECTIONS_MAX, HTTP_HEADER_READ_TIMEOUT};
use crate::tls::{self, ServerTls};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// An answer: status, content type, body.
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    pub fn new(status: StatusCode, content_type: &'static str, body: String) -> Self {
        Self {
            status,
            content_type,
            body,
        }
    }

    pub fn not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found\n".into(),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "method not allowed\n".into(),
        )
    }
}

/// Whether a listener speaks HTTPS.
#[derive(Clone)]
pub enum Https {
    /// Plain HTTP only.
    Off,
    /// HTTPS only.
    Only(Arc<ServerTls>),
    /// Both on one port: a connection whose first byte starts a TLS record gets HTTPS.
    Unified(Arc<ServerTls>),
}

/// Serves `handler(path, query)` for GET and HEAD until the task is aborted.
pub async fn serve<H, F>(listener: TcpListener, what: &'static str, https: Https, handler: H)
where
    H: Fn(HttpRequest) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let handler = Arc::new(handler);
    let permits = Arc::new(Semaphore::new(HTTP_CONNECTIONS_MAX));
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(what, error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let (handler, https) = (handler.clone(), https.clone());
        tokio::spawn(async move {
            match tls_for(&https, &stream, what, peer).await {
                Ok(None) => serve_stream(stream, what, peer, handler).await,
                Ok(Some(tls)) => {
                    if let Ok((stream, _)) = tls::accept(&tls, stream, peer).await {
                        serve_stream(stream, what, peer, handler).await;
                    }
                }
                Err(()) => {}
            }
            drop(permit);
        });
    }
}

/// The TLS a new connection gets (`None`: plain HTTP); `Err` when it sent nothing in time.
async fn tls_for(
    https: &Https,
    stream: &tokio::net::TcpStream,
    what: &'static str,
    peer: SocketAddr,
) -> Result<Option<Arc<ServerTls>>, ()> {
    match https {
        Https::Off => Ok(None),
        Https::Only(tls) => Ok(Some(tls.clone())),
        Https::Unified(tls) => {
            let mut first = [0u8; 1];
            match tokio::time::timeout(HTTP_HEADER_READ_TIMEOUT, stream.peek(&mut first)).await {
                Ok(Ok(1)) if first[0] == tls::TLS_HANDSHAKE_RECORD_TYPE => Ok(Some(tls.clone())),
                Ok(Ok(1)) => Ok(None),
                Ok(_) => Err(()),
                Err(_) => {
                    tracing::debug!(what, %peer, "nothing sent in time; closing the connection");
                    Err(())
                }
            }
        }
    }
}

/// What a handler is asked: the method that matters (POST changes state, GET and HEAD only
/// read), the path and the query.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub post: bool,
    pub path: String,
    pub query: Option<String>,
}

async fn serve_stream<S, H, F>(stream: S, what: &'static str, peer: SocketAddr, handler: Arc<H>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Fn(HttpRequest) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let service =
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let handler = handler.clone();
            async move { Ok::<_, std::convert::Infallible>(answer(&*handler, request).await) }
        });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HTTP_HEADER_READ_TIMEOUT)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    if let Err(e) = connection.await {
        tracing::debug!(what, %peer, error = %e, "HTTP connection ended");
    }
}

async fn answer<H, F>(
    handler: &H,
    request: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>>
where
    H: Fn(HttpRequest) -> F,
    F: Future<Output = Reply>,
{
    let method = request.method();
    let reply = if method == Method::GET || method == Method::HEAD || method == Method::POST {
        // A POST's body is not read: the commands that take POST act on their URL alone.
        let uri = request.uri();
        handler(HttpRequest {
            post: method == Method::POST,
            path: uri.path().to_string(),
            query: uri.query().map(String::from),
        })
        .await
    } else {
        // ZooKeeper's Jetty refuses TRACE and its servlets answer GET and POST.
        Reply::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "method not allowed\n".into(),
        )
    };
    let body = if request.method() == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(reply.body)
    };
    let mut response = hyper::Response::new(Full::new(body));
    *response.status_mut() = reply.status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(reply.content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// Binds an HTTP listener, naming what it is for in the error.
pub async fn bind(address: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(address).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
