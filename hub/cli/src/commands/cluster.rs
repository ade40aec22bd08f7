//! `ocm-edge cluster list|get|accept|deny|remove|label|taint|maintenance|add|broker-config|bootstrap`.

use clap::Subcommand;

use crate::output::{OutputFormat, cluster_detail, clusters_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::{ClusterState, ClusterView};
use ocm_edge_schemas::api::cluster::LABEL_CLUSTER_SET;

/// Cluster commands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// List every cluster the hub knows (pending, accepted, denied).
    List {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show one cluster: state, availability, lease, labels, claims, conditions.
    Get {
        /// Cluster name.
        name: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Accept a cluster that asked to join, so works can be sent to it. It takes the labels its
    /// agent sent (`ocm-edge cluster get NAME` shows them), but never a cluster set: give that
    /// with --clusterset, else the cluster goes to the `default` set (admin role).
    Accept {
        /// Cluster name.
        name: String,
        /// Put the cluster in this cluster set (its
        /// `cluster.open-cluster-management.io/clusterset` label).
        #[arg(long, value_name = "SET")]
        clusterset: Option<String>,
        /// Edit the labels: `key=value` sets one, `key-` removes one (repeatable).
        #[arg(long = "label", value_name = "KEY=VALUE|KEY-")]
        labels: Vec<String>,
        /// Take none of the labels the agent sent (then --label and --clusterset apply).
        #[arg(long)]
        drop_agent_labels: bool,
    },
    /// Deny a cluster (its events are ignored from now on).
    Deny {
        /// Cluster name.
        name: String,
    },
    /// Remove a cluster from the hub: its agent removes every work it applied (each per its
    /// deleteOption), then the hub revokes its key and certificate, drops its broker login and
    /// forgets it, its works and statuses. Its agent can come back only by joining again
    /// (admin role).
    Remove {
        /// Cluster name.
        name: String,
        /// Wait until the hub has forgotten the cluster (its agent confirmed every work removed).
        #[arg(long)]
        wait: bool,
        /// How long --wait waits, e.g. `5m`.
        #[arg(long, default_value = "5m", value_parser = crate::parse_duration, value_name = "DURATION", requires = "wait")]
        wait_timeout: std::time::Duration,
        /// Forget the cluster now, without waiting for its agent (for a cluster that will never
        /// answer): what its agent applied stays on the cluster.
        #[arg(long, conflicts_with = "wait")]
        force: bool,
    },
    /// Set or remove a cluster's labels (`k=v` sets, `k-` removes), which placements and cluster
    /// sets select it by: `cluster.open-cluster-management.io/clusterset=SET` puts it in a set.
    /// An accepted cluster's agent cannot change them; the hub does, here (admin role).
    Label {
        /// Cluster name.
        name: String,
        /// `key=value` to set, `key-` to remove.
        #[arg(required = true, value_name = "KEY=VALUE|KEY-")]
        labels: Vec<String>,
    },
    /// Put taints on a cluster (`key[=value]:Effect`, Effect one of NoSelect, PreferNoSelect,
    /// NoSelectIfNew) or remove them (`key-`): placements that do not tolerate a taint leave or
    /// avoid the cluster at once. The hub stamps when each taint was added (tolerationSeconds
    /// count from then). The availability taints are the hub's own (admin role).
    Taint {
        /// Cluster name.
        name: String,
        /// `key[=value]:Effect` to add, `key-` to remove.
        #[arg(required = true, value_name = "KEY[=VALUE]:EFFECT|KEY-")]
        taints: Vec<String>,
    },
    /// Set when the cluster may apply new versions of its works: maintenance windows
    /// `SCHEDULE;DURATION;TIME_ZONE` (e.g. '0 22 * * 1-5;6h;Europe/Berlin': five cron fields
    /// read in an IANA time zone, UTC when left out), replacing those set before. The agent
    /// stores new versions at once but applies them only when one of these windows (and one of
    /// its own --maintenance-window, if it has any) is open; rollouts wait for it meanwhile
    /// (status Held). A window that cannot be read is refused and nothing changes (admin role).
    Maintenance {
        /// Cluster name.
        name: String,
        /// A window (repeatable).
        #[arg(
            long = "window",
            value_name = "SCHEDULE;DURATION;TZ",
            required_unless_present = "clear"
        )]
        windows: Vec<String>,
        /// Remove every window set on the hub (updates at any time, as far as the hub is
        /// concerned).
        #[arg(long, conflicts_with = "windows")]
        clear: bool,
    },
    /// Add and accept a cluster whose agent never asks to join: OCM's or maestro's own work
    /// agent. It has no agent key, so its statuses are taken unsigned; on the hub's embedded
    /// broker it logs in with the password `ocm-edge cluster broker-config NAME` writes.
    Add {
        /// Cluster name.
        name: String,
    },
    /// Write the MQTT config file of OCM's own work agent for a cluster added with `cluster add`
    /// (`work agent --workload-source-driver=mqtt --workload-source-config=FILE`): the hub's
    /// broker, this cluster's username and broker password, the hub's CA, a TLS client
    /// certificate for the cluster and the topics. Run it on the hub's machine; the file holds
    /// secrets (written 0600).
    BrokerConfig(BrokerConfigArgs),
    /// Print what installs the agent on the edge cluster NAME, for `kubectl apply -f -` there:
    /// its Namespace, ServiceAccount and RBAC, a Secret with the broker's address, the hub's CA
    /// pin and a NEW join token, its PersistentVolumeClaim and Deployment (the agent chart's
    /// own manifests), or with `-o helm-values` the values of the agent's Helm chart. Run it on
    /// the hub's machine; the output is a secret until the cluster is accepted.
    Bootstrap(super::bootstrap::BootstrapArgs),
}

