//! The `null` target: a server that answers every request at once with success and no work.
//! Whatever the generator reaches against it is the ceiling of the generator plus the kernel on
//! this machine; meerkat is reported as a fraction of it.

use proto::jute::{Record, Writer};
use proto::{ConnectResponse, ReplyHeader};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const FRAME_MAX: usize = 1 << 20;

pub struct NullServer {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl NullServer {
    pub async fn start() -> anyhow::Result<NullServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let mut next_session = 1i64;
            while let Ok((stream, _)) = listener.accept().await {
                next_session += 1;
                tokio::spawn(serve(stream, next_session));
            }
        });
        Ok(NullServer { addr, task })
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, session_id: i64) {
    let _ = stream.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut out: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut connected = false;
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while buf.len() - at >= 4 {
            let len = i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let Some(len) = usize::try_from(len).ok().filter(|&l| l <= FRAME_MAX) else {
                return;
            };
            if buf.len() - at - 4 < len {
                break;
            }
            let payload = &buf[at + 4..at + 4 + len];
            let mut w = Writer::wrap(std::mem::take(&mut out));
            let start = w.len();
            w.write_i32(0);
            if connected {
                let xid = payload
                    .get(..4)
                    .map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                ReplyHeader {
                    xid,
                    zxid: 0,
                    err: 0,
                }
                .encode(&mut w);
            } else {
                connected = true;
                ConnectResponse {
                    protocol_version: 0,
                    timeout_ms: 30_000,
                    session_id,
                    passwd: vec![0; 16],
                    read_only: Some(false),
                }
                .encode(&mut w);
            }
            let body = (w.len() - start - 4) as i32;
            w.patch_i32(start, body);
            out = w.into_inner();
            at += 4 + len;
        }
        buf.drain(..at);
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}
