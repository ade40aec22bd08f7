//! `rmqtt-node -f rmqtt.toml`: one node of an rmqtt broker cluster, as `rmqttd` would run it with
//! the same configuration files, with only the plugins ocm-edge needs compiled in: the cluster
//! (rmqtt-cluster-broadcast: every node forwards publishes and shared-subscription choices to the
//! others over gRPC), logins and topic rules (rmqtt-acl), retained messages (dashboards) and
//! shared subscriptions (hub intakes).
//!
//! Reads the rmqtt.toml given with `-f` (node id, gRPC address, TCP listeners, plugin directory)
//! and the plugin files in that directory, like rmqttd. Prints `ready` on stdout once its
//! listeners are bound; stops on Ctrl-C (tests kill it).

use clap::Parser;
use rmqtt::args::CommandArgs;
use rmqtt::context::ServerContext;
use rmqtt::net::Builder;
use rmqtt::node::Node;
use rmqtt::server::MqttServer;
use rmqtt_conf::listener::ListenerInner;
use rmqtt_conf::{Options, Settings};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let conf = Settings::init(Options::parse())?;
    let node = Node::new(
        conf.node.id,
        conf.node.busy.loadavg,
        conf.node.busy.cpuloadavg,
        conf.node.busy.update_interval,
    );
    let scx = ServerContext::new()
        .args(CommandArgs {
            node_id: conf.opts.node_id,
            plugins_default_startups: conf.opts.plugins_default_startups.clone(),
            node_grpc_addrs: conf.opts.node_grpc_addrs.clone(),
            raft_peer_addrs: conf.opts.raft_peer_addrs.clone(),
            raft_leader_id: conf.opts.raft_leader_id,
        })
        .node(node)
        .task_exec_workers(conf.task.exec_workers)
        .task_exec_queue_max(conf.task.exec_queue_max)
        .busy_check_enable(conf.node.busy.check_enable)
        .busy_handshaking_limit(conf.node.busy.handshaking)
        .mqtt_max_sessions(conf.mqtt.max_sessions)
        .plugins_config_dir(conf.plugins.dir.as_str())
        .build()
        .await;
    scx.node.start_grpc_server(
        scx.clone(),
        conf.rpc.server_addr,
        conf.rpc.reuseaddr,
        conf.rpc.reuseport,
    );
    rmqtt_acl::register(&scx, true, false).await?;
    rmqtt_retainer::register(&scx, true, false).await?;
    rmqtt_shared_subscription::register(&scx, true, false).await?;
    rmqtt_cluster_broadcast::register(&scx, true, true).await?;

    let mut server = MqttServer::new(scx);
    for l in conf.listeners.tcps.values() {
        server = server.listener(listener(l).bind()?.tcp()?);
    }
    for l in conf.listeners.tlss.values() {
        let tls = listener(l)
            .tls_cert(l.cert.clone())
            .tls_key(l.key.clone())
            .tls_client_ca_certs(l.client_ca_certs.clone())
            .tls_cross_certificate(l.cross_certificate)
            .cert_cn_as_username(l.cert_cn_as_username);
        server = server.listener(tls.bind()?.tls()?);
    }
    println!("ready");
    tokio::select! {
        r = server.build().run() => r?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}

/// The listener a `[listener.tcp.NAME]` or `[listener.tls.NAME]` section describes (the settings ocm-edge relies on).
fn listener(l: &ListenerInner) -> Builder {
    Builder::new()
        .name(&l.name)
        .laddr(l.addr)
        .max_connections(l.max_connections)
        .max_handshaking_limit(l.max_handshaking_limit)
        .max_packet_size(l.max_packet_size.as_u32())
        .backlog(l.backlog)
        .nodelay(l.nodelay)
        .reuseaddr(l.reuseaddr)
        .reuseport(l.reuseport)
        .allow_anonymous(l.allow_anonymous)
        .min_keepalive(l.min_keepalive)
        .max_keepalive(l.max_keepalive)
        .allow_zero_keepalive(l.allow_zero_keepalive)
        .keepalive_backoff(l.keepalive_backoff)
        .max_inflight(l.max_inflight)
        .handshake_timeout(l.handshake_timeout)
        .max_mqueue_len(l.max_mqueue_len)
        .mqueue_rate_limit(l.mqueue_rate_limit.0, l.mqueue_rate_limit.1)
        .max_clientid_len(l.max_clientid_len)
        .max_qos_allowed(l.max_qos_allowed)
        .max_topic_levels(l.max_topic_levels)
        .session_expiry_interval(l.session_expiry_interval)
        .max_session_expiry_interval(l.max_session_expiry_interval)
        .message_retry_interval(l.message_retry_interval)
        .message_expiry_interval(l.message_expiry_interval)
        .max_subscriptions(l.max_subscriptions)
        .max_topic_aliases(l.max_topic_aliases)
        .limit_subscription(l.limit_subscription)
        .idle_timeout(l.idle_timeout)
}
