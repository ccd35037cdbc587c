//! One endpoint's proxy: accept versus's connections on 127.0.0.1, open
//! one to the endpoint for each, and run both directions through the
//! faults (`pipe.rs`); the connection-wide faults (slow-open, reset after
//! a delay) and the way a connection ends (FIN or RST) are decided here.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{sleep, sleep_until};

use super::conn::Conn;
use super::pipe::{self, End};
use super::spec::{Action, Dir, ResetAt};
use super::state::{ConnKey, Shared};

/// Chunks queued between a direction's reader and writer.
const QUEUE: usize = 64;

/// Accept connections on `listener` (port `proxy`) until the task is
/// dropped, each relayed to the first of `upstream` that accepts.
pub async fn serve(
    listener: TcpListener,
    proxy: u16,
    upstream: Vec<SocketAddr>,
    shared: Arc<Shared>,
) {
    let upstream: Rc<[SocketAddr]> = upstream.into();
    while let Ok((client, from)) = listener.accept().await {
        let key = ConnKey {
            proxy,
            client: from.port(),
        };
        tokio::task::spawn_local(connection(client, key, upstream.clone(), shared.clone()));
    }
}

/// One connection from versus, through the faults, to the endpoint.
async fn connection(
    mut client: TcpStream,
    key: ConnKey,
    upstream: Rc<[SocketAddr]>,
    shared: Arc<Shared>,
) {
    let conn = Conn::new(&shared, key);
    let _ = client.set_nodelay(true);
    if let Some((i, d)) = conn.find(Dir::Both, |a| match a {
        Action::SlowOpen(d) => Some(*d),
        _ => None,
    }) {
        conn.acted(i);
        sleep(d).await;
    }
    let mut server = None;
    for addr in upstream.iter() {
        if let Ok(s) = TcpStream::connect(addr).await {
            server = Some(s);
            break;
        }
    }
    // The endpoint refuses: versus sees its connection closed, as it
    // would see the endpoint's failure without the proxy.
    let Some(mut server) = server else { return };
    let _ = server.set_nodelay(true);
    let end = {
        let (mut client_read, mut client_write) = client.split();
        let (mut server_read, mut server_write) = server.split();
        let (up_tx, mut up_rx) = mpsc::channel(QUEUE);
        let (down_tx, mut down_rx) = mpsc::channel(QUEUE);
        let answers = conn.reads_http().then(|| down_tx.clone());
        let up = pipe::both(
            pipe::read(&mut client_read, &up_tx, &conn, Dir::Up, answers.as_ref()),
            pipe::write(&mut server_write, &mut up_rx, &conn, Dir::Up),
        );
        let down = pipe::both(
            pipe::read(&mut server_read, &down_tx, &conn, Dir::Down, None),
            pipe::write(&mut client_write, &mut down_rx, &conn, Dir::Down),
        );
        supervise(up, down, reset_timer(&conn)).await
    };
    if end == End::Reset {
        let _ = client.set_zero_linger();
    }
}

/// Wait for both directions to end by a close, or for either (or the
/// reset timer) to end the connection.
async fn supervise(
    up: impl std::future::Future<Output = End>,
    down: impl std::future::Future<Output = End>,
    timer: impl std::future::Future<Output = ()>,
) -> End {
    tokio::pin!(up, down, timer);
    let (mut up_done, mut down_done) = (false, false);
    while !(up_done && down_done) {
        tokio::select! {
            e = &mut up, if !up_done => match e {
                End::Eof => up_done = true,
                e => return e,
            },
            e = &mut down, if !down_done => match e {
                End::Eof => down_done = true,
                e => return e,
            },
            () = &mut timer => return End::Reset,
        }
    }
    End::Eof
}

/// `reset after DURATION`: resolves when the connection is to be reset:
/// the delay after it opened or, when the fault's span opens later,
/// after the span opened; never when the connection did not draw the
/// fault or the span has closed by then.
async fn reset_timer(conn: &Conn<'_>) {
    let due = conn
        .shared()
        .faults()
        .iter()
        .enumerate()
        .find_map(|(i, f)| match f.action {
            Action::Reset(ResetAt::Delay(d)) if conn.drew(i) => Some((i, d)),
            _ => None,
        });
    let Some((i, delay)) = due else {
        return std::future::pending().await;
    };
    if !conn.shared().on(i) {
        // Not on yet: wait for the run's clock, then for the span.
        let opens = loop {
            match conn.opens_at(i) {
                Some(at) => break at,
                None => sleep(Duration::from_millis(10)).await,
            }
        };
        sleep_until(opens.into()).await;
    }
    sleep(delay).await;
    if !conn.shared().on(i) {
        return std::future::pending().await;
    }
    conn.acted(i);
}
