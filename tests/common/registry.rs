//! A throwaway OCI registry for tests and benchmarks: Debian's `docker-registry`
//! (distribution 2.8) on a free loopback port, its storage and config in a temp dir.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";

/// A registry of our own on a free loopback port; stopped when dropped.
pub struct Registry {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    root: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
        assert!(
            Path::new(REGISTRY_BIN).exists(),
            "{REGISTRY_BIN} is missing: these tests need Debian's docker-registry (`apt-get install docker-registry`; .ci/run installs it)"
        );
        let root = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            root.path().join("data").display()
        );
        let config_path = root.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(root.path().join("log")).unwrap();
        let child =
            Command::new(REGISTRY_BIN).arg("serve").arg(&config_path).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        let mut registry = Registry { child: Some(child), addr, root };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if ureq::get(&format!("http://{}/v2/", registry.addr)).call().is_ok() {
                return registry;
            }
            if let Some(status) = registry.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("docker-registry exited ({status}):\n{}", registry.log());
            }
            assert!(Instant::now() < deadline, "docker-registry did not answer on {} within 20s:\n{}", registry.addr, registry.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("log")).unwrap_or_default()
    }

    pub fn reference(&self, repo_tag: &str) -> String {
        format!("oci://{}/{repo_tag}", self.addr)
    }

    /// Where the registry keeps blob `digest` on disk: what an attacker with access to its
    /// storage would edit.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.root.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