/// `cluster broker-config` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BrokerConfigArgs {
    /// Cluster name.
    pub name: String,
    /// The broker as the agent reaches it (`host:port`; the hub's embedded broker listens with
    /// TLS on 8883).
    #[arg(long, value_name = "HOST:PORT")]
    pub broker_host: String,
    /// The hub's source id (its topics' second level).
    #[arg(long, default_value = ocm_edge_hub::config::DEFAULT_SOURCE_ID)]
    pub source: String,
    /// Days the TLS client certificate in the file is valid (OCM's MQTT client speaks TLS only
    /// with one; the hub's broker knows the cluster by its password, not by it).
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(i64).range(1..=3650))]
    pub days: i64,
    /// Where to write the file (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE", default_value = "-")]
    pub out: std::path::PathBuf,
    #[command(flatten)]
    pub data: crate::DataDirArg,
}

/// The hub's PKI, join-token key and CA certificate (PEM) in the data directory `data`, for the
/// broker configs written on the hub's machine.
///
/// # Errors
/// [`CliError::Hub`] when the data directory has no hub CA or token key.
pub(crate) fn hub_secrets(
    data: &crate::DataDirArg,
) -> Result<
    (
        ocm_edge_hub::pki::HubPki,
        ocm_edge_hub::registration::join_token::JoinTokens,
        Vec<u8>,
    ),
    CliError,
> {
    let pki = ocm_edge_hub::pki::HubPki::load_existing(&data.data_dir.join("pki"))
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let tokens = ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(&data.data_dir)
        .map_err(|e| CliError::Hub(e.to_string()))?;
    let ca = std::fs::read(pki.ca_file()).map_err(|e| {
        CliError::Hub(format!(
            "cannot read the hub's CA {}: {e}",
            pki.ca_file().display()
        ))
    })?;
    Ok((pki, tokens, ca))
}

/// The MQTT config file OCM's sdk-go reads for cluster `args.name` of the hub in `args.data`:
/// `brokerHost`, `username`, `password`, the hub's CA and a TLS client certificate of the cluster
/// with its key (`caData`, `clientCertData`, `clientKeyData`: base64 of the PEM), `topics`.
///
/// # Errors
/// [`CliError::Usage`] for a name or source that can be no topic level; [`CliError::Hub`] when the
/// data directory has no hub CA or token key.
pub fn broker_config(args: &BrokerConfigArgs) -> Result<String, CliError> {
    use ocm_edge_schemas::wire::topic;
    ocm_edge_schemas::validate::validate_cluster_name(&args.name)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let usage = |e: topic::TopicError| CliError::Usage(e.to_string());
    let (pki, tokens, ca) = hub_secrets(&args.data)?;
    // OCM's sdk-go speaks TLS only with a client certificate; the embedded broker asks for none
    // and knows the cluster by its password.
    let (cert, key) = pki
        .issue_cluster_tls(
            &args.name,
            chrono::Duration::days(args.days),
            chrono::Utc::now(),
        )
        .map_err(|e| CliError::Hub(e.to_string()))?;
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let config = serde_json::json!({
        "brokerHost": args.broker_host,
        "username": args.name,
        "password": tokens.cluster_password(&args.name),
        "caData": b64(&ca),
        "clientCertData": b64(cert.as_bytes()),
        "clientKeyData": b64(key.as_bytes()),
        "topics": {
            "sourceEvents": topic::source_events(&args.source, &args.name).map_err(usage)?,
            "agentEvents": topic::agent_events(&args.source, &args.name).map_err(usage)?,
            "sourceBroadcast": topic::source_broadcast(&args.source).map_err(usage)?,
            "agentBroadcast": topic::agent_broadcast(&args.name).map_err(usage)?,
        },
    });
    let text = serde_yaml_ng::to_string(&config).map_err(|e| CliError::Hub(e.to_string()))?;
    Ok(format!(
        "# MQTT config of OCM's work agent for cluster {name} (ocm-edge cluster broker-config).\n\
         # Run: work agent --spoke-cluster-name={name} --cloudevents-client-id={name} \\\n\
         #   --workload-source-driver=mqtt --workload-source-config=THIS_FILE\n\
         # The password is a secret: keep this file 0600.\n{text}",
        name = args.name
    ))
}

