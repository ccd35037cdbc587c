//! The terminal is always put back. The dashboard switches to the
//! alternate screen and raw mode through a [`ScreenGuard`]; dropping it
//! restores both, and so does [`restore_terminal`], which a panic hook and
//! the second-signal exit call before the process goes. The state is a
//! process-wide atomic so that any thread (the signal watcher, a panicking
//! core) can restore without a lock that the drawing thread might hold.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Once;

use ratatui::crossterm::{cursor, execute, terminal};

const NONE: u8 = 0;
/// The progress line is on stderr.
const PROGRESS: u8 = 1;
/// The dashboard has the screen, drawn on stderr.
const SCREEN_STDERR: u8 = 2;
/// The dashboard has the screen, drawn on /dev/tty.
const SCREEN_TTY: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(NONE);

/// Where the dashboard draws: stderr when it is a terminal, else the
/// controlling terminal, so that stdout and stderr can both be redirected.
pub enum Target {
    /// The process's stderr.
    Stderr,
    /// `/dev/tty`.
    Tty(File),
}

impl Target {
    /// Stderr if it is a terminal, else `/dev/tty`.
    ///
    /// # Errors
    /// When there is no terminal to draw on.
    pub fn open() -> std::io::Result<Target> {
        if std::io::stderr().is_terminal() {
            return Ok(Target::Stderr);
        }
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("--interactive needs a terminal, and /dev/tty cannot be opened: {e}"),
                )
            })?;
        Ok(Target::Tty(tty))
    }

    fn state(&self) -> u8 {
        match self {
            Target::Stderr => SCREEN_STDERR,
            Target::Tty(_) => SCREEN_TTY,
        }
    }
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Target::Stderr => std::io::stderr().write(buf),
            Target::Tty(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Target::Stderr => std::io::stderr().flush(),
            Target::Tty(f) => f.flush(),
        }
    }
}

/// Holds the alternate screen and raw mode; gives them back on drop.
pub struct ScreenGuard(());

impl ScreenGuard {
    /// Enter the alternate screen and raw mode on `target`, and make sure a
    /// panic anywhere restores the terminal before its message is printed.
    ///
    /// # Errors
    /// When the terminal refuses raw mode or the escape sequences.
    pub fn enter(target: &mut Target) -> std::io::Result<ScreenGuard> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        STATE.store(target.state(), Ordering::SeqCst);
        let guard = ScreenGuard(());
        execute!(target, terminal::EnterAlternateScreen, cursor::Hide)?;
        Ok(guard)
    }
}

impl Drop for ScreenGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// True while the dashboard has the screen (it stops drawing once the
/// terminal was restored from elsewhere).
pub fn screen_active() -> bool {
    matches!(STATE.load(Ordering::SeqCst), SCREEN_STDERR | SCREEN_TTY)
}

/// Note that the progress line is (or is no longer) on stderr.
pub(crate) fn set_progress(on: bool) {
    let (from, to) = if on {
        (NONE, PROGRESS)
    } else {
        (PROGRESS, NONE)
    };
    let _ = STATE.compare_exchange(from, to, Ordering::SeqCst, Ordering::SeqCst);
}

/// Put the terminal back as it was: leave the dashboard's alternate screen
/// and raw mode, or clear the progress line. Idempotent; safe from any
/// thread, a panic hook or a signal watcher.
pub fn restore_terminal() {
    match STATE.swap(NONE, Ordering::SeqCst) {
        SCREEN_STDERR => leave(&mut std::io::stderr()),
        SCREEN_TTY => {
            if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
                leave(&mut tty);
            }
        }
        PROGRESS => {
            let mut err = std::io::stderr();
            let _ = err.write_all(b"\r\x1b[2K");
            let _ = err.flush();
        }
        _ => {}
    }
}

fn leave(w: &mut impl Write) {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(w, terminal::LeaveAlternateScreen, cursor::Show);
    let _ = w.flush();
}

/// Tell the user something while a run goes (the signal watcher's "stopping"
/// message): on its own line under a progress line, not at all under the
/// dashboard (which shows that the run is stopping), else on stderr.
pub fn announce(message: &str) {
    match STATE.load(Ordering::SeqCst) {
        SCREEN_STDERR | SCREEN_TTY => {}
        PROGRESS => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "\r\x1b[2K{message}");
        }
        _ => eprintln!("{message}"),
    }
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
}
