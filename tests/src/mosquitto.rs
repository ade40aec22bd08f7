//! A real Mosquitto 2 broker for interop tests: generated config, free port, optional password file
//! and ACL; killed when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub use crate::broker::free_port;
use crate::broker::{BrokerError, MAX_PACKET_BYTES, wait_listening};
use crate::pki::TestPki;

/// Messages Mosquitto queues for one client (its default, 1,000, drops a 10,000-cluster fleet's
/// statuses on their way to the hub), as in `broker-config/mosquitto/mosquitto.conf`.
const MAX_QUEUED: u32 = 1_000_000;
/// QoS 1 deliveries in flight to one client (Mosquitto's default is 20), as in
/// `broker-config/mosquitto/mosquitto.conf`.
const MAX_INFLIGHT: u32 = 500;

/// Errors starting Mosquitto.
#[derive(Debug, thiserror::Error)]
pub enum MosquittoError {
    #[error("cannot write mosquitto files in {dir}: {source}")]
    Files {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("mosquitto_passwd failed for user {user}: {detail}")]
    Passwd { user: String, detail: String },
    #[error("mosquitto did not come up: {0}; its log:\n{1}")]
    NotListening(BrokerError, String),
    #[error(transparent)]
    Port(#[from] BrokerError),
}

/// Where `name` is installed: PATH, then the sbin folders Debian uses for mosquitto.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The `mosquitto` binary, or `None` after printing why the test is skipped.
///
/// # Panics
/// When mosquitto is missing and the environment variable `CI` is set: CI must run these tests
/// (`.ci/run` installs mosquitto).
pub fn require_mosquitto(test: &str) -> Option<PathBuf> {
    match find_program("mosquitto") {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => panic!(
            "{test}: `mosquitto` is not installed but CI is set; install it (apt-get install mosquitto, as .ci/run does)"
        ),
        None => {
            eprintln!(
                "SKIPPED {test}: `mosquitto` is not installed (apt-get install mosquitto); set CI=1 to make this a failure"
            );
            None
        }
    }
}

/// Authentication for a Mosquitto run: users with passwords and an ACL file.
#[derive(Debug, Clone)]
pub struct MosquittoAuth {
    /// Users and their passwords (written with `mosquitto_passwd`).
    pub users: Vec<(String, String)>,
    /// The ACL file to use as is.
    pub acl_file: PathBuf,
}

/// A running mosquitto; killed and reaped on drop.
#[derive(Debug)]
pub struct Mosquitto {
    child: Child,
    addr: SocketAddr,
    /// The listener with authentication and ACL, when started with [`Mosquitto::start_split`].
    secured: Option<SocketAddr>,
    /// Whether the (only) listener speaks TLS ([`Mosquitto::start_tls`]).
    tls: bool,
    program: PathBuf,
    dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mosquitto {
    /// Starts `program` on a free port of 127.0.0.1, anonymous access allowed.
    ///
    /// # Errors
    /// [`MosquittoError`] when it cannot be configured or does not listen.
    pub fn start(program: &Path) -> Result<Self, MosquittoError> {
        Self::start_with(program, None)
    }

    /// Starts `program` with optional authentication and ACL.
    ///
    /// # Errors
    /// [`MosquittoError`] when it cannot be configured or does not listen.
    pub fn start_with(
        program: &Path,
        auth: Option<&MosquittoAuth>,
    ) -> Result<Self, MosquittoError> {
        Self::launch(program, auth, false, None)
    }

    /// Starts `program` with one TLS listener using `pki`'s broker certificate, anonymous
    /// access allowed; [`Mosquitto::url`] is then `mqtts://127.0.0.1:PORT`.
    ///
    /// # Errors
    /// [`MosquittoError`] when it cannot be configured or does not listen.
    pub fn start_tls(program: &Path, pki: &TestPki) -> Result<Self, MosquittoError> {
        Self::launch(program, None, false, Some(pki))
    }

    /// Starts `program` with two listeners: [`Mosquitto::url`] open to anonymous clients with
    /// full access (for tests that run the hub without credentials), and
    /// [`Mosquitto::secured_url`] with `auth`'s password file and ACL (where the agents connect).
    ///
    /// # Errors
    /// [`MosquittoError`] when it cannot be configured or does not listen.
    pub fn start_split(program: &Path, auth: &MosquittoAuth) -> Result<Self, MosquittoError> {
        Self::launch(program, Some(auth), true, None)
    }

    fn launch(
        program: &Path,
        auth: Option<&MosquittoAuth>,
        split: bool,
        tls: Option<&TestPki>,
    ) -> Result<Self, MosquittoError> {
        let dir = temp_dir()?;
        let files = |source| MosquittoError::Files {
            dir: dir.path().to_owned(),
            source,
        };
        let port = free_port()?;
        let mut conf = format!(
            "per_listener_settings {split}\npersistence false\nmax_packet_size {MAX_PACKET_BYTES}\n\
             max_queued_messages {MAX_QUEUED}\nmax_inflight_messages {MAX_INFLIGHT}\n\
             log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n\
             listener {port} 127.0.0.1\nprotocol mqtt\n"
        );
        if let Some(pki) = tls {
            conf.push_str(&format!(
                "certfile {}\nkeyfile {}\n",
                pki.server_cert_file.display(),
                pki.server_key_file.display()
            ));
        }
        let mut secured = None;
        if split {
            // Per-listener settings: the first listener is open, the second one is secured.
            let secured_port = free_port()?;
            secured = Some(SocketAddr::from(([127, 0, 0, 1], secured_port)));
            conf.push_str(&format!(
                "allow_anonymous true\nlistener {secured_port} 127.0.0.1\nprotocol mqtt\n"
            ));
        }
        match auth {
            None => conf.push_str("allow_anonymous true\n"),
            Some(auth) => {
                let passwd = dir.path().join("passwd");
                write_password_file(program, &passwd, &auth.users)?;
                conf.push_str(&format!(
                    "allow_anonymous false\npassword_file {}\nacl_file {}\n",
                    passwd.display(),
                    auth.acl_file.display()
                ));
            }
        }
        let conf_path = dir.path().join("mosquitto.conf");
        std::fs::write(&conf_path, conf).map_err(files)?;
        let child = spawn(program, dir.path())?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let broker = Self {
            child,
            addr,
            secured,
            tls: tls.is_some(),
            program: program.to_owned(),
            dir,
        };
        broker.wait_listening()?;
        Ok(broker)
    }

    fn wait_listening(&self) -> Result<(), MosquittoError> {
        for a in std::iter::once(self.addr).chain(self.secured) {
            if let Err(e) = wait_listening(a, Duration::from_secs(10)) {
                return Err(MosquittoError::NotListening(e, self.log()));
            }
        }
        Ok(())
    }

    /// Kills the broker with SIGKILL (it loses every session and queued message: persistence is
    /// off) and starts it again on the same ports with the same configuration.
    ///
    /// # Errors
    /// [`MosquittoError`] when it does not come back.
    pub fn kill9_and_restart(&mut self) -> Result<(), MosquittoError> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.program, self.dir.path())?;
        self.wait_listening()
    }