/// Runs a cluster command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: ClusterCommand) -> Result<(), CliError> {
    if let ClusterCommand::BrokerConfig(args) = &cmd {
        let text = broker_config(args)?;
        if args.out.as_os_str() == "-" {
            return print(&text);
        }
        ocm_edge_hub::pki::write_file(&args.out, &text, true)
            .map_err(|e| CliError::Hub(e.to_string()))?;
        return print(&format!(
            "wrote the MQTT config of cluster {} to {} (0600)\n",
            args.name,
            args.out.display()
        ));
    }
    if let ClusterCommand::Bootstrap(args) = &cmd {
        return print(&super::bootstrap::run(args, &global.source_id)?);
    }
    let client = global.connect().await?;
    let now = chrono::Utc::now();
    let text = match cmd {
        ClusterCommand::List { output } => {
            let clusters = client.list_clusters().await?;
            match output {
                OutputFormat::Table if clusters.is_empty() => match client.scope() {
                    // The hub answers a scoped credential with its reach only: the hub may well
                    // hold clusters.
                    Some(scope) => format!(
                        "No clusters within this credential's scope ({scope}): an admin binds a \
                         cluster set there with `ocm-edge clusterset bind SET -n {}`.\n",
                        scope.namespaces[0]
                    ),
                    None => "No clusters yet. Start an agent (ocm-edge-agent --cluster-name NAME \
                             --broker URL) and accept it with `ocm-edge cluster accept NAME`.\n"
                        .to_owned(),
                },
                OutputFormat::Table => {
                    let mut t = clusters_table(&clusters, now);
                    t.push('\n');
                    let pending: Vec<_> = clusters
                        .iter()
                        .filter(|c| c.state == ClusterState::Pending)
                        .map(|c| c.name.as_str())
                        .collect();
                    if !pending.is_empty() {
                        t.push_str(&format!(
                            "Waiting for acceptance: {} (run `ocm-edge cluster accept NAME`)\n",
                            pending.join(", ")
                        ));
                    }
                    t
                }
                format => to_document(&clusters, format)?,
            }
        }
        ClusterCommand::Get { name, output } => {
            let cluster = client.get_cluster(&name).await?;
            match output {
                OutputFormat::Table => cluster_detail(&cluster, now),
                format => to_document(&cluster, format)?,
            }
        }
        ClusterCommand::Accept {
            name,
            clusterset,
            labels,
            drop_agent_labels,
        } => {
            let (mut set, remove) = label_changes(&labels)?;
            if let Some(s) = clusterset {
                set.insert(LABEL_CLUSTER_SET.to_owned(), s);
            }
            let cluster = client
                .accept_cluster_labelled(&name, set, remove, drop_agent_labels)
                .await?;
            accepted_text(&cluster)
        }
        ClusterCommand::Deny { name } => {
            let cluster = client.deny_cluster(&name).await?;
            format!(
                "cluster {} denied (state {})\n",
                cluster.name, cluster.state
            )
        }
        ClusterCommand::Remove {
            name,
            wait,
            wait_timeout,
            force,
        } => {
            let cluster = client.remove_cluster(&name, force).await?;
            if cluster.removed {
                removed_text(&cluster)
            } else if wait {
                wait_removed(&client, &cluster, wait_timeout).await?
            } else {
                format!(
                    "removing cluster {name}: its agent removes its {works} work(s), then the hub \
                     forgets it (`ocm-edge cluster get {name}` shows the works left; \
                     `--wait` waits for it, `--force` forgets it without its agent)\n",
                    works = cluster.works,
                )
            }
        }
        ClusterCommand::Label { name, labels } => {
            let (set, remove) = label_changes(&labels)?;
            let cluster = client.label_cluster(&name, set, remove).await?;
            let labels = crate::output::labels_text(&cluster.labels);
            format!(
                "cluster {} labelled: {}\n",
                cluster.name,
                if labels.is_empty() {
                    "no labels"
                } else {
                    &labels
                }
            )
        }
        ClusterCommand::Taint { name, taints } => {
            let (add, remove) = taint_changes(&taints)?;
            let cluster = client.taint_cluster(&name, add, remove).await?;
            format!(
                "cluster {} tainted: {}\n",
                cluster.name,
                crate::output::taints_text(&cluster.taints)
            )
        }
        ClusterCommand::Maintenance {
            name,
            windows,
            clear: _,
        } => {
            // Checked here too, so a typo is refused before anything is sent.
            ocm_edge_schemas::maintenance::parse_all(&windows)
                .map_err(|e| CliError::Usage(e.to_string()))?;
            let cluster = client.set_maintenance_windows(&name, windows).await?;
            if cluster.maintenance_windows.is_empty() {
                format!(
                    "cluster {}: no maintenance window set on the hub (updates at any time, unless its agent has windows of its own)\n",
                    cluster.name
                )
            } else {
                format!(
                    "cluster {}: new versions are applied only in {}\n",
                    cluster.name,
                    cluster.maintenance_windows.join(" | ")
                )
            }
        }
        ClusterCommand::Add { name } => {
            let cluster = client.add_cluster(&name).await?;
            format!(
                "cluster {name} added (state {}); its agent logs in with the MQTT config that \
                 `ocm-edge cluster broker-config {name} --broker-host HOST:8883` writes on the \
                 hub's machine\n",
                cluster.state,
                name = cluster.name
            )
        }
        ClusterCommand::BrokerConfig(_) | ClusterCommand::Bootstrap(_) => {
            unreachable!("handled before connecting")
        }
    };
    client.disconnect().await;
    print(&text)
}

