//! A whole fleet in one test process: a broker that outlives everything, a hub that can be stopped
//! and restarted on the same data dir, N agents with the simulated cluster, and an admin client.
//!
//! ```no_run
//! # async fn example() {
//! use ocm_edge_tests::fleet::Fleet;
//! let mut fleet = Fleet::start().await;
//! fleet.agent("c1").label("env", "prod").start().await;
//! fleet.accept("c1").await;
//! # }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use ocm_edge_mqtt::TlsFiles;
use ocm_edge_schemas::api::cluster::LABEL_CLUSTER_SET;
use std::time::Duration;

use ocm_edge_agent::{
    AgentConfig, AgentCounters, AgentHandle, ApplierConfig, SimControl, start_agent,
};
use ocm_edge_cli::client::{AdminClient, ConnectOptions};
use ocm_edge_hub::admin::users::ADMIN_CREDENTIALS;
use ocm_edge_hub::{BrokerConfig, HubConfig, HubHandle, start_hub};
use ocm_edge_schemas::admin::{
    ClusterState, ClusterView, CreateWork, HubStats, ReplicaSetView, WorkView, WorkWritten,
};
use serde_json::Value;

use crate::broker::TestBroker;
use crate::wait::{WaitTimeout, wait_for};

/// Default bound for anything the fleet waits on (generous for a loaded 2-core CI machine;
/// the awaited events normally take well under a second).
pub const WAIT: Duration = Duration::from_secs(30);
/// Simulated Deployments become ready this long after they change.
pub const SIM_READY_DELAY: Duration = Duration::from_millis(300);
/// Agents reconcile (and correct drift) this often in tests.
pub const RECONCILE_INTERVAL: Duration = Duration::from_millis(500);

/// Options shared by every agent of a fleet, and the hub's.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Source id of the hub and the agents.
    pub source_id: String,
    /// Simulated ready delay of the agents.
    pub ready_delay: Duration,
    /// Reconcile interval of the agents.
    pub reconcile_interval: Duration,
    /// MQTT keepalive of the agents.
    pub keepalive: Duration,
    /// Lease duration announced by the agents.
    pub lease_duration_seconds: i32,
    /// MQTT sessions the hub takes agent events on (`HubConfig::intakes`).
    pub hub_intakes: usize,
    /// Every party logs in with a username and [`password_of`] it (a broker that wants
    /// passwords): the hub as [`HUB_USER`], the admin client as [`OPERATOR_USER`], each agent
    /// as its cluster name.
    pub logins: bool,
    /// The CA every party trusts for an `mqtts://` broker (the system's roots when `None`).
    pub broker_ca_file: Option<PathBuf>,
    /// The hub runs its own embedded broker with its defaults, as `ocm-edge hub` does: TLS with
    /// the hub's CA, and logins proven with keys (agents their own, the admin client the first
    /// admin credential). No separate broker then; the hub keeps its port across restarts.
    pub hub_broker: bool,
    /// The hub's MQTT keepalive (`HubConfig::keepalive`); `None`: the hub's default.
    pub hub_keepalive: Option<Duration>,
    /// How often the hub's embedded broker checks logins again (`HubConfig::login_recheck`);
    /// `None`: the hub's default (30 s).
    pub hub_login_recheck: Option<Duration>,
    /// How long the admin client waits for the broker and the hub.
    pub admin_timeout: Duration,
}

/// The hub's broker username when [`FleetOptions::logins`] is set.
pub const HUB_USER: &str = "ocm-edge-hub";
/// The admin client's broker username when [`FleetOptions::logins`] is set.
pub const OPERATOR_USER: &str = "ocm-edge-operator";

/// The test password of broker user `user`.
pub fn password_of(user: &str) -> String {
    format!("{user}-secret")
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            source_id: "ocm-edge".into(),
            ready_delay: SIM_READY_DELAY,
            reconcile_interval: RECONCILE_INTERVAL,
            keepalive: Duration::from_secs(5),
            lease_duration_seconds: 5,
            hub_intakes: 1,
            logins: false,
            broker_ca_file: None,
            hub_broker: false,
            hub_keepalive: Some(Duration::from_secs(5)),
            // Lapsed logins (a revoked join token or credential) are dropped within a second
            // rather than the default 30 s, so tests wait on it with their usual bound.
            hub_login_recheck: Some(Duration::from_millis(500)),
            admin_timeout: ocm_edge_cli::client::DEFAULT_TIMEOUT,
        }
    }
}

