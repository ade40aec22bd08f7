//! `ocm-edge delete KIND NAME [-n NS]`: cluster sets, bindings, placements, add-on scores,
//! ManifestWorkReplicaSets and add-on objects (works: `ocm-edge work delete`).

use clap::Args;

use crate::output::print;
use crate::{CliError, GlobalArgs};

/// `delete` arguments.
#[derive(Debug, Clone, Args)]
pub struct DeleteArgs {
    /// clusterset, clustersetbinding, placement, addonplacementscore, manifestworkreplicaset,
    /// clustermanagementaddon, managedclusteraddon, addontemplate or addondeploymentconfig.
    pub kind: String,
    /// Object name.
    pub name: String,
    /// Namespace of namespaced kinds [default: default].
    #[arg(short, long)]
    pub namespace: Option<String>,
}

/// Runs `delete`.
///
/// # Errors
/// See [`CliError`].
pub async fn run(global: &GlobalArgs, args: DeleteArgs) -> Result<(), CliError> {
    let client = global.connect().await?;
    let d = client
        .delete_object(&args.kind, args.namespace.as_deref(), &args.name)
        .await?;
    client.disconnect().await;
    let name = if d.namespace.is_empty() {
        d.name
    } else {
        format!("{}/{}", d.namespace, d.name)
    };
    print(&format!("{} {name} deleted\n", d.kind.to_lowercase()))
}