/// What `cluster remove` says once the hub forgot the cluster.
fn removed_text(cluster: &ClusterView) -> String {
    format!(
        "cluster {} removed: its key and certificate are revoked and the hub forgot it; its agent \
         can come back only by joining again (`ocm-edge token create`, then `ocm-edge cluster \
         accept`)\n",
        cluster.name
    )
}

/// Waits until the hub has forgotten `removing` (its answer to a get is NotFound), for at most
/// `timeout`, asking once a second.
///
/// # Errors
/// [`CliError::Usage`] when it is still there at the end, saying how many works are left and
/// what to do.
async fn wait_removed(
    client: &crate::client::AdminClient,
    removing: &ClusterView,
    timeout: std::time::Duration,
) -> Result<String, CliError> {
    use ocm_edge_schemas::admin::AdminErrorKind;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match client.get_cluster(&removing.name).await {
            Err(e) if e.hub_kind() == Some(AdminErrorKind::NotFound) => {
                return Ok(removed_text(removing));
            }
            Err(e) => return Err(e.into()),
            Ok(view) => view,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::Usage(format!(
                "cluster {name} is still being removed after {secs} s: its agent has not \
                 confirmed {works} work(s) removed (is it connected? `ocm-edge cluster get {name}` \
                 shows its availability). Wait longer with --wait-timeout, or run `ocm-edge \
                 cluster remove {name} --force` to forget it without its agent (what it applied \
                 stays on the cluster)",
                name = removing.name,
                secs = timeout.as_secs(),
                works = last.works,
            )));
        }
        tokio::time::sleep_until(
            (tokio::time::Instant::now() + std::time::Duration::from_secs(1)).min(deadline),
        )
        .await;
    }
}

/// What `cluster accept` says: the state, the labels taken, and the set the agent asked for
/// when the cluster is not in it (a cluster never chooses its set).
pub fn accepted_text(cluster: &ClusterView) -> String {
    let mut text = format!(
        "cluster {} accepted (state {})\nlabels: {}\n",
        cluster.name,
        cluster.state,
        crate::output::labels_text(&cluster.labels)
    );
    let asked = cluster.reported_labels.get(LABEL_CLUSTER_SET);
    if let Some(asked) = asked.filter(|a| cluster.labels.get(LABEL_CLUSTER_SET) != Some(*a)) {
        text.push_str(&format!(
            "its agent asked for cluster set {asked:?}, which a cluster cannot choose: \
             `ocm-edge clusterset set {asked} --clusters {}` puts it there\n",
            cluster.name
        ));
    }
    text
}