    /// `mqtt://127.0.0.1:PORT` (`mqtts://` with [`Mosquitto::start_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        format!("{scheme}://{}", self.addr)
    }

    /// `mqtt://127.0.0.1:PORT` of the secured listener ([`Mosquitto::start_split`]; `mqtts://`
    /// of the certificate listener with [`Mosquitto::start_shipped`]); the only listener's URL
    /// otherwise.
    pub fn secured_url(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        format!("{scheme}://{}", self.secured.unwrap_or(self.addr))
    }

    /// Starts `program` with the shipped `broker-config/mosquitto/mosquitto.conf` as it is, but
    /// for its paths and ports: its two listeners on 127.0.0.1 `ports` (passwords: [`Mosquitto::url`],
    /// `mqtts://`; cluster certificates: [`Mosquitto::secured_url`]), its own files (`pki`'s
    /// broker certificate, `users`' password file, the shipped ACL files) in its directory, and
    /// the hub's cluster CA and revocation list read from `hub_data_dir/pki/`, which must exist.
    ///
    /// # Errors
    /// [`MosquittoError`] when it cannot be configured or does not listen.
    pub fn start_shipped(
        program: &Path,
        pki: &TestPki,
        users: &[(String, String)],
        hub_data_dir: &Path,
        ports: (u16, u16),
    ) -> Result<Self, MosquittoError> {
        let dir = temp_dir()?;
        let files = |source| MosquittoError::Files {
            dir: dir.path().to_owned(),
            source,
        };
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../broker-config/mosquitto");
        let conf = std::fs::read_to_string(shipped.join("mosquitto.conf")).map_err(files)?;
        for acl in ["ocm-edge.acl", "ocm-edge-clusters.acl"] {
            std::fs::copy(shipped.join(acl), dir.path().join(acl)).map_err(files)?;
        }
        std::fs::copy(&pki.server_cert_file, dir.path().join("broker.crt")).map_err(files)?;
        std::fs::copy(&pki.server_key_file, dir.path().join("broker.key")).map_err(files)?;
        write_password_file(program, &dir.path().join("ocm-edge.passwd"), users)?;
        let local = |p: &Path| format!("{}/", p.display());
        let conf = conf
            .replace("/etc/mosquitto/ocm-edge/", &local(dir.path()))
            .replace("/var/lib/ocm-edge/", &local(hub_data_dir))
            .replace(
                "\nlistener 8883\n",
                &format!("\nlistener {} 127.0.0.1\n", ports.0),
            )
            .replace(
                "\nlistener 8884\n",
                &format!("\nlistener {} 127.0.0.1\n", ports.1),
            );
        let conf = format!(
            "log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\n{conf}"
        );
        std::fs::write(dir.path().join("mosquitto.conf"), conf).map_err(files)?;
        let child = spawn(program, dir.path())?;
        let broker = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], ports.0)),
            secured: Some(SocketAddr::from(([127, 0, 0, 1], ports.1))),
            tls: true,
            program: program.to_owned(),
            dir,
        };
        broker.wait_listening()?;
        Ok(broker)
    }

    /// Sends SIGHUP (Mosquitto reads its configuration again, its TLS files among it: a new
    /// revocation list) and waits until it says so in its log.
    ///
    /// # Errors
    /// [`MosquittoError`] when the signal cannot be sent or the reload is not logged in 10 s.
    pub fn reload(&self) -> Result<(), MosquittoError> {
        let reloads = |log: &str| log.matches("Reloading config").count();
        let before = reloads(&self.log());
        let status = Command::new("kill")
            .arg("-HUP")
            .arg(self.child.id().to_string())
            .status()
            .map_err(|source| MosquittoError::Spawn {
                program: PathBuf::from("kill"),
                source,
            })?;
        if !status.success() {
            return Err(MosquittoError::Spawn {
                program: PathBuf::from("kill"),
                source: std::io::Error::other(format!("kill -HUP exited with {status}")),
            });
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while reloads(&self.log()) == before {
            if std::time::Instant::now() > deadline {
                return Err(MosquittoError::NotListening(
                    BrokerError::NotListening {
                        addr: self.addr,
                        waited: Duration::from_secs(10),
                    },
                    self.log(),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Writes the password file of [`Mosquitto::start_shipped`] again with `users` only (read
    /// at the next start).
    ///
    /// # Errors
    /// [`MosquittoError`] when `mosquitto_passwd` fails.
    pub fn set_users(&self, users: &[(String, String)]) -> Result<(), MosquittoError> {
        write_password_file(
            &self.program,
            &self.dir.path().join("ocm-edge.passwd"),
            users,
        )
    }

    /// Appends `text` to the file `name` of its directory (with [`Mosquitto::start_shipped`],
    /// `ocm-edge.acl` or `ocm-edge-clusters.acl`: what an operator adds to the shipped file),
    /// read at the next [`Mosquitto::reload`] or start.
    ///
    /// # Errors
    /// [`MosquittoError::Files`] when the file cannot be written.
    pub fn append_to_file(&self, name: &str, text: &str) -> Result<(), MosquittoError> {
        use std::io::Write as _;
        let files = |source| MosquittoError::Files {
            dir: self.dir.path().to_owned(),
            source,
        };
        std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.path().join(name))
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(files)
    }

    /// What mosquitto logged so far (errors, warnings, notices).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }
}

/// A new directory for a broker's files.
fn temp_dir() -> Result<tempfile::TempDir, MosquittoError> {
    tempfile::tempdir().map_err(|source| MosquittoError::Files {
        dir: std::env::temp_dir(),
        source,
    })
}

/// Runs `program` on `dir`'s `mosquitto.conf`, appending to `dir`'s `mosquitto.log`.
fn spawn(program: &Path, dir: &Path) -> Result<Child, MosquittoError> {
    let files = |source| MosquittoError::Files {
        dir: dir.to_owned(),
        source,
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("mosquitto.log"))
        .map_err(files)?;
    Command::new(program)
        .arg("-c")
        .arg(dir.join("mosquitto.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|source| MosquittoError::Spawn {
            program: program.to_owned(),
            source,
        })
}

/// Writes a Mosquitto password file with `mosquitto_passwd -b`.
fn write_password_file(
    mosquitto: &Path,
    path: &Path,
    users: &[(String, String)],
) -> Result<(), MosquittoError> {
    let tool = mosquitto
        .parent()
        .map(|d| d.join("mosquitto_passwd"))
        .filter(|p| p.is_file())
        .or_else(|| find_program("mosquitto_passwd"))
        .unwrap_or_else(|| PathBuf::from("mosquitto_passwd"));
    std::fs::write(path, "").map_err(|source| MosquittoError::Files {
        dir: path.to_owned(),
        source,
    })?;
    for (user, pass) in users {
        let out = Command::new(&tool)
            .arg("-b")
            .arg(path)
            .arg(user)
            .arg(pass)
            .output()
            .map_err(|source| MosquittoError::Spawn {
                program: tool.clone(),
                source,
            })?;
        if !out.status.success() {
            return Err(MosquittoError::Passwd {
                user: user.clone(),
                detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
    }
    Ok(())
}
