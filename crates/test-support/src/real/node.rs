//! A real single-node Kubernetes where Pods run: [`RealKube`] (etcd + kube-apiserver with the
//! Node authorizer) plus containerd and runc (Debian's packages), kube-controller-manager,
//! kube-scheduler and the kubelet, all on loopback.
//!
//! ```text
//! let Some(tools) = node::require("real_rollout") else { return };
//! let node = RealNode::start(&tools);
//! node.import_image(&archive);               // a docker-archive, e.g. from `cargo xtask image`
//! node.kube().apply(&job);                   // a Pod with hostNetwork and a localhost/ image
//! ```
//!
//! **Nothing is ever pulled** (no registry is reachable, and a pull would be traffic to an
//! outside address), three ways: the controller-manager runs without the Deployment,
//! ReplicaSet, StatefulSet, DaemonSet and ReplicationController controllers (a test's workloads
//! stay objects; Jobs and CronJobs run); a ValidatingAdmissionPolicy denies every Pod whose
//! images do not start with `localhost/`; containerd sends every registry to a closed loopback
//! port. Images get in through [`RealNode::import_image`].
//!
//! **Loopback only:** no kube-proxy and no cluster DNS. A Pod that must reach the API server or
//! another test server runs with `hostNetwork: true` and connects to 127.0.0.1; an in-cluster
//! client gets `KUBERNETES_SERVICE_HOST=127.0.0.1` and `KUBERNETES_SERVICE_PORT=<api port>` in
//! its env ([`RealNode::in_cluster_env`]).
//!
//! **The machine is given back:** one node at a time per machine (a lock under `/run`, since the
//! bridge, the kubelet's iptables chains and the `kubepods` cgroups are machine-wide); every
//! process runs under the hard lifetime of [`ServerProcess`]; dropping the node deletes the Pods
//! while the kubelet still runs, stops the components, kills the container shims of this
//! containerd only, unmounts what is left under the node's folders, removes the bridge, the
//! kubelet's iptables chains and cgroups, and restores the sysctls the kubelet changed. What
//! it changed is recorded under `/run` first, so a test process killed outright is cleaned up
//! by the next start.
//!
//! Needs root and the packages `containerd runc containernetworking-plugins iptables conntrack`;
//! [`require`] says loudly when they or the tarballs are missing (and fails under `CI=true`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use super::kube::{KubeOptions, RealKube, random_token};
use super::process::{ServerProcess, free_port};
use super::tools::{self, Extracted, Tool};

/// The node's name: it resolves to 127.0.0.1, so the kubelet listens on loopback only.
pub const NODE_NAME: &str = "localhost";
/// The image the Pod sandboxes run, made here from the tarball's `pause`.
const PAUSE_IMAGE: &str = "localhost/pause:local";
/// The CNI bridge for Pods without hostNetwork.
const BRIDGE: &str = "kn0";
/// The machine-wide lock and the record of what a running node changed.
const LOCK_PATH: &str = "/run/test-support-kube-node.lock";
const RECORD_PATH: &str = "/run/test-support-kube-node.record";
/// The sysctls the kubelet sets while it runs.
const SYSCTLS: [&str; 6] = [
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
];
/// The controllers that would make Pods of workloads (and so pull their public images).
const WORKLOAD_CONTROLLERS_OFF: &str = "*,-deployment-controller,-replicaset-controller,\
     -statefulset-controller,-daemonset-controller,-replicationcontroller-controller";
const READY_WITHIN: Duration = Duration::from_secs(120);

/// The Debian packages the node needs, with a file each provides.
const PACKAGES: [(&str, &str); 6] = [
    ("containerd", "/usr/bin/containerd"),
    ("containerd", "/usr/bin/ctr"),
    ("runc", "/usr/sbin/runc"),
    ("containernetworking-plugins", "/usr/lib/cni/bridge"),
    ("iptables", "/usr/sbin/iptables"),
    ("conntrack", "/usr/sbin/conntrack"),
];