/// `k=v` (set) and `k-` (remove) arguments, in the style of `kubectl label`.
///
/// # Errors
/// [`CliError::Usage`] for an argument that is neither, naming it.
pub fn label_changes(
    args: &[String],
) -> Result<(std::collections::BTreeMap<String, String>, Vec<String>), CliError> {
    let mut set = std::collections::BTreeMap::new();
    let mut remove = Vec::new();
    for arg in args {
        if let Some((k, v)) = arg.split_once('=') {
            set.insert(k.to_owned(), v.to_owned());
        } else if let Some(k) = arg.strip_suffix('-').filter(|k| !k.is_empty()) {
            remove.push(k.to_owned());
        } else {
            return Err(CliError::Usage(format!(
                "{arg:?} is not a label change: give key=value to set a label or key- to remove one"
            )));
        }
    }
    Ok((set, remove))
}

/// `key[=value]:Effect` (add) and `key-` (remove) arguments, in the style of `kubectl taint`.
///
/// # Errors
/// [`CliError::Usage`] for an argument that is neither, or an unknown effect, naming it.
pub fn taint_changes(
    args: &[String],
) -> Result<(Vec<ocm_edge_schemas::api::cluster::Taint>, Vec<String>), CliError> {
    use ocm_edge_schemas::api::cluster::{Taint, TaintEffect};
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for arg in args {
        if let Some((key_value, effect)) = arg.rsplit_once(':') {
            let Some(effect) = TaintEffect::ALL.into_iter().find(|e| e.as_str() == effect) else {
                return Err(CliError::Usage(format!(
                    "{arg:?}: unknown taint effect {effect:?}; use NoSelect, PreferNoSelect or NoSelectIfNew"
                )));
            };
            let (key, value) = key_value.split_once('=').unwrap_or((key_value, ""));
            add.push(Taint {
                key: key.to_owned(),
                value: value.to_owned(),
                effect,
                time_added: None,
            });
        } else if let Some(k) = arg.strip_suffix('-').filter(|k| !k.is_empty()) {
            remove.push(k.to_owned());
        } else {
            return Err(CliError::Usage(format!(
                "{arg:?} is not a taint change: give key[=value]:Effect to add a taint or key- to remove one"
            )));
        }
    }
    Ok((add, remove))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(data_dir: &std::path::Path, name: &str) -> BrokerConfigArgs {
        BrokerConfigArgs {
            name: name.to_owned(),
            broker_host: "hub.example:8883".into(),
            source: "ocm-edge".into(),
            days: 365,
            out: "-".into(),
            data: crate::DataDirArg {
                data_dir: data_dir.to_owned(),
            },
        }
    }

    #[test]
    fn broker_config_is_what_ocms_sdk_reads_with_this_clusters_password_and_topics() {
        let dir = tempfile::tempdir().unwrap();
        // Not a hub's data directory yet: said, nothing written.
        let e = broker_config(&args(dir.path(), "ocm-1")).unwrap_err();
        assert!(matches!(e, CliError::Hub(_)), "{e}");
        let pki =
            ocm_edge_hub::pki::HubPki::load_or_create(&dir.path().join("pki"), chrono::Utc::now())
                .unwrap();
        let text = broker_config(&args(dir.path(), "ocm-1")).unwrap();
        let config: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        let tokens =
            ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(dir.path()).unwrap();
        assert_eq!(config["brokerHost"], "hub.example:8883");
        assert_eq!(config["username"], "ocm-1");
        assert_eq!(config["password"], tokens.cluster_password("ocm-1"));
        assert_ne!(config["password"], tokens.cluster_password("ocm-2"));
        let decoded = |field: &str| {
            use base64::Engine as _;
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(config[field].as_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        };
        assert_eq!(
            decoded("caData"),
            std::fs::read_to_string(pki.ca_file()).unwrap()
        );
        assert!(decoded("clientCertData").starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(decoded("clientKeyData").starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_eq!(
            config["topics"],
            serde_json::json!({
                "sourceEvents": "sources/ocm-edge/consumers/ocm-1/sourceevents",
                "agentEvents": "sources/ocm-edge/consumers/ocm-1/agentevents",
                "sourceBroadcast": "sources/ocm-edge/sourcebroadcast",
                "agentBroadcast": "sources/ocm-1/agentbroadcast",
            })
        );
        assert!(text.contains("--cloudevents-client-id=ocm-1"), "{text}");
        let e = broker_config(&args(dir.path(), "Not_A_Name")).unwrap_err();
        assert!(matches!(e, CliError::Usage(_)), "{e}");
    }
}
