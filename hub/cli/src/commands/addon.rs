//! `ocm-edge addon list|get|create|enable|disable|approve|broker-config`: OCM's add-ons (clusteradm's
//! `addon create`, `addon enable` and `addon disable`). Add-ons, their templates and configs may
//! also be applied with `ocm-edge apply -f`.

use chrono::{DateTime, Utc};
use clap::Subcommand;

use crate::output::{OutputFormat, ago, new_table, print, to_document};
use crate::{CliError, GlobalArgs};
use ocm_edge_schemas::admin::AddOnView;
use ocm_edge_schemas::api::addon::{
    CONDITION_AVAILABLE, CONDITION_CONFIGURED, CONDITION_MANIFEST_APPLIED, CONDITION_PROGRESSING,
    CONDITION_REGISTRATION_APPLIED,
};
use ocm_edge_schemas::api::meta::find_condition;

/// Add-on commands.
#[derive(Debug, Subcommand)]
pub enum AddonCommand {
    /// List the add-ons, with on how many clusters each is enabled and available.
    List {
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Show an add-on: its install strategy, configs and one row per cluster (installed,
    /// configured, applied, available, config).
    Get {
        /// Add-on name.
        name: String,
        /// Only this cluster.
        #[arg(long)]
        cluster: Option<String>,
        #[arg(short, long, value_enum, default_value_t)]
        output: OutputFormat,
    },
    /// Enable add-ons on clusters (a ManagedClusterAddOn in each cluster's namespace).
    Enable {
        /// Add-on names, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        names: Vec<String>,
        /// Clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        clusters: Vec<String>,
        /// Where the add-on's agent is installed (unless its AddOnDeploymentConfig says)
        /// [default: open-cluster-management-agent-addon].
        #[arg(short, long)]
        namespace: Option<String>,
    },
    /// Disable add-ons on clusters: their agents' works are deleted from the clusters.
    Disable {
        /// Add-on names, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        names: Vec<String>,
        /// Clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        clusters: Vec<String>,
    },
    /// Approve the MQTT identities the agents of clusters asked for an add-on whose approval is
    /// Manual (its annotation edge.open-cluster-management.io/registration-approval: Manual).
    Approve {
        /// Add-on names, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        names: Vec<String>,
        /// Clusters, comma separated.
        #[arg(long, required = true, value_delimiter = ',')]
        clusters: Vec<String>,
    },
    /// Create an add-on from its agent's manifests (clusteradm's `addon create`): an
    /// AddOnTemplate NAME rendering them per cluster ({{CLUSTER_NAME}}, {{INSTALL_NAMESPACE}},
    /// a config's variables) and a ClusterManagementAddOn NAME using it, installed by hand
    /// (`addon enable`). Apply the same objects with `apply -f` for anything more.
    Create(CreateArgs),
    /// Write the MQTT config of an add-on's hub-side controller: the hub's broker, its username
    /// (`addons/NAME/controller`), password and CA, and the topics it may use (those of its
    /// add-on on every cluster). Run it on the hub's machine; the file holds a secret (0600).
    BrokerConfig(BrokerConfigArgs),
}

/// `addon create` options.
#[derive(Debug, Clone, clap::Args)]
pub struct CreateArgs {
    /// Add-on name (a DNS label).
    pub name: String,
    /// The agent's manifests: a file (YAML or JSON, multi-document), a directory, or - for
    /// standard input. An AddOnTemplate there gives its agentSpec and registration.
    #[arg(long, short = 'f', alias = "filename", value_name = "FILE|DIR")]
    pub template: std::path::PathBuf,
    /// Give the add-on's agent its own MQTT identity on each cluster (the Secret
    /// NAME-hub-mqtt in its install namespace), as clusteradm's --hub-registration.
    #[arg(long)]
    pub hub_registration: bool,
    /// The add-on's default AddOnDeploymentConfig (apply it first): the values of the
    /// manifests' own variables, its install namespace, node placement, mirrors, proxy.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub config: Option<String>,
    /// Replace an add-on of that name (its template and settings, on every cluster it is on).
    #[arg(long)]
    pub overwrite: bool,
}

/// `addon broker-config` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BrokerConfigArgs {
    /// Add-on name.
    pub name: String,
    /// The broker as the controller reaches it (`host:port`; the hub's embedded broker listens
    /// with TLS on 8883).
    #[arg(long, value_name = "HOST:PORT")]
    pub broker_host: String,
    /// Where to write the file (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE", default_value = "-")]
    pub out: std::path::PathBuf,
    #[command(flatten)]
    pub data: crate::DataDirArg,
}

/// The MQTT config of add-on `args.name`'s hub-side controller (YAML): `broker`, `username`,
/// `password`, `clientId`, `caData` (the hub's CA, PEM), `topics`.
///
/// # Errors
/// [`CliError::Usage`] for a name that is no DNS label; [`CliError::Hub`] when the data directory
/// has no hub CA or token key.
pub fn broker_config(args: &BrokerConfigArgs) -> Result<String, CliError> {
    use ocm_edge_schemas::wire::addon_identity;
    check_name(&args.name)?;
    let (_, tokens, ca) = super::cluster::hub_secrets(&args.data)?;
    let ca = String::from_utf8_lossy(&ca).into_owned();
    let username = addon_identity::controller_identity(&args.name);
    let config = serde_json::json!({
        "broker": format!("mqtts://{}", args.broker_host),
        "username": username,
        "password": tokens.addon_controller_password(&args.name),
        "clientId": username,
        "caData": ca,
        "topics": {
            "everyCluster": format!("addons/{}/clusters/+/#", args.name),
            "oneCluster": addon_identity::identity(&args.name, "CLUSTER") + "/#",
            "scores": addon_identity::scores_topic(&args.name, "CLUSTER"),
        },
    });
    serde_yaml_ng::to_string(&config).map_err(|e| CliError::Hub(e.to_string()))
}

/// An add-on name is a DNS label (it is a topic level and part of Secret and work names).
fn check_name(name: &str) -> Result<(), CliError> {
    if ocm_edge_schemas::wire::addon_identity::is_valid_label(name) {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "add-on name {name:?} is not a DNS label ([a-z0-9-], at most 63)"
        )))
    }
}