/// The tarballs a node is made of.
#[derive(Debug, Clone)]
pub struct NodeTools {
    /// kube-apiserver and etcd (and Gatekeeper's CRDs).
    pub kube: Extracted,
    /// kubelet, kube-controller-manager, kube-scheduler, pause.
    pub node: Extracted,
}

/// What is missing for a node on this machine: root, the Debian packages (named) and the
/// tarballs. Empty when a node can start.
pub fn missing() -> Vec<String> {
    let mut missing = Vec::new();
    if !nix::unistd::Uid::effective().is_root() {
        missing.push("root (the kubelet and containerd run as root)".to_string());
    }
    let mut packages: Vec<&str> = PACKAGES
        .iter()
        .filter(|(_, file)| !Path::new(file).exists())
        .map(|(package, _)| *package)
        .collect();
    packages.dedup();
    if !packages.is_empty() {
        missing.push(format!(
            "the Debian packages {} (apt-get install -y {})",
            packages.join(", "),
            packages.join(" ")
        ));
    }
    for tool in [Tool::Kube, Tool::KubeNode] {
        if let Err(why) = tools::locate(tool) {
            missing.push(format!("{} ({why})", tool.describe()));
        }
    }
    missing
}

/// The loud line for a node test that cannot run.
pub fn skip_line(test: &str, missing: &[String]) -> String {
    format!(
        "!!! REAL SERVERS MISSING: real-node test {test} did not run: {}. Set {} to a folder \
         with kube/ and kube-node/ tarballs and install the packages as root to run it; under \
         CI=true this fails",
        missing.join("; "),
        tools::DIR_ENV
    )
}

/// The extracted tarballs for the node test `test`, or `None` after printing why it did not
/// run; panics under `CI=true` when something is missing.
pub fn require(test: &str) -> Option<NodeTools> {
    let missing = missing();
    if !missing.is_empty() {
        return tools::skip_or_fail(skip_line(test, &missing));
    }
    Some(NodeTools {
        kube: tools::require(Tool::Kube, test)?,
        node: tools::require(Tool::KubeNode, test)?,
    })
}

/// A running node; dropping it stops everything and gives the machine back.
pub struct RealNode {
    kube: Option<RealKube>,
    kubelet: Option<ServerProcess>,
    scheduler: Option<ServerProcess>,
    controller_manager: Option<ServerProcess>,
    containerd: Option<ServerProcess>,
    record: Record,
    state: Option<tempfile::TempDir>,
    _lock: std::fs::File,
}

impl std::fmt::Debug for RealNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealNode")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

/// What a node changed on the machine, written before the change so that a crashed run can be
/// undone by the next start.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Record {
    /// The state folder (etcd, containerd root, kubelet root, logs).
    state: PathBuf,
    /// The runtime folder (sockets, containerd and runc state).
    run: PathBuf,
    /// `key=value` of every sysctl the kubelet changes, as they were.
    sysctls: Vec<(String, String)>,
    /// The API server's folder (etcd's data, certificates), once it runs.
    #[serde(default)]
    kube: Option<PathBuf>,
}

impl Record {
    fn socket(&self) -> PathBuf {
        self.run.join("containerd.sock")
    }
}