impl FleetOptions {
    /// These options with the hub on its own defaults (keepalive, login re-checks) rather than
    /// the harness's short ones, as `ocm-edge hub` runs.
    #[must_use]
    pub fn hub_defaults(mut self) -> Self {
        self.hub_keepalive = None;
        self.hub_login_recheck = None;
        self
    }
}

/// A fleet: broker, hub, agents, admin client, all under one temporary directory.
#[derive(Debug)]
pub struct Fleet {
    broker_url: String,
    // Keeps the broker running for the fleet's life (dropping it stops the broker).
    _broker: Option<TestBroker>,
    dir: tempfile::TempDir,
    opts: FleetOptions,
    hub: Option<HubHandle>,
    agents: BTreeMap<String, RunningAgent>,
    admin: tokio::sync::OnceCell<AdminClient>,
    /// The join token agents get with [`FleetOptions::hub_broker`].
    join_token: Option<String>,
}

#[derive(Debug)]
struct RunningAgent {
    cfg: AgentConfig,
    handle: Option<AgentHandle>,
}

/// Builds one agent of a fleet: `fleet.agent("c1").label("env", "prod").start().await`.
#[derive(Debug)]
pub struct AgentBuilder<'f> {
    fleet: &'f mut Fleet,
    cfg: AgentConfig,
}

impl AgentBuilder<'_> {
    /// Adds a label to the join request.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.cfg.labels.insert(key.into(), value.into());
        self
    }

    /// Adds a cluster claim.
    pub fn claim(mut self, key: &str, value: &str) -> Self {
        self.cfg.claims.insert(key.into(), value.into());
        self
    }

    /// Changes any other config field.
    pub fn configure(mut self, change: impl FnOnce(&mut AgentConfig)) -> Self {
        change(&mut self.cfg);
        self
    }

    /// Starts the agent (it connects and asks to join on its own).
    ///
    /// # Panics
    /// When the agent does not start (bad config or data dir): a harness failure.
    pub async fn start(self) {
        let name = self.cfg.cluster_name.clone();
        let handle = start_agent(self.cfg.clone())
            .await
            .unwrap_or_else(|e| panic!("agent {name} does not start: {e}"));
        self.fleet.agents.insert(
            name,
            RunningAgent {
                cfg: self.cfg,
                handle: Some(handle),
            },
        );
    }
}

impl Fleet {
    /// A fleet with default options: a fresh embedded broker and a hub on it, no agents yet.
    pub async fn start() -> Fleet {
        Self::start_with(FleetOptions::default()).await
    }

    /// A fleet with `opts`: a fresh embedded broker and a hub on it, no agents yet.
    ///
    /// # Panics
    /// When the broker or hub does not start.
    pub async fn start_with(opts: FleetOptions) -> Fleet {
        if opts.hub_broker {
            let mut fleet = Self::on_broker(String::new(), opts);
            fleet.start_hub().await;
            return fleet;
        }
        let broker = TestBroker::start_async().await;
        let mut fleet = Self::on_broker(broker.url(), opts);
        fleet._broker = Some(broker);
        fleet.start_hub().await;
        fleet
    }

    /// A fleet on an already running broker (e.g. Mosquitto); no hub started yet.
    pub fn on_broker(broker_url: String, opts: FleetOptions) -> Fleet {
        Fleet {
            broker_url,
            _broker: None,
            dir: tempfile::tempdir().expect("temporary directory"),
            opts,
            hub: None,
            agents: BTreeMap::new(),
            admin: tokio::sync::OnceCell::new(),
            join_token: None,
        }
    }

    /// `mqtt://127.0.0.1:PORT` of the broker.
    pub fn broker_url(&self) -> &str {
        &self.broker_url
    }

    /// The fleet's options.
    pub fn options(&self) -> &FleetOptions {
        &self.opts
    }