/// The AddOnTemplate and ClusterManagementAddOn `addon create` applies.
///
/// # Errors
/// [`CliError::Input`]-like errors for unreadable or invalid manifests, [`CliError::Usage`]
/// for a bad name.
pub fn create_objects(args: &CreateArgs) -> Result<Vec<serde_json::Value>, CliError> {
    use serde_json::json;
    check_name(&args.name)?;
    let loaded = crate::manifests::read_objects(&args.template)?;
    let given_template = loaded
        .iter()
        .find(|l| l.value.get("kind").and_then(|k| k.as_str()) == Some("AddOnTemplate"));
    let (agent_spec, mut registration) = match given_template {
        Some(t) => (
            t.value["spec"]["agentSpec"].clone(),
            t.value["spec"]
                .get("registration")
                .cloned()
                .unwrap_or_else(|| json!([])),
        ),
        None => {
            let manifests = crate::manifests::check_manifests(&args.template, &loaded)?;
            (json!({"workload": {"manifests": manifests}}), json!([]))
        }
    };
    if args.hub_registration && registration.as_array().is_none_or(Vec::is_empty) {
        registration = json!([{"type": "KubeClient"}]);
    }
    let mut default_configs = vec![json!({"group": "addon.open-cluster-management.io",
        "resource": "addontemplates", "name": args.name})];
    match args.config.as_deref().map(|c| c.split_once('/')) {
        Some(Some((namespace, name))) if !namespace.is_empty() && !name.is_empty() => {
            default_configs.push(json!({"group": "addon.open-cluster-management.io",
                "resource": "addondeploymentconfigs", "namespace": namespace, "name": name}));
        }
        Some(_) => {
            return Err(CliError::Usage(format!(
                "--config {:?} is not NAMESPACE/NAME (an AddOnDeploymentConfig)",
                args.config.as_deref().unwrap_or_default()
            )));
        }
        None => {
            // Without a config, only the built-in variables have values: say so before
            // anything reaches the hub.
            let spec: ocm_edge_schemas::api::work::ManifestWorkSpec =
                serde_json::from_value(agent_spec.clone()).map_err(|e| {
                    CliError::Usage(format!(
                        "{}: not an agent spec: {e}",
                        args.template.display()
                    ))
                })?;
            let own: Vec<String> = ocm_edge_hub::addon::render::variables_in(&spec)
                .into_iter()
                .filter(|v| !ocm_edge_hub::addon::render::BUILT_IN.contains(&v.as_str()))
                .map(|v| format!("{{{{{v}}}}}"))
                .collect();
            if !own.is_empty() {
                return Err(CliError::Usage(format!(
                    "the manifests use {}, which only an AddOnDeploymentConfig gives: apply one \
                     (customizedVariables) and name it with --config NAMESPACE/NAME",
                    own.join(", ")
                )));
            }
        }
    }
    Ok(vec![
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
            "metadata": {"name": args.name},
            "spec": {"addonName": args.name, "agentSpec": agent_spec, "registration": registration}}),
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn", "metadata": {"name": args.name},
            "spec": {"installStrategy": {"type": "Manual"},
                "defaultConfigs": default_configs}}),
    ])
}