impl RealNode {
    /// Starts the node and waits until it is Ready and the `default` ServiceAccount exists.
    /// Panics with the failing component's log tail.
    pub fn start(tools: &NodeTools) -> RealNode {
        crate::real::install_crypto_provider();
        let started = Instant::now();
        let lock = machine_lock();
        if let Some(stale) = read_record() {
            eprintln!("kube-node: cleaning up after a node that was not stopped: {stale:?}");
            give_back(&stale);
        }
        let state = tempfile::Builder::new()
            .prefix("real-node-")
            .tempdir()
            .expect("tempdir");
        let run = PathBuf::from(format!("/run/real-node-{}", std::process::id()));
        std::fs::create_dir_all(&run).unwrap_or_else(|e| panic!("create {}: {e}", run.display()));
        let record = Record {
            state: state.path().to_path_buf(),
            run,
            sysctls: SYSCTLS
                .iter()
                .filter_map(|k| Some((k.to_string(), read_sysctl(k)?)))
                .collect(),
            kube: None,
        };
        write_record(&record);
        let mut node = RealNode {
            kube: None,
            kubelet: None,
            scheduler: None,
            controller_manager: None,
            containerd: None,
            record,
            state: Some(state),
            _lock: lock,
        };
        node.start_components(tools);
        eprintln!(
            "kube-node: node {NODE_NAME} Ready after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        node
    }

    fn start_components(&mut self, tools: &NodeTools) {
        let dir = self.record.state.clone();
        for sub in [
            "logs",
            "kubelet",
            "pod-logs",
            "cni/net.d",
            "cni/ipam",
            "manifests",
        ] {
            std::fs::create_dir_all(dir.join(sub)).expect("node folders");
        }
        // containerd first: its socket and the pause image.
        std::fs::write(
            dir.join("containerd.toml"),
            containerd_config(&dir, &self.record.run),
        )
        .expect("write containerd.toml");
        std::fs::write(
            dir.join("cni/net.d/10-kube-node.conflist"),
            cni_config(&dir),
        )
        .expect("write the CNI config");
        let mut containerd = ServerProcess::spawn(
            "containerd",
            Path::new("/usr/bin/containerd"),
            &[
                "--config".into(),
                dir.join("containerd.toml").into_os_string(),
            ],
            &dir.join("logs"),
        );
        let socket = self.record.socket();
        if let Err(e) = containerd.wait_ready(Duration::from_secs(30), || {
            ctr(&socket, &["version"]).map(|_| ())
        }) {
            panic!("containerd did not start: {e}");
        }
        self.containerd = Some(containerd);
        let pause = image_archive::build(
            &image_archive::ImageConfig {
                reference: PAUSE_IMAGE.into(),
                entrypoint: vec!["/pause".into()],
                cmd: vec![],
                user: String::new(),
                workdir: String::new(),
                env: vec![],
                created_by: "test-support".into(),
            },
            &[image_archive::Entry::file(
                "/pause",
                0o755,
                std::fs::read(tools.node.bin("pause")).expect("read pause"),
            )],
        )
        .expect("the pause image");
        let pause_path = dir.join("pause.tar");
        std::fs::write(&pause_path, pause.archive).expect("write pause.tar");
        self.import_image(&pause_path);

        // The API server, with the Node authorizer and a client certificate for reaching the
        // kubelet (logs), and tokens for the components.
        let pki = Pki::write(&dir.join("pki"));
        let tokens = [
            ("system:kube-controller-manager", "kcm"),
            ("system:kube-scheduler", "sched"),
            ("system:node:localhost", "node"),
        ]
        .map(|(user, uid)| (user, uid, random_token(uid)));
        let options = KubeOptions {
            authorization_mode: Some("Node,RBAC".into()),
            extra_tokens: tokens
                .iter()
                .map(|(user, uid, token)| {
                    let group = if *uid == "node" {
                        "system:nodes"
                    } else {
                        "system:masters"
                    };
                    format!("{token},{user},{uid},\"{group}\"")
                })
                .collect(),
            extra_args: vec![
                "--enable-admission-plugins=NodeRestriction".into(),
                "--allow-privileged=true".into(),
                format!("--client-ca-file={}", pki.ca.display()),
                format!("--kubelet-client-certificate={}", pki.client_cert.display()),
                format!("--kubelet-client-key={}", pki.client_key.display()),
                "--kubelet-preferred-address-types=Hostname,InternalIP".into(),
            ],
            ..KubeOptions::default()
        };
        let kube = RealKube::start_with(&tools.kube, options);
        self.record.kube = kube.ca_path().ancestors().nth(2).map(Path::to_path_buf);
        write_record(&self.record);
        local_images_only(&kube);
        let kubeconfig = |name: &str, token: &str| {
            let path = dir.join(format!("{name}.kubeconfig"));
            kube.write_kubeconfig_at(&path, token);
            path
        };
        let kcm = kubeconfig("kcm", &tokens[0].2);
        let scheduler = kubeconfig("scheduler", &tokens[1].2);
        let kubelet = kubeconfig("kubelet", &tokens[2].2);

        let with_kubeconfig = |path: &Path| -> Vec<OsString> {
            [
                "--kubeconfig",
                "--authentication-kubeconfig",
                "--authorization-kubeconfig",
            ]
            .iter()
            .map(|flag| format!("{flag}={}", path.display()).into())
            .collect()
        };
        let mut kcm_args = with_kubeconfig(&kcm);
        kcm_args.extend(
            [
                "--bind-address=127.0.0.1".to_string(),
                format!("--secure-port={}", free_port()),
                "--leader-elect=false".into(),
                format!("--controllers={WORKLOAD_CONTROLLERS_OFF}"),
                format!(
                    "--service-account-private-key-file={}",
                    kube.service_account_key_path().display()
                ),
                format!("--root-ca-file={}", kube.ca_path().display()),
            ]
            .map(OsString::from),
        );
        self.controller_manager = Some(ServerProcess::spawn(
            "kube-controller-manager",
            &tools.node.bin("kube-controller-manager"),
            &kcm_args,
            &dir.join("logs"),
        ));
        let mut scheduler_args = with_kubeconfig(&scheduler);
        scheduler_args.extend(
            [
                "--bind-address=127.0.0.1".to_string(),
                format!("--secure-port={}", free_port()),
                "--leader-elect=false".into(),
            ]
            .map(OsString::from),
        );
        self.scheduler = Some(ServerProcess::spawn(
            "kube-scheduler",
            &tools.node.bin("kube-scheduler"),
            &scheduler_args,
            &dir.join("logs"),
        ));

        std::fs::write(
            dir.join("kubelet.yaml"),
            kubelet_config(&dir, &self.record.run, &pki.ca),
        )
        .expect("write kubelet.yaml");
        let mut kubelet_process = ServerProcess::spawn(
            "kubelet",
            &tools.node.bin("kubelet"),
            &[
                format!("--config={}", dir.join("kubelet.yaml").display()),
                format!("--kubeconfig={}", kubelet.display()),
                format!("--root-dir={}", dir.join("kubelet").display()),
                format!("--hostname-override={NODE_NAME}"),
                "--v=1".into(),
            ]
            .map(OsString::from),
            &dir.join("logs"),
        );
        let ready = kubelet_process.wait_ready(READY_WITHIN, || {
            let (status, node) = kube.raw(Method::GET, &format!("/api/v1/nodes/{NODE_NAME}"), None);
            let ready = node["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            let (sa, _) = kube.raw(
                Method::GET,
                "/api/v1/namespaces/default/serviceaccounts/default",
                None,
            );
            if ready && sa == 200 {
                Ok(())
            } else {
                Err(format!(
                    "node HTTP {status} Ready={ready}; default ServiceAccount HTTP {sa}"
                ))
            }
        });
        self.kubelet = Some(kubelet_process);
        self.kube = Some(kube);
        if let Err(e) = ready {
            panic!(
                "{}",
                self.failure(&format!("the node did not become Ready: {e}"))
            );
        }
    }

    /// The API server (admin client, apply, load, raw requests).
    pub fn kube(&self) -> &RealKube {
        self.kube.as_ref().expect("the node runs")
    }

    /// The env an in-cluster client in a `hostNetwork` Pod needs to reach the API server on
    /// loopback (an explicit env entry wins over the one the kubelet injects).
    pub fn in_cluster_env(&self) -> Value {
        json!([
            {"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
            {"name": "KUBERNETES_SERVICE_PORT", "value": self.kube().port().to_string()}
        ])
    }

    /// Imports a docker-archive into the node's containerd (namespace `k8s.io`), where Pods
    /// use it with `imagePullPolicy: Never` or `IfNotPresent`.
    pub fn import_image(&self, archive: &Path) {
        let path = archive.display().to_string();
        if let Err(e) = ctr(
            &self.record.socket(),
            &["-n", "k8s.io", "images", "import", &path],
        ) {
            panic!("import {path}: {e}");
        }
    }

    /// The resident memory of the node's processes (containerd and its shims, etcd, the API
    /// server, controller-manager, scheduler, kubelet, the Pods' processes), in MiB.
    pub fn memory_mib(&self) -> u64 {
        ours(&self.record, true)
            .into_iter()
            .filter_map(|pid| {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .sum::<u64>()
            / 1024
    }

    /// A failure message: `what` and the last lines of every component's log.
    pub fn failure(&self, what: &str) -> String {
        let mut text = what.to_string();
        let processes = [
            &self.kubelet,
            &self.controller_manager,
            &self.scheduler,
            &self.containerd,
        ];
        for process in processes.into_iter().flatten() {
            text.push('\n');
            text.push_str(&process.failure(&format!("({})", process.name())));
        }
        if let Some(kube) = &self.kube {
            text.push('\n');
            text.push_str(&kube.failure("(kube-apiserver)"));
        }
        text
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        // Controllers first, so nothing makes new Pods; then the Pods are deleted while the
        // kubelet still runs, so it tears them down properly (CNI DEL, volume unmounts).
        self.controller_manager.take();
        self.scheduler.take();
        if let Some(kube) = &self.kube {
            delete_all_pods(kube);
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline
                && ctr(
                    &self.record.socket(),
                    &["-n", "k8s.io", "tasks", "ls", "-q"],
                )
                .is_ok_and(|tasks| !tasks.trim().is_empty())
            {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        self.kubelet.take();
        self.kube.take();
        let socket = self.record.socket();
        if let Ok(tasks) = ctr(&socket, &["-n", "k8s.io", "tasks", "ls", "-q"]) {
            for task in tasks.split_whitespace() {
                let _ = ctr(
                    &socket,
                    &["-n", "k8s.io", "tasks", "kill", "-s", "KILL", task],
                );
            }
        }
        self.containerd.take();
        give_back(&self.record);
        if let Some(state) = self.state.take() {
            let _ = state.close();
        }
        let _ = std::fs::remove_file(RECORD_PATH);
    }
}

/// Deletes every Pod of every namespace at once (grace period 0).
fn delete_all_pods(kube: &RealKube) {
    let (_, namespaces) = kube.raw(Method::GET, "/api/v1/namespaces", None);
    for namespace in namespaces["items"].as_array().into_iter().flatten() {
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        let _ = kube.raw(
            Method::DELETE,
            &format!("/api/v1/namespaces/{name}/pods?gracePeriodSeconds=0"),
            None,
        );
    }
}

/// Undoes what the node recorded: ends its processes (shims included, found by the state
/// folder or the socket on their command line), unmounts what is left under its folders,
/// removes the bridge, the kubelet's iptables chains and cgroups, restores the sysctls and
/// removes the runtime folder.
fn give_back(record: &Record) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    for signal in [Signal::SIGTERM, Signal::SIGKILL] {
        let pids = ours(record, true);
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            let _ = kill(Pid::from_raw(pid), signal);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let mut mounts = mounts_under(&[&record.state, &record.run]);
    mounts.sort_by(|a, b| b.cmp(a));
    for mount in mounts {
        let _ = Command::new("umount").arg("-l").arg(&mount).status();
    }
    let _ = Command::new("ip")
        .args(["link", "del", BRIDGE])
        .stderr(std::process::Stdio::null())
        .status();
    remove_kubelet_chains();
    remove_kubepods_cgroups();
    for (key, value) in &record.sysctls {
        let _ = std::fs::write(sysctl_path(key), value);
    }
    let _ = std::fs::remove_dir_all(&record.run);
    let _ = std::fs::remove_dir_all(&record.state);
}

/// The PIDs (not this process) whose command line names the node's state folder, the API
/// server's folder or the containerd socket — the node's own components, etcd and the API
/// server, the shims — and the Pods' processes when `with_pods` (by their cgroup under
/// `kubepods`).
fn ours(record: &Record, with_pods: bool) -> Vec<i32> {
    let state = record.state.display().to_string();
    let socket = record.socket().display().to_string();
    let kube = record.kube.as_ref().map(|k| format!("{}/", k.display()));
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let cmdline = cmdline(*pid);
            let in_pod = with_pods
                && std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                    .is_ok_and(|c| c.contains("/kubepods"));
            let names_kube = kube.as_ref().is_some_and(|k| cmdline.contains(k.as_str()));
            cmdline.contains(&format!("{state}/"))
                || cmdline.contains(&socket)
                || names_kube
                || in_pod
        })
        .collect()
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Mount points under any of `roots` (from `/proc/self/mountinfo`).
fn mounts_under(roots: &[&Path]) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|target| PathBuf::from(target.replace("\\040", " ")))
        .filter(|target| roots.iter().any(|root| target.starts_with(root)))
        .collect()
}

/// The chains the kubelet makes (`KUBE-FIREWALL`, `KUBE-KUBELET-CANARY`, `KUBE-IPTABLES-HINT`)
/// and its jumps to them, in IPv4 and IPv6.
fn remove_kubelet_chains() {
    let quiet = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    for iptables in ["iptables", "ip6tables"] {
        for hook in ["INPUT", "OUTPUT"] {
            while quiet(
                iptables,
                &["-t", "filter", "-D", hook, "-j", "KUBE-FIREWALL"],
            ) {}
        }
        for table in ["filter", "nat", "mangle"] {
            for chain in ["KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"] {
                if quiet(iptables, &["-t", table, "-F", chain]) {
                    quiet(iptables, &["-t", table, "-X", chain]);
                }
            }
        }
    }
}

/// The kubelet's `kubepods` cgroups in every v1 hierarchy (and the v2 root), deepest first.
fn remove_kubepods_cgroups() {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let mut roots: Vec<PathBuf> = hierarchies
        .filter_map(|h| Some(h.ok()?.path().join("kubepods")))
        .collect();
    roots.push(PathBuf::from("/sys/fs/cgroup/kubepods"));
    for root in roots.into_iter().filter(|r| r.is_dir()) {
        let mut dirs = Vec::new();
        collect_dirs(&root, &mut dirs);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                collect_dirs(&entry.path(), out);
            }
        }
    }
}

fn sysctl_path(key: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(key.replace('.', "/"))
}

fn read_sysctl(key: &str) -> Option<String> {
    std::fs::read_to_string(sysctl_path(key))
        .ok()
        .map(|v| v.trim().to_string())
}

/// Runs `ctr -a SOCKET ARGS` (20 s at most); its stdout, or why it failed.
fn ctr(socket: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("timeout")
        .args(["20", "/usr/bin/ctr", "-a"])
        .arg(socket)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ctr: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "ctr {}: {}: {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The machine-wide node lock (waits while another node runs).
fn machine_lock() -> std::fs::File {
    let file = std::fs::File::create(LOCK_PATH)
        .unwrap_or_else(|e| panic!("cannot create {LOCK_PATH}: {e}"));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {LOCK_PATH}: {e}"));
    file
}

fn read_record() -> Option<Record> {
    let text = std::fs::read_to_string(RECORD_PATH).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_record(record: &Record) {
    let text = serde_json::to_string(record).expect("record as JSON");
    std::fs::write(RECORD_PATH, text).unwrap_or_else(|e| panic!("write {RECORD_PATH}: {e}"));
}

/// Denies every Pod whose containers' images are not `localhost/...`.
fn local_images_only(kube: &RealKube) {
    let images_local = "object.spec.containers.all(c, c.image.startsWith('localhost/')) && \
        (!has(object.spec.initContainers) || object.spec.initContainers.all(c, c.image.startsWith('localhost/'))) && \
        (!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, c.image.startsWith('localhost/')))";
    kube.apply(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "kube-node-local-images-only"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["pods"]
            }]},
            "validations": [{
                "expression": images_local,
                "message": "this test node runs local images only (localhost/...): no registry may be contacted"
            }]
        }
    }));
    kube.apply(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "kube-node-local-images-only"},
        "spec": {"policyName": "kube-node-local-images-only", "validationActions": ["Deny"]}
    }));
}

