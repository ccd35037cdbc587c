//! How a command ends: one type for every command's outcome, so each exit
//! code is defined once (docs/exit-codes.md lists the same).

/// How a command ended, and the process's exit code for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: done (a run stopped by one Ctrl-C too).
    Done,
    /// 1: the command could not be carried out.
    Failed,
    /// 2: bad arguments or configuration, or a file that cannot be read.
    Usage,
    /// 3: a `--threshold` failed (the report is complete).
    Threshold,
    /// 4: an endpoint failed every request (the report is complete and
    /// names it; `--allow-failures` makes it 0).
    EndpointFailed,
    /// 130: a second Ctrl-C.
    Interrupted,
}

impl Exit {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Threshold => 3,
            Exit::EndpointFailed => 4,
            Exit::Interrupted => 130,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(exit.code())
    }
}
