//! A precise sleep for the open model's pacing. tokio's timer ticks once a
//! millisecond, which would round every due time; a Linux timerfd wakes the
//! runtime's epoll at the requested nanosecond instead, with no spinning.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use tokio::io::unix::AsyncFd;

/// A one-shot timer on `CLOCK_MONOTONIC`, re-armed for each wait.
pub(crate) struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    /// `Instant` and `CLOCK_MONOTONIC` share a clock on Linux; this pair
    /// converts between them.
    base: (Instant, libc::timespec),
}

impl PreciseTimer {
    /// A timer registered with the current runtime.
    ///
    /// # Errors
    /// When the kernel refuses a timerfd.
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: timerfd_create has no memory effects; the result is
        // checked before use and owned from here on.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // The two clocks read back to back, `Instant` first: the pair is
        // off by nanoseconds, in the direction that fires late, never early.
        let std_now = Instant::now();
        // SAFETY: `now` is a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        // SAFETY: `fd` is a valid, open timerfd owned by the `AsyncFd` for
        // its whole life, and an `OwnedFd` always returns the same number.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)?;
        Ok(PreciseTimer {
            fd,
            base: (std_now, now),
        })
    }

    /// Wait until `at`. Returns at once when `at` has passed.
    pub async fn sleep_until(&mut self, at: Instant) {
        // The timer is armed from a conversion of `at` that may be off by
        // the time between two clock reads: when it fires early, arm again.
        while Instant::now() < at {
            if self.arm(at).is_err() {
                // Fall back to the runtime's timer (millisecond precision).
                tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                return;
            }
            loop {
                let Ok(mut guard) = self.fd.readable().await else {
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                    return;
                };
                let mut expirations = [0u8; 8];
                // SAFETY: reading 8 bytes into an 8-byte buffer.
                let n =
                    unsafe { libc::read(self.fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                // Read or not, the timer is not readable again until it next
                // fires: without this the next sleep starts with a read that
                // fails.
                guard.clear_ready();
                if n == 8 {
                    break;
                }
            }
        }
    }

    /// Arm the timer to fire once at `at`.
    fn arm(&self, at: Instant) -> io::Result<()> {
        let ahead = at.saturating_duration_since(self.base.0);
        let total_ns = self.base.1.tv_nsec as u128 + u128::from(ahead.subsec_nanos());
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: self.base.1.tv_sec
                    + (ahead.as_secs() + (total_ns / 1_000_000_000) as u64) as libc::time_t,
                tv_nsec: (total_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: a valid descriptor and a valid itimerspec.
        let armed = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if armed == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn never_wakes_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = PreciseTimer::new().unwrap();
            for i in 1..=50u64 {
                let at = Instant::now() + Duration::from_micros(100 + i * 37);
                t.sleep_until(at).await;
                assert!(Instant::now() >= at, "woke early");
            }
            // A time in the past returns at once.
            t.sleep_until(Instant::now() - Duration::from_millis(5))
                .await;
        });
    }
}