/// The CA the kubelet trusts for client certificates, and the API server's client certificate
/// for the kubelet (group `system:masters`).
struct Pki {
    ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

impl Pki {
    fn write(dir: &Path) -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        };
        std::fs::create_dir_all(dir).expect("pki folder");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kube-node-ca");
        let ca = ca_params.self_signed(&ca_key).expect("self-sign the CA");
        let client_key = KeyPair::generate().expect("client key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver-kubelet-client");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client = params
            .signed_by(&client_key, &ca, &ca_key)
            .expect("sign the client certificate");
        let pki = Pki {
            ca: dir.join("ca.crt"),
            client_cert: dir.join("kubelet-client.crt"),
            client_key: dir.join("kubelet-client.key"),
        };
        std::fs::write(&pki.ca, ca.pem()).expect("write ca.crt");
        std::fs::write(&pki.client_cert, client.pem()).expect("write the client certificate");
        std::fs::write(&pki.client_key, client_key.serialize_pem()).expect("write the client key");
        pki
    }
}

/// containerd with its own root, state and socket. `restrict_oom_score_adj`: without
/// CAP_SYS_RESOURCE runc cannot lower `oom_score_adj` and every sandbox fails ("can't get final
/// child's PID from pipe: EOF"). Every registry goes to a closed loopback port.
fn containerd_config(state: &Path, run: &Path) -> String {
    let (state, run) = (state.display(), run.display());
    format!(
        r#"version = 2
root = "{state}/containerd"
state = "{run}/containerd"
[grpc]
  address = "{run}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{run}/runc"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["http://127.0.0.1:9"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."*"]
    endpoint = ["http://127.0.0.1:9"]
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{state}/cni/net.d"
"#
    )
}