    /// The hub's config (data dir under the fleet's directory, external broker).
    pub fn hub_config(&self) -> HubConfig {
        let mut cfg = HubConfig::new(self.hub_dir());
        cfg.broker = if self.opts.hub_broker {
            // The port of the first start on every restart (agents keep their URL).
            let listen = ocm_edge_mqtt::BrokerUrl::parse(&self.broker_url)
                .ok()
                .and_then(|u| format!("{}:{}", u.host(), u.port()).parse().ok())
                .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
            BrokerConfig::Embedded { listen }
        } else {
            BrokerConfig::External {
                url: self.broker_url.clone(),
            }
        };
        cfg.source_id = self.opts.source_id.clone();
        if let Some(keepalive) = self.opts.hub_keepalive {
            cfg.keepalive = keepalive;
        }
        cfg.intakes = self.opts.hub_intakes;
        cfg.broker_tls.ca_file = self.opts.broker_ca_file.clone();
        if let Some(recheck) = self.opts.hub_login_recheck {
            cfg.login_recheck = recheck;
        }
        if self.opts.logins {
            cfg.broker_username = Some(HUB_USER.to_owned());
            cfg.broker_password = Some(password_of(HUB_USER));
        }
        cfg
    }

    /// Starts the hub (again) on its data dir.
    ///
    /// # Panics
    /// When a hub is already running or it does not start.
    pub async fn start_hub(&mut self) {
        self.start_hub_with(|_| {}).await;
    }

    /// Starts the hub (again) on its data dir, with [`Fleet::hub_config`] changed by `change`.
    ///
    /// # Panics
    /// When a hub is already running or it does not start.
    pub async fn start_hub_with(&mut self, change: impl FnOnce(&mut HubConfig)) {
        assert!(self.hub.is_none(), "the hub is already running");
        let mut cfg = self.hub_config();
        change(&mut cfg);
        let hub = start_hub(cfg).await.expect("hub starts");
        if self.opts.hub_broker {
            self.broker_url = hub.broker_url();
            self.opts.broker_ca_file = hub.ca_file().map(std::path::Path::to_path_buf);
            if self.join_token.is_none() {
                self.join_token = Some(self.new_join_token(chrono::Duration::hours(24)).token);
            }
        }
        // Until it has subscribed, what agents publish does not reach it (the broker keeps nothing).
        tokio::time::timeout(WAIT, hub.subscribed())
            .await
            .expect("the hub subscribes to the broker");
        self.hub = Some(hub);
    }

    /// Stops the hub (its data dir stays); agents keep running.
    pub async fn stop_hub(&mut self) {
        if let Some(hub) = self.hub.take() {
            hub.shutdown().await.expect("hub stops cleanly");
        }
    }

    /// A new join token of the hub's data directory, valid for `ttl` from now (negative: expired).
    ///
    /// # Panics
    /// When the hub's token key cannot be read or made.
    pub fn new_join_token(
        &self,
        ttl: chrono::Duration,
    ) -> ocm_edge_hub::registration::join_token::JoinToken {
        ocm_edge_hub::registration::join_token::JoinTokens::load_or_create(&self.hub_dir())
            .and_then(|t| t.create(ttl, chrono::Utc::now()))
            .expect("a join token")
    }

    /// The join token the fleet's agents ask to join with (with [`FleetOptions::hub_broker`],
    /// once the hub has started).
    pub fn join_token(&self) -> Option<&str> {
        self.join_token.as_deref()
    }