fn status_of(conditions: &[ocm_edge_schemas::api::meta::Condition], type_: &str) -> String {
    find_condition(conditions, type_).map_or_else(|| "-".to_owned(), |c| c.status.to_string())
}

/// `addon get`'s text: the add-on, then a row per cluster.
pub fn addon_detail(a: &AddOnView, now: DateTime<Utc>) -> String {
    let mut out = format!("Add-on:      {}\n", a.name);
    if !a.display_name.is_empty() && a.display_name != a.name {
        out.push_str(&format!("Name:        {}\n", a.display_name));
    }
    if !a.description.is_empty() {
        out.push_str(&format!("Description: {}\n", a.description));
    }
    out.push_str(&format!("Install:     {}", a.install_strategy));
    if !a.placements.is_empty() {
        out.push_str(&format!(" ({})", a.placements.join(", ")));
    }
    out.push('\n');
    for c in &a.default_configs {
        out.push_str(&format!("Config:      {c}\n"));
    }
    for p in &a.progressions {
        out.push_str(&format!("Rollout:     {p}\n"));
    }
    if a.clusters.is_empty() {
        out.push_str(&format!(
            "Enabled on no cluster (`ocm-edge addon enable --names {} --clusters NAME`)\n",
            a.name
        ));
        return out;
    }
    let mut t = new_table([
        "CLUSTER",
        "INSTALLED BY",
        "NAMESPACE",
        "CONFIGURED",
        "APPLIED",
        "AVAILABLE",
        "SINCE",
        "PROGRESSING",
        "MQTT IDENTITY",
        "CONFIGS",
    ]);
    for row in &a.clusters {
        let available = find_condition(&row.conditions, CONDITION_AVAILABLE);
        t.add_row(vec![
            row.cluster.clone(),
            row.installed_by.clone(),
            row.namespace.clone(),
            status_of(&row.conditions, CONDITION_CONFIGURED),
            status_of(&row.conditions, CONDITION_MANIFEST_APPLIED),
            available.map_or_else(
                || "-".to_owned(),
                |c| format!("{} ({})", c.status, c.reason),
            ),
            available
                .and_then(|c| c.last_transition_time)
                .map_or_else(|| "-".to_owned(), |t| ago(t, now)),
            find_condition(&row.conditions, CONDITION_PROGRESSING)
                .map_or_else(|| "-".to_owned(), |c| c.reason.clone()),
            find_condition(&row.conditions, CONDITION_REGISTRATION_APPLIED).map_or_else(
                || "-".to_owned(),
                |c| {
                    if c.is_true() {
                        "bound".to_owned()
                    } else {
                        c.reason.clone()
                    }
                },
            ),
            row.configs.join(", "),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    // Why a cluster's add-on cannot be configured, in full (one waiting for its rollout is
    // not configured yet, and says so in PROGRESSING).
    for row in &a.clusters {
        if let Some(c) = find_condition(&row.conditions, CONDITION_PROGRESSING)
            .filter(|c| c.reason == "ConfigurationUnsupported")
        {
            out.push_str(&format!("{}: not configured: {}\n", row.cluster, c.message));
        }
    }
    out
}

/// Runs one add-on command.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, cmd: AddonCommand) -> Result<(), CliError> {
    if let AddonCommand::BrokerConfig(args) = &cmd {
        let text = broker_config(args)?;
        if args.out.as_os_str() == "-" {
            return print(&text);
        }
        ocm_edge_hub::pki::write_file(&args.out, &text, true)
            .map_err(|e| CliError::Hub(e.to_string()))?;
        return print(&format!(
            "wrote the MQTT config of the controller of add-on {} to {} (0600)\n",
            args.name,
            args.out.display()
        ));
    }
    // Everything is checked before connecting: bad input never reaches the hub.
    let created = match &cmd {
        AddonCommand::Create(args) => Some(create_objects(args)?),
        _ => None,
    };
    let client = global.connect().await?;
    let now = Utc::now();
    let text = match cmd {
        AddonCommand::List { output } => {
            let addons = client.list_addons().await?;
            match output {
                OutputFormat::Table if addons.is_empty() => {
                    "No add-ons yet: apply a ClusterManagementAddOn and its AddOnTemplate with \
                     `ocm-edge apply -f FILE`.\n"
                        .to_owned()
                }
                OutputFormat::Table => {
                    let mut t = new_table(["NAME", "INSTALL", "ENABLED", "AVAILABLE", "CONFIGS"]);
                    for a in &addons {
                        t.add_row(vec![
                            a.name.clone(),
                            a.install_strategy.clone(),
                            a.enabled.to_string(),
                            a.available.to_string(),
                            a.default_configs.join(", "),
                        ]);
                    }
                    format!("{t}\n")
                }
                format => to_document(&addons, format)?,
            }
        }
        AddonCommand::Get {
            name,
            cluster,
            output,
        } => {
            let a = client.get_addon(&name, cluster.as_deref()).await?;
            match output {
                OutputFormat::Table => addon_detail(&a, now),
                format => to_document(&a, format)?,
            }
        }
        AddonCommand::Enable {
            names,
            clusters,
            namespace,
        } => {
            client
                .switch_addons(true, names.clone(), clusters.clone(), namespace)
                .await?;
            format!(
                "enabled {} on {} (`ocm-edge addon get NAME` shows each cluster's state)\n",
                names.join(", "),
                clusters.join(", ")
            )
        }
        AddonCommand::Create(args) => {
            if !args.overwrite && client.get_addon(&args.name, None).await.is_ok() {
                return Err(CliError::Usage(format!(
                    "add-on {:?} exists: --overwrite replaces it on every cluster it is on \
                     (or change it with `ocm-edge apply -f`)",
                    args.name
                )));
            }
            let mut new_template = false;
            for object in created.unwrap_or_default() {
                let kind = object["kind"].as_str().unwrap_or_default().to_owned();
                match client.apply_object(object).await {
                    Ok(a) if kind == "AddOnTemplate" => {
                        new_template = a.outcome == ocm_edge_schemas::admin::WriteOutcome::Created;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        // All or nothing: the template this command made goes again.
                        if new_template {
                            client
                                .delete_object("AddOnTemplate", None, &args.name)
                                .await?;
                        }
                        return Err(e.into());
                    }
                }
            }
            format!(
                "created add-on {name} (AddOnTemplate and ClusterManagementAddOn {name}): `ocm-edge addon enable --names {name} --clusters NAME` installs it{}\n",
                if args.hub_registration {
                    "; its agent gets its own MQTT identity on each cluster"
                } else {
                    ""
                },
                name = args.name
            )
        }
        AddonCommand::BrokerConfig(_) => unreachable!("handled before connecting"),
        AddonCommand::Approve { names, clusters } => {
            client
                .approve_addons(names.clone(), clusters.clone())
                .await?;
            format!(
                "approved the MQTT identities of {} on {}\n",
                names.join(", "),
                clusters.join(", ")
            )
        }
        AddonCommand::Disable { names, clusters } => {
            client
                .switch_addons(false, names.clone(), clusters.clone(), None)
                .await?;
            format!(
                "disabled {} on {}: their agents' works are being deleted from the clusters\n",
                names.join(", "),
                clusters.join(", ")
            )
        }
    };
    client.disconnect().await;
    print(&text)
}