/// A bridge for Pods without hostNetwork: they reach each other, never the host's loopback.
fn cni_config(state: &Path) -> String {
    json!({
        "cniVersion": "1.0.0", "name": "kube-node",
        "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": true, "ipMasq": false,
             "hairpinMode": true,
             "ipam": {"type": "host-local",
                      "dataDir": state.join("cni/ipam"),
                      "ranges": [[{"subnet": "10.244.0.0/24"}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": true}}
        ]
    })
    .to_string()
}

/// The kubelet on loopback. This machine's needs: cgroup v1 with the cgroupfs driver, swap
/// allowed, image garbage collection off (imported images can never be pulled again) and
/// eviction relaxed.
fn kubelet_config(state: &Path, run: &Path, ca: &Path) -> String {
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: {port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {healthz}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: "{ca}"}}
authorization: {{mode: AlwaysAllow}}
containerRuntimeEndpoint: "unix://{run}/containerd.sock"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
podLogsDir: "{state}/pod-logs"
staticPodPath: "{state}/manifests"
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
rotateCertificates: false
serverTLSBootstrap: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {{memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}}
maxPods: 50
"#,
        port = free_port(),
        healthz = free_port(),
        ca = ca.display(),
        run = run.display(),
        state = state.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skip_line_names_the_test_and_what_is_missing() {
        let line = skip_line(
            "real_rollout",
            &["the Debian packages runc (apt-get install -y runc)".into()],
        );
        assert!(line.starts_with("!!! REAL SERVERS MISSING: real-node test real_rollout"));
        assert!(
            line.contains("apt-get install -y runc") && line.contains("CI=true"),
            "{line}"
        );
    }

    #[test]
    fn every_registry_goes_to_a_closed_loopback_port() {
        let config = containerd_config(Path::new("/s"), Path::new("/r"));
        assert!(
            config.contains("registry.mirrors.\"*\"]\n    endpoint = [\"http://127.0.0.1:9\"]")
        );
        assert!(config.contains("sandbox_image = \"localhost/pause:local\""));
        assert!(WORKLOAD_CONTROLLERS_OFF.contains("-deployment-controller"));
        assert!(WORKLOAD_CONTROLLERS_OFF.contains("-statefulset-controller"));
    }
}