    /// The fleet's directory: the hub's data directory (`hub/`) and the agents' (`agents/`)
    /// are in it, and tests may keep other files there.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The hub's data directory.
    pub fn hub_dir(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    /// The running hub.
    ///
    /// # Panics
    /// When no hub runs.
    pub fn hub(&self) -> &HubHandle {
        self.hub.as_ref().expect("the hub runs")
    }

    /// Whether a hub is running.
    pub fn hub_running(&self) -> bool {
        self.hub.is_some()
    }

    /// An agent config for `cluster` with the fleet's options (data dir under the fleet's directory).
    pub fn agent_config(&self, cluster: &str) -> AgentConfig {
        let mut cfg = AgentConfig::new(cluster, self.broker_url.clone(), self.agent_dir(cluster));
        cfg.source_id = self.opts.source_id.clone();
        cfg.applier = ApplierConfig::Sim {
            ready_delay: self.opts.ready_delay,
        };
        cfg.reconcile_interval = self.opts.reconcile_interval;
        cfg.keepalive = self.opts.keepalive;
        cfg.lease_duration_seconds = self.opts.lease_duration_seconds;
        // A join request sent before the hub listened is repeated soon (tests wait 30 s at most).
        cfg.join_retry = Duration::from_secs(1);
        cfg.reconnect_min = Duration::from_millis(100);
        cfg.reconnect_max = Duration::from_secs(1);
        cfg.tls.ca_file = self.opts.broker_ca_file.clone();
        // Pinned to the hub's CA, as `ocm-edge hub` tells users to (an agent configured before
        // the hub first started trusts the first hub CA it sees).
        cfg.hub_ca_pin = self.hub.as_ref().map(HubHandle::hub_ca_pin);
        // The hub's own broker wants a join token from a cluster it has not accepted.
        cfg.join_token = self.join_token.clone();
        if self.opts.logins {
            // The username defaults to the cluster name.
            cfg.broker_password = Some(password_of(cluster));
        }
        cfg
    }

    /// The real `ocm-edge-agent` binary for `cluster` on this fleet's broker (with its CA and
    /// join token when the hub runs its own broker), its store in `data_dir`; the caller adds
    /// `--applier` and whatever it tests. Nothing from the test run's environment configures it
    /// (no `OCM_EDGE_*` variable); killed when dropped.
    pub fn agent_command(
        &self,
        cluster: &str,
        data_dir: &std::path::Path,
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(crate::process::agent_binary());
        command
            .args(["--cluster-name", cluster, "--broker", &self.broker_url])
            .arg("--data-dir")
            .arg(data_dir);
        if let Some(ca) = &self.opts.broker_ca_file {
            command.arg("--broker-ca-file").arg(ca);
        }
        if let Some(token) = &self.join_token {
            command.args(["--token", token]);
        }
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("OCM_EDGE_") {
                command.env_remove(name);
            }
        }
        command.kill_on_drop(true);
        command
    }

    /// Where `cluster`'s agent serves its metrics (started with
    /// [`ocm_edge_agent::AgentConfig::metrics_listen`]).
    pub fn agent_metrics_addr(&self, cluster: &str) -> Option<std::net::SocketAddr> {
        self.running(cluster).metrics_addr()
    }

    /// The data dir of `cluster`'s agent.
    pub fn agent_dir(&self, cluster: &str) -> PathBuf {
        self.dir.path().join("agents").join(cluster)
    }

