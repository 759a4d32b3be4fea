//! Sending one checked request: connect to the address that was checked,
//! speak TLS for `https` with the origin's name, add the operator's secret
//! headers, and count the response bytes against the call's allowance.

use super::Usage;
use bytes::Bytes;
use http::Request;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

/// Connect timeout when the guest sets none; the call's deadline still
/// bounds it.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The response and the task driving its connection.
pub type Sent = (http::Response<WasiBody>, Box<dyn Future<Output = Result<(), Error>> + Send>);

trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// Where to connect and how to present the origin over TLS.
pub struct Target {
    /// Checked addresses, tried in order.
    pub addrs: Vec<SocketAddr>,
    /// `Some(name)` for `https`: the TLS server name.
    pub tls_name: Option<rustls::pki_types::ServerName<'static>>,
}

/// Send `request` (already checked, secrets added) to `target`.
pub async fn send(
    target: Target,
    mut request: Request<WasiBody>,
    options: Option<RequestOptions>,
    usage: Arc<Usage>,
    max_response_bytes: u64,
) -> Result<Sent, Error> {
    let connect_timeout = options.and_then(|o| o.connect_timeout).unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let tcp = connect(&target.addrs, connect_timeout).await?;
    let stream: Box<dyn Stream> = match target.tls_name {
        None => Box::new(tcp),
        Some(name) => {
            let config = crate::tls::client_config().map_err(|why| Error::InternalError(Some(why)))?;
            let connector = tokio_rustls::TlsConnector::from(config);
            Box::new(connector.connect(name, tcp).await.map_err(Error::Tls)?)
        }
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect_timeout,
        hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    let conn = wasmtime_wasi::runtime::spawn(async move { conn.await.map_err(Error::from) });

    // The request line carries only the path: the origin is in `Host`.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| Error::HttpRequestUriInvalid)?;

    let response = match options.and_then(|o| o.first_byte_timeout) {
        Some(limit) => tokio::time::timeout(limit, sender.send_request(request))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)??,
        None => sender.send_request(request).await?,
    };
    let response = response
        .map(|incoming| CappedBody { inner: incoming, usage, max: max_response_bytes, exceeded: false }.boxed_unsync());
    Ok((response, Box::new(conn)))
}

async fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, Error> {
    let mut last = None;
    for addr in addrs {
        match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(err)) => last = Some(Error::Connect(err)),
            Err(_) => last = Some(Error::ConnectionTimeout),
        }
    }
    Err(last.unwrap_or(Error::DestinationNotFound))
}

/// A response body that stops after the call's allowance of bytes: the
/// frame that crosses it is cut, the next poll is an error the guest sees
/// as `HTTP-response-body-size`.
struct CappedBody {
    inner: hyper::body::Incoming,
    usage: Arc<Usage>,
    max: u64,
    exceeded: bool,
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.exceeded {
            return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(self.max)))));
        }
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(Error::from(err)))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let Some(data) = frame.data_ref() else { return Poll::Ready(Some(Ok(frame))) };
        let len = data.len() as u64;
        let before = self.usage.response_bytes.fetch_add(len, Ordering::Relaxed);
        if before.saturating_add(len) <= self.max {
            return Poll::Ready(Some(Ok(frame)));
        }
        self.exceeded = true;
        let keep = self.max.saturating_sub(before);
        match frame.into_data() {
            Ok(mut data) if keep > 0 => {
                data.truncate(usize::try_from(keep).unwrap_or(usize::MAX));
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            _ => Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(self.max))))),
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.exceeded && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
