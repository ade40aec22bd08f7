//! The static agent users get for another architecture (`deploy/release.sh` builds aarch64 and
//! armv7, `.ci/run` aarch64), run under qemu-user: which binary ([`CROSS_AGENT_ENV`]), which
//! emulator (`qemu-aarch64` or `qemu-arm` on PATH, Debian's `qemu-user`), and what its ELF header
//! says (architecture, statically linked). Run explicitly through the emulator, so no binfmt
//! registration is needed (a container usually has none).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::mosquitto::find_program;

/// Environment variable naming the static agent binary of another architecture.
pub const CROSS_AGENT_ENV: &str = "OCM_EDGE_CROSS_AGENT";

/// The architectures the release builds for, as their ELF header names them (`e_machine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Machine {
    X86_64,
    Aarch64,
    Arm,
    Other(u16),
}

impl Machine {
    fn from_e_machine(value: u16) -> Machine {
        match value {
            0x3e => Machine::X86_64,
            0xb7 => Machine::Aarch64,
            0x28 => Machine::Arm,
            other => Machine::Other(other),
        }
    }

    /// The machine this test runs on.
    pub fn host() -> Machine {
        match std::env::consts::ARCH {
            "x86_64" => Machine::X86_64,
            "aarch64" => Machine::Aarch64,
            "arm" => Machine::Arm,
            _ => Machine::Other(0),
        }
    }

    /// Debian's qemu-user emulator for it.
    fn qemu(self) -> Option<&'static str> {
        match self {
            Machine::X86_64 => Some("qemu-x86_64"),
            Machine::Aarch64 => Some("qemu-aarch64"),
            Machine::Arm => Some("qemu-arm"),
            Machine::Other(_) => None,
        }
    }
}

/// What an executable's ELF header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elf {
    pub machine: Machine,
    /// 32 or 64.
    pub bits: u8,
    /// No program interpreter (`PT_INTERP`): linked statically, runs without a libc on the box.
    pub is_static: bool,
}

impl fmt::Display for Elf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let linked = if self.is_static {
            "statically linked"
        } else {
            "dynamically linked"
        };
        write!(f, "ELF {}-bit {:?}, {linked}", self.bits, self.machine)
    }
}

/// Reads the ELF header and program headers of `path` (little-endian, as all three targets are).
///
/// # Errors
/// When the file cannot be read or is not a little-endian ELF file.
pub fn read_elf(path: &Path) -> std::io::Result<Elf> {
    let bytes = std::fs::read(path)?;
    let invalid = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {what}", path.display()),
        )
    };
    if bytes.get(..4) != Some(b"\x7fELF") || bytes.get(5) != Some(&1) {
        return Err(invalid("not a little-endian ELF file"));
    }
    let u16_at = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    // Offsets of e_phoff, e_phentsize and e_phnum in the 32- and 64-bit headers.
    let (bits, phoff, phentsize, phnum) = match bytes[4] {
        1 => (32, u32_at(0x1c).map(u64::from), u16_at(0x2a), u16_at(0x2c)),
        2 => (64, u64_at(0x20), u16_at(0x36), u16_at(0x38)),
        _ => return Err(invalid("neither a 32- nor a 64-bit ELF file")),
    };
    let machine = Machine::from_e_machine(u16_at(0x12).ok_or_else(|| invalid("truncated"))?);
    let (Some(phoff), Some(phentsize), Some(phnum)) = (phoff, phentsize, phnum) else {
        return Err(invalid("truncated ELF header"));
    };
    const PT_INTERP: u32 = 3;
    let mut is_static = true;
    for i in 0..u64::from(phnum) {
        let at = usize::try_from(phoff + i * u64::from(phentsize))
            .map_err(|_| invalid("program header out of range"))?;
        let p_type = u32_at(at).ok_or_else(|| invalid("truncated program headers"))?;
        is_static &= p_type != PT_INTERP;
    }
    Ok(Elf {
        machine,
        bits,
        is_static,
    })
}

/// A static agent of another architecture and the emulator that runs it.
#[derive(Debug, Clone)]
pub struct CrossAgent {
    pub binary: PathBuf,
    pub elf: Elf,
    pub qemu: PathBuf,
}

impl CrossAgent {
    /// A command that runs the agent under its emulator.
    pub fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.qemu);
        command.arg(&self.binary);
        command
    }
}

/// The agent named by [`CROSS_AGENT_ENV`] and its emulator. `None` (the test is skipped, with a
/// line saying so) when either is missing, unless `CI` is set: then it panics, since `.ci/run`
/// builds the aarch64 agent and installs qemu-user.
///
/// # Panics
/// Under `CI` when something is missing; always when the binary is not an ELF file.
pub fn cross_agent(test: &str) -> Option<CrossAgent> {
    let missing = |what: String| {
        if std::env::var_os("CI").is_some() {
            panic!(
                "{test}: CI is set but {what}; .ci/run builds the aarch64 agent \
                 (deploy/release.sh --only agent:aarch64) and installs qemu-user"
            );
        }
        eprintln!(
            "SKIPPED {test}: {what}; deploy/release.sh runs it, or set {CROSS_AGENT_ENV} to a \
             static agent for aarch64 or armv7 and install qemu-user; set CI=1 to make this a failure"
        );
        None
    };
    let Some(binary) = std::env::var_os(CROSS_AGENT_ENV).map(PathBuf::from) else {
        return missing(format!("{CROSS_AGENT_ENV} is not set"));
    };
    let elf = read_elf(&binary).unwrap_or_else(|e| panic!("{test}: {CROSS_AGENT_ENV}: {e}"));
    let Some(qemu) = elf.machine.qemu() else {
        panic!(
            "{test}: {} is for {:?}, which qemu-user does not run",
            binary.display(),
            elf.machine
        );
    };
    match find_program(qemu).or_else(|| find_program(&format!("{qemu}-static"))) {
        Some(qemu) => Some(CrossAgent { binary, elf, qemu }),
        None => missing(format!(
            "{qemu} is not installed (apt-get install qemu-user)"
        )),
    }
}