    /// Starts building an agent for `cluster`.
    pub fn agent(&mut self, cluster: &str) -> AgentBuilder<'_> {
        let cfg = self.agent_config(cluster);
        AgentBuilder { fleet: self, cfg }
    }

    /// Starts `cluster`'s agent with `labels`, accepts its cluster and waits until the hub sees
    /// it available.
    ///
    /// # Panics
    /// When any step does not happen within [`WAIT`].
    pub async fn start_accepted(&mut self, cluster: &str, labels: &[(&str, &str)]) {
        let mut agent = self.agent(cluster);
        for (k, v) in labels {
            agent = agent.label(k, v);
        }
        agent.start().await;
        // The agent sends them all, but a cluster never chooses its set: the operator does, at
        // acceptance.
        let set: BTreeMap<String, String> = labels
            .iter()
            .filter(|(k, _)| *k == LABEL_CLUSTER_SET)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.accept_labelled(cluster, set).await;
        self.wait_cluster(cluster, WAIT, "available", is_available)
            .await;
    }

    /// Starts agents for every name, with the fleet's defaults.
    pub async fn start_agents(&mut self, clusters: &[&str]) {
        for c in clusters {
            self.agent(c).start().await;
        }
    }

    fn running(&self, cluster: &str) -> &AgentHandle {
        self.agents
            .get(cluster)
            .and_then(|a| a.handle.as_ref())
            .unwrap_or_else(|| panic!("agent {cluster} is not running"))
    }

    /// The simulated cluster of `cluster`'s agent (valid across restarts of the agent only until
    /// it stops: take it again after a restart).
    pub fn sim(&self, cluster: &str) -> SimControl {
        self.running(cluster)
            .sim()
            .unwrap_or_else(|| panic!("agent {cluster} does not use the sim applier"))
    }

    /// The agent's counters right now.
    pub fn counters(&self, cluster: &str) -> AgentCounters {
        self.running(cluster).counters().borrow().clone()
    }

    /// Stops `cluster`'s agent gracefully (its data dir stays).
    pub async fn stop_agent(&mut self, cluster: &str) {
        let agent = self
            .agents
            .get_mut(cluster)
            .unwrap_or_else(|| panic!("no agent {cluster}"));
        if let Some(h) = agent.handle.take() {
            h.shutdown()
                .await
                .unwrap_or_else(|e| panic!("agent {cluster} stopped with an error: {e}"));
        }
    }

    /// Stops `cluster`'s agent abruptly, like a killed process (the broker publishes its will).
    pub async fn kill_agent(&mut self, cluster: &str) {
        let agent = self
            .agents
            .get_mut(cluster)
            .unwrap_or_else(|| panic!("no agent {cluster}"));
        if let Some(h) = agent.handle.take() {
            h.kill().await;
        }
    }

    /// Starts `cluster`'s agent again with the same config and data dir.
    ///
    /// # Panics
    /// When it is running or does not start.
    pub async fn restart_agent(&mut self, cluster: &str) {
        let agent = self
            .agents
            .get_mut(cluster)
            .unwrap_or_else(|| panic!("no agent {cluster}"));
        assert!(agent.handle.is_none(), "agent {cluster} is still running");
        let handle = start_agent(agent.cfg.clone())
            .await
            .unwrap_or_else(|e| panic!("agent {cluster} does not restart: {e}"));
        agent.handle = Some(handle);
    }

    /// The admin client (connected on first use; it talks to whichever hub is running).
    ///
    /// # Panics
    /// When it cannot connect to the broker.
    pub async fn admin(&self) -> &AdminClient {
        self.admin.get_or_init(|| self.new_admin()).await
    }

    /// The first admin credential, written by the hub's first start.
    pub fn admin_credentials(&self) -> std::path::PathBuf {
        self.hub_dir().join(ADMIN_CREDENTIALS)
    }

    /// A new admin client, connected like [`Fleet::admin`]'s (the fleet's broker login and CA,
    /// the first admin credential the hub wrote at its first start).
    ///
    /// # Panics
    /// When it cannot connect to the broker.
    pub async fn new_admin(&self) -> AdminClient {
        let connect = ConnectOptions {
            username: self.opts.logins.then(|| OPERATOR_USER.to_owned()),
            password: self.opts.logins.then(|| password_of(OPERATOR_USER)),
            tls: TlsFiles {
                ca_file: self.opts.broker_ca_file.clone(),
                ..TlsFiles::default()
            },
            credentials: Some(self.admin_credentials()),
            timeout: self.opts.admin_timeout,
        };
        AdminClient::connect_with(&self.broker_url, &self.opts.source_id, &connect)
            .await
            .expect("admin client connects to the broker")
    }

    /// Waits until the hub lists `cluster` in `state`.
    ///
    /// # Errors
    /// [`WaitTimeout`] after [`WAIT`].
    pub async fn wait_cluster_state(
        &self,
        cluster: &str,
        state: ClusterState,
    ) -> Result<ClusterView, WaitTimeout> {
        let admin = self.admin().await;
        wait_for(
            &format!("cluster {cluster} to be {state} at the hub"),
            WAIT,
            || async {
                admin
                    .get_cluster(cluster)
                    .await
                    .ok()
                    .filter(|c| c.state == state)
            },
        )
        .await
    }

    /// Waits until the hub's view of `cluster` satisfies `pred` (polling the admin API), within
    /// `bound`; returns that view.
    ///
    /// # Panics
    /// Naming `what` and the last view seen when it never holds; at once when the hub answers
    /// with an error (e.g. it does not know the cluster).
    pub async fn wait_cluster(
        &self,
        cluster: &str,
        bound: Duration,
        what: &str,
        pred: impl Fn(&ClusterView) -> bool,
    ) -> ClusterView {
        let admin = self.admin().await;
        let last = std::sync::Mutex::new(None);
        let pred = &pred;
        let last_ref = &last;
        let found = wait_for(&format!("cluster {cluster} {what}"), bound, || async move {
            let c = admin
                .get_cluster(cluster)
                .await
                .unwrap_or_else(|e| panic!("the hub cannot show cluster {cluster}: {e}"));
            let ok = pred(&c);
            *last_ref.lock().expect("not poisoned") = Some(c.clone());
            ok.then_some(c)
        })
        .await;
        found
            .unwrap_or_else(|e| panic!("{e}; last seen: {:#?}", last.lock().expect("not poisoned")))
    }

    /// Waits until `cluster` asked to join, then accepts it and waits for the agent to see it.
    ///
    /// # Panics
    /// When the cluster never asks to join or the accept fails.
    pub async fn accept(&self, cluster: &str) {
        self.accept_labelled(cluster, BTreeMap::new()).await;
    }

    /// Accepts `cluster` once it asked to join, setting `labels` (as `cluster accept --label`).
    ///
    /// # Panics
    /// When the hub refuses it or it does not become accepted in time.
    pub async fn accept_labelled(&self, cluster: &str, labels: BTreeMap<String, String>) {
        self.wait_cluster_state(cluster, ClusterState::Pending)
            .await
            .expect("join request reaches the hub");
        self.admin()
            .await
            .accept_cluster_labelled(cluster, labels, vec![], false)
            .await
            .expect("accept succeeds");
        self.wait_cluster_state(cluster, ClusterState::Accepted)
            .await
            .expect("accepted");
    }

    /// Accepts every cluster in `clusters`.
    pub async fn accept_all(&self, clusters: &[&str]) {
        for c in clusters {
            self.accept(c).await;
        }
    }

    /// Creates work `name` with `manifests` on `clusters`.
    ///
    /// # Panics
    /// When the hub refuses it.
    pub async fn create_work(
        &self,
        name: &str,
        clusters: &[&str],
        manifests: Vec<Value>,
    ) -> Vec<WorkWritten> {
        self.write_work(CreateWork {
            name: name.into(),
            clusters: clusters.iter().map(|c| c.to_string()).collect(),
            manifests,
            ..CreateWork::default()
        })
        .await
    }

    /// Creates or (with `overwrite`) updates a work.
    ///
    /// # Panics
    /// When the hub refuses it.
    pub async fn write_work(&self, work: CreateWork) -> Vec<WorkWritten> {
        let name = work.name.clone();
        self.admin()
            .await
            .create_work(work)
            .await
            .unwrap_or_else(|e| panic!("hub refuses work {name}: {e}"))
    }

    /// Waits until the hub's view of work `name` on `cluster` satisfies `pred`; returns that view.
    ///
    /// # Errors
    /// [`WaitTimeout`] after [`WAIT`].
    pub async fn wait_work(
        &self,
        cluster: &str,
        name: &str,
        what: &str,
        pred: impl Fn(&WorkView) -> bool,
    ) -> Result<WorkView, WaitTimeout> {
        let admin = self.admin().await;
        let pred = &pred;
        wait_for(
            &format!("work {cluster}/{name}: {what}"),
            WAIT,
            || async move { admin.get_work(cluster, name).await.ok().filter(|w| pred(w)) },
        )
        .await
    }

    /// Waits until the hub's view of ManifestWorkReplicaSet `namespace/name` (its rollout)
    /// satisfies `pred`; returns that view.
    ///
    /// # Errors
    /// [`WaitTimeout`] after [`WAIT`].
    pub async fn wait_replica_set(
        &self,
        namespace: &str,
        name: &str,
        what: &str,
        pred: impl Fn(&ReplicaSetView) -> bool,
    ) -> Result<ReplicaSetView, WaitTimeout> {
        let admin = self.admin().await;
        let pred = &pred;
        wait_for(
            &format!("ManifestWorkReplicaSet {namespace}/{name}: {what}"),
            WAIT,
            || async move {
                admin
                    .get_replica_set(Some(namespace), name)
                    .await
                    .ok()
                    .filter(|v| pred(v))
            },
        )
        .await
    }

    /// Waits until the hub reports the work's condition `type_` with status True.
    ///
    /// # Errors
    /// [`WaitTimeout`] after [`WAIT`].
    pub async fn wait_work_condition(
        &self,
        cluster: &str,
        name: &str,
        type_: &str,
    ) -> Result<WorkView, WaitTimeout> {
        self.wait_work(cluster, name, &format!("{type_}=True at the hub"), |w| {
            has_true_condition(&w.conditions, type_)
        })
        .await
    }

    /// Waits until `pred` holds on `cluster`'s simulated cluster.
    ///
    /// # Errors
    /// [`WaitTimeout`] after [`WAIT`].
    pub async fn wait_sim<T>(
        &self,
        cluster: &str,
        what: &str,
        pred: impl Fn(&SimControl) -> Option<T>,
    ) -> Result<T, WaitTimeout> {
        let sim = self.sim(cluster);
        let pred = &pred;
        let sim = &sim;
        wait_for(
            &format!("{cluster}'s simulated cluster: {what}"),
            WAIT,
            || async move { pred(sim) },
        )
        .await
    }

    /// Takes `cluster`'s simulated API server down and waits until its agent has failed to apply
    /// (from then on its work statuses say Applied=False).
    ///
    /// # Panics
    /// When the agent never tries to apply within [`WAIT`].
    pub async fn take_api_server_down(&self, cluster: &str) {
        let before = self.counters(cluster).apply_errors;
        self.sim(cluster).set_api_healthy(false);
        crate::wait::wait_until(&format!("{cluster}'s agent to fail applying"), WAIT, || {
            let n = self.counters(cluster).apply_errors;
            async move { n > before }
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }

    /// The hub's counters.
    ///
    /// # Panics
    /// When the hub does not answer.
    pub async fn stats(&self) -> HubStats {
        self.admin().await.stats().await.expect("hub answers stats")
    }

    /// Stops every running agent gracefully.
    ///
    /// # Panics
    /// When an agent stopped with an error (its task failed): [`Fleet::shutdown`] does not look.
    pub async fn stop_agents(&mut self) {
        let names: Vec<String> = self.agents.keys().cloned().collect();
        for name in names {
            self.stop_agent(&name).await;
        }
    }

    /// Stops everything (agents gracefully, then the hub).
    pub async fn shutdown(mut self) {
        let names: Vec<String> = self.agents.keys().cloned().collect();
        for n in names {
            if let Some(h) = self.agents.get_mut(&n).and_then(|a| a.handle.take()) {
                let _ = h.shutdown().await;
            }
        }
        if let Some(admin) = self.admin.take() {
            admin.disconnect().await;
        }
        self.stop_hub().await;
    }
}

/// Whether `conditions` hold `type_` with status False.
pub fn has_false_condition(
    conditions: &[ocm_edge_schemas::api::meta::Condition],
    type_: &str,
) -> bool {
    conditions.iter().any(|c| {
        c.type_ == type_ && c.status == ocm_edge_schemas::api::meta::ConditionStatus::False
    })
}

/// Whether `conditions` hold `type_` with status True.
pub fn has_true_condition(
    conditions: &[ocm_edge_schemas::api::meta::Condition],
    type_: &str,
) -> bool {
    ocm_edge_schemas::api::meta::is_condition_true(conditions, type_)
}

/// Whether the hub sees `c` available: ManagedClusterConditionAvailable True and no taint.
pub fn is_available(c: &ClusterView) -> bool {
    c.available
        .as_ref()
        .is_some_and(|a| a.status == ocm_edge_schemas::api::meta::ConditionStatus::True)
        && c.taints.is_empty()
}

/// Whether the hub sees `c` unreachable: Available Unknown and tainted unreachable.
pub fn is_unreachable(c: &ClusterView) -> bool {
    c.available
        .as_ref()
        .is_some_and(|a| a.status == ocm_edge_schemas::api::meta::ConditionStatus::Unknown)
        && c.taints
            .iter()
            .any(|t| t.key == ocm_edge_schemas::api::cluster::TAINT_UNREACHABLE)
}
