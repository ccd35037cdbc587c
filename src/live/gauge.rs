//! How much of a finite input has been read, for "time left": when the
//! requests come from a regular file (`--input-file`, or stdin redirected
//! from one), the file's size and the read position of the descriptor the
//! input thread reads it through. Read from `/proc/self/fdinfo` once per
//! interval, so the input path is not touched at all; where that is not
//! available (not Linux, a pipe) there is no gauge and no estimate from it.

use std::path::{Path, PathBuf};

/// The read position of one open regular file.
#[derive(Debug)]
pub struct InputGauge {
    path: PathBuf,
    size: u64,
    fd: Option<u32>,
}

impl InputGauge {
    /// A gauge for the input file `path`, or stdin (`None` or `-`) when it
    /// is a regular file. `None` when there is nothing to measure.
    pub fn new(path: Option<&Path>) -> Option<InputGauge> {
        let path = match path {
            Some(p) if p != Path::new("-") => std::fs::canonicalize(p).ok()?,
            _ => std::fs::read_link("/proc/self/fd/0").ok()?,
        };
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() || meta.len() == 0 {
            return None;
        }
        Some(InputGauge {
            path,
            size: meta.len(),
            fd: None,
        })
    }

    /// The fraction of the file read so far, when it can be found.
    pub fn fraction(&mut self) -> Option<f64> {
        if let Some(fd) = self.fd {
            if let Some(pos) = self.position(fd) {
                return Some(pos as f64 / self.size as f64);
            }
            self.fd = None;
        }
        for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
            let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            if let Some(pos) = self.position(fd) {
                self.fd = Some(fd);
                return Some(pos as f64 / self.size as f64);
            }
        }
        None
    }

    /// The position of `fd` if it is open on the input file.
    fn position(&self, fd: u32) -> Option<u64> {
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        if target != self.path {
            return None;
        }
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("pos:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|p| p.min(self.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    #[cfg(target_os = "linux")]
    fn follows_the_read_position_of_an_open_file() {
        let path = std::env::temp_dir().join(format!("versus-gauge-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 1000]).unwrap();
        let mut gauge = InputGauge::new(Some(&path)).unwrap();
        assert_eq!(gauge.fraction(), None);
        let mut f = std::fs::File::open(&path).unwrap();
        let mut buf = [0u8; 250];
        f.read_exact(&mut buf).unwrap();
        assert_eq!(gauge.fraction(), Some(0.25));
        f.read_exact(&mut buf).unwrap();
        assert_eq!(gauge.fraction(), Some(0.5));
        drop(f);
        std::fs::remove_file(&path).unwrap();
        assert!(InputGauge::new(Some(Path::new("/nonexistent/versus"))).is_none());
    }
}
