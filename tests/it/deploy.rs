//! `deploy/` is checked without a cluster or a Docker engine: every manifest parses, and the
//! fields that matter agree with the code — probe paths answer on the real server, ports match
//! the config, the termination grace exceeds `shutdown_grace` (read by the real config loader from
//! the ConfigMap), the image name is the one the Dockerfile labels, no key is written down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_norway::Value;

use crate::support::{FakeUpstream, Reply, TestApp, test_config};
use harness_proxy::config::{self, Config, FlagOverrides, StoreUrl};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// Every YAML document of a file, merge keys (`<<`) applied.
fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| {
            let mut value = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
            value.apply_merge().unwrap();
            value
        })
        .collect()
}

fn manifests() -> Vec<Value> {
    let dir = deploy_dir().join("kubernetes");
    let mut all = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            all.extend(documents(&path));
        }
    }
    all
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} named {name}"))
}

fn str_of(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value:?}"))
}

/// The image's repository without registry or tag.
fn image_name(image: &str) -> &str {
    let repo = image.rsplit('/').next().unwrap_or(image);
    repo.split(':').next().unwrap_or(repo)
}

fn dockerfile_image_title() -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile")).unwrap();
    let at = text
        .find("org.opencontainers.image.title=\"")
        .expect("the Dockerfile labels its image title");
    let rest = &text[at + "org.opencontainers.image.title=\"".len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

#[test]
fn kustomization_lists_every_manifest_and_they_all_parse() {
    let dir = deploy_dir().join("kubernetes");
    let kustomization = &documents(&dir.join("kustomization.yaml"))[0];
    let listed: Vec<&str> = kustomization["resources"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(str_of)
        .collect();
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    present.sort();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, present, "kustomization.yaml lists every manifest");
    for doc in manifests() {
        assert!(
            doc["apiVersion"].is_string() && doc["kind"].is_string(),
            "{doc:?}"
        );
    }
}

#[tokio::test]
async fn the_deployment_agrees_with_the_config_the_routes_and_the_image() {
    let docs = manifests();
    let deployment = find(&docs, "Deployment", "harness-proxy");
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];

    // The ConfigMap's config.toml loads with the real loader (the env the Deployment sets too).
    let configmap = find(&docs, "ConfigMap", "harness-proxy-config");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, str_of(&configmap["data"]["config.toml"])).unwrap();
    let config: Config = config::load(Some(&file), &BTreeMap::new(), &FlagOverrides::default())
        .expect("the ConfigMap's config is valid");
    assert!(matches!(config.titles.store, StoreUrl::Redis(_)));
    let prompts = find(&docs, "ConfigMap", "harness-proxy-prompts");
    let prompts_dir = dir.path().join("prompts");
    for item in pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|v| v["configMap"]["name"] == "harness-proxy-prompts")
        .flat_map(|v| v["configMap"]["items"].as_sequence().unwrap())
    {
        let path = prompts_dir.join(str_of(&item["path"]));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, str_of(&prompts["data"][str_of(&item["key"])])).unwrap();
    }
    harness_proxy::prompts::Prompts::load(Some(&prompts_dir)).expect("the prompt overrides load");

    // Ports: the container's, the config's listen port and the Service's target.
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert_eq!(port, u64::from(config.listen.port()));
    assert_eq!(port, u64::from(Config::default().listen.port()));
    let service = find(&docs, "Service", "harness-proxy");
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"],
        container["ports"][0]["name"]
    );
    assert_eq!(&service["spec"]["selector"], labels);
    let pdb = find(&docs, "PodDisruptionBudget", "harness-proxy");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], labels);
    let hpa = find(&docs, "HorizontalPodAutoscaler", "harness-proxy");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "harness-proxy");
    assert!(hpa["spec"]["minReplicas"].as_u64().unwrap() >= 2);

    // Grace: the pod gets longer than the preStop pause plus the proxy's own drain.
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    let pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        grace > pause + config.shutdown_grace.as_secs(),
        "terminationGracePeriodSeconds {grace} must exceed preStop {pause}s + shutdown_grace {:?}",
        config.shutdown_grace
    );

    // Hardening and resources.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    for kind in ["requests", "limits"] {
        assert!(
            container["resources"][kind]["memory"].is_string(),
            "{kind} set"
        );
    }
    // The key comes from a Secret reference only.
    let secret = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["secret"].is_mapping())
        .expect("the upstream key comes from a Secret");
    assert!(
        config
            .upstream
            .api_key_file
            .as_ref()
            .is_some_and(|f| f.starts_with("/run/secrets/harness-proxy")),
        "api_key_file points into the mounted Secret"
    );
    assert!(config.upstream.api_key.is_none());
    assert!(secret["secret"]["secretName"].is_string());

    // Image: the name the Dockerfile labels.
    assert_eq!(
        image_name(str_of(&container["image"])),
        dockerfile_image_title()
    );

    // Probes point at routes the real server answers 200 on.
    let upstream = FakeUpstream::start(|_, _| Reply::json(200, "{}")).await;
    let app = TestApp::start(test_config(&upstream.base_url())).await;
    for probe in ["readinessProbe", "livenessProbe"] {
        let http = &container[probe]["httpGet"];
        assert_eq!(http["port"], container["ports"][0]["name"], "{probe} port");
        let path = str_of(&http["path"]);
        let answer = app.get(path).send().await.unwrap();
        assert_eq!(answer.status(), 200, "{probe} {path}");
    }
}

#[test]
fn compose_runs_two_replicas_behind_a_balancer_with_redis_and_no_key_in_the_file() {
    let compose = &documents(&deploy_dir().join("compose.yaml"))[0];
    let services = compose["services"].as_mapping().unwrap();
    let proxies: Vec<&Value> = services
        .values()
        .filter(|s| {
            s["image"]
                .as_str()
                .is_some_and(|i| image_name(i) == dockerfile_image_title())
        })
        .collect();
    assert_eq!(proxies.len(), 2, "two proxy replicas");
    let nginx = std::fs::read_to_string(deploy_dir().join("nginx.conf")).unwrap();
    for (name, service) in services {
        if proxies.iter().any(|p| std::ptr::eq(*p, service)) {
            assert!(
                nginx.contains(&format!("server {}:8080", str_of(name))),
                "the balancer sends to {name:?}"
            );
        }
    }
    for proxy in &proxies {
        let env = &proxy["environment"];
        assert!(str_of(&env["HARNESS_PROXY__TITLES__STORE"]).starts_with("redis://redis:"));
        assert_eq!(
            env["HARNESS_PROXY__UPSTREAM__API_KEY_FILE"],
            "/run/secrets/upstream_key"
        );
        assert!(
            env["HARNESS_PROXY__UPSTREAM__API_KEY"].is_null(),
            "no key in the file"
        );
        assert_eq!(proxy["read_only"], true);
    }
    assert!(services.contains_key("redis") && services.contains_key("lb"));
    assert!(compose["secrets"]["upstream_key"]["file"].is_string());
    assert!(
        compose["services"]["lb"]["ports"][0]
            .as_str()
            .unwrap()
            .ends_with(":8080")
    );
}
