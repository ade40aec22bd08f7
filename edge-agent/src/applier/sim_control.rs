//! The simulated cluster's control socket, so drift can be put into a running
//! `ocm-edge-agent --applier sim` from outside its process (`ocm-edge-agent sim ...`), the way
//! `kubectl edit` changes a real cluster behind the agent's back.
//!
//! The agent serves `<data dir>/sim-control.sock` (a Unix socket, mode 0600: only the agent's
//! user may use it) while it runs with the sim applier. One JSON request per connection, one JSON
//! reply. Nothing here touches the hub: the agent's next reconcile finds the drift and corrects it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinHandle;

use crate::applier::sim::SimControl;

/// The socket's file name in the agent's data dir.
pub const SOCKET: &str = "sim-control.sock";

/// Longest request line read (a request names one object and one value).
const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// One object of the simulated cluster: `kind`, `namespace` ("" when cluster-scoped), `name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub kind: String,
    #[serde(default)]
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace.as_str() {
            "" => write!(f, "{} {}", self.kind, self.name),
            ns => write!(f, "{} {ns}/{}", self.kind, self.name),
        }
    }
}

/// What a client asks of the simulated cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum SimRequest {
    /// The object as stored (without status).
    Get(ObjectRef),
    /// Deletes the object (a Namespace with its contents).
    Delete(ObjectRef),
    /// Sets the value at a JSON pointer of the object (e.g. `/spec/replicas`); the field must exist.
    Set {
        #[serde(flatten)]
        object: ObjectRef,
        pointer: String,
        value: Value,
    },
    /// Takes the simulated API server down (`false`) or up.
    ApiHealthy { healthy: bool },
}

/// The answer: the object for `get`, or what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Errors of a control client.
#[derive(Debug, thiserror::Error)]
pub enum SimControlError {
    #[error(
        "cannot reach the simulated cluster at {path} (is `ocm-edge-agent --applier sim` running \
         with this --data-dir?)"
    )]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the agent's control socket {path} failed: {detail}")]
    Io { path: PathBuf, detail: String },
    #[error("{0}")]
    Refused(String),
}

/// The socket path for a data dir.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// Serves the control socket of `data_dir` until the task is aborted. A socket file left by an
/// agent that was killed is replaced.
///
/// # Errors
/// When the socket cannot be created.
pub fn serve(control: SimControl, data_dir: &Path) -> std::io::Result<JoinHandle<()>> {
    let path = socket_path(data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(&path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let control = control.clone();
                    tokio::spawn(async move {
                        if let Err(e) = answer(stream, &control).await {
                            tracing::warn!(error = %e, "sim control request failed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "sim control socket stopped");
                    return;
                }
            }
        }
    }))
}

async fn answer(stream: UnixStream, control: &SimControl) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read).take(MAX_REQUEST_BYTES as u64);
    reader.read_line(&mut line).await?;
    let reply = match serde_json::from_str::<SimRequest>(&line) {
        Ok(request) => handle(control, request),
        Err(e) => SimReply {
            object: None,
            error: Some(format!("unreadable request: {e}")),
        },
    };
    let mut bytes = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await
}

/// Carries out one request on the simulated cluster.
pub fn handle(control: &SimControl, request: SimRequest) -> SimReply {
    let missing = |o: &ObjectRef| format!("no {o} in the simulated cluster");
    let result = match request {
        SimRequest::Get(o) => control
            .get(&o.kind, &o.namespace, &o.name)
            .ok_or_else(|| missing(&o)),
        SimRequest::Delete(o) => {
            if control.delete(&o.kind, &o.namespace, &o.name) {
                tracing::info!(object = %o, "sim: object deleted from outside the agent (drift)");
                Ok(Value::Null)
            } else {
                Err(missing(&o))
            }
        }
        SimRequest::Set {
            object: o,
            pointer,
            value,
        } => match control.get(&o.kind, &o.namespace, &o.name) {
            None => Err(missing(&o)),
            Some(current) if current.pointer(&pointer).is_none() => Err(format!(
                "{o} has no field at {pointer:?} (a JSON pointer such as /spec/replicas)"
            )),
            Some(_) => {
                let changed = control.modify(&o.kind, &o.namespace, &o.name, |obj| {
                    if let Some(field) = obj.pointer_mut(&pointer) {
                        *field = value;
                    }
                });
                if changed {
                    tracing::info!(object = %o, %pointer, "sim: object changed from outside the agent (drift)");
                    Ok(Value::Null)
                } else {
                    Err(missing(&o))
                }
            }
        },
        SimRequest::ApiHealthy { healthy } => {
            control.set_api_healthy(healthy);
            tracing::info!(healthy, "sim: API server health set from outside the agent");
            Ok(Value::Null)
        }
    };
    match result {
        Ok(Value::Null) => SimReply {
            object: None,
            error: None,
        },
        Ok(object) => SimReply {
            object: Some(object),
            error: None,
        },
        Err(error) => SimReply {
            object: None,
            error: Some(error),
        },
    }
}

/// Sends `request` to the agent running on `data_dir` and returns its answer.
///
/// # Errors
/// [`SimControlError`] when no agent listens there, the link fails, or the agent refused.
pub async fn request(data_dir: &Path, request: &SimRequest) -> Result<SimReply, SimControlError> {
    let path = socket_path(data_dir);
    let io = |e: std::io::Error| SimControlError::Io {
        path: path.clone(),
        detail: e.to_string(),
    };
    let stream = UnixStream::connect(&path)
        .await
        .map_err(|source| SimControlError::Connect {
            path: path.clone(),
            source,
        })?;
    let (read, mut write) = stream.into_split();
    let mut bytes = serde_json::to_vec(request).map_err(|e| io(std::io::Error::other(e)))?;
    bytes.push(b'\n');
    write.write_all(&bytes).await.map_err(io)?;
    let mut line = String::new();
    BufReader::new(read)
        .read_line(&mut line)
        .await
        .map_err(io)?;
    let reply: SimReply = serde_json::from_str(&line).map_err(|e| SimControlError::Io {
        path: path.clone(),
        detail: format!("unreadable answer {line:?}: {e}"),
    })?;
    match reply.error {
        Some(e) => Err(SimControlError::Refused(e)),
        None => Ok(reply),
    }
}
