//! `deploy/`, the `Dockerfile` and `.dockerignore` are checked without a cluster or a container
//! engine. What a Kubernetes pod and a compose replica really start with is rendered from the files
//! the way the orchestrators read them — the Dockerfile's runtime stage (`ENV`, `COPY`,
//! `ENTRYPOINT`/`CMD`), then the compose service or the Deployment's container (environment, args,
//! mounts, the kustomization's generated ConfigMaps) — and loaded with the real config loader, so
//! the store and every key they run with are the ones the files promise. The build context is
//! computed from `.dockerignore`'s patterns; the nginx template, probe paths, ports, grace,
//! resources and image name are checked against the code.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_norway::Value;

use crate::support::{FakeUpstream, Reply, TestApp, test_config};
use harness_proxy::config::{self, Config, FlagOverrides, LogFormat, StoreUrl};
use harness_proxy::prompts::Prompts;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn deploy_dir() -> PathBuf {
    repo().join("deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every YAML document of a text, merge keys (`<<`) applied.
fn parse_documents(text: &str, origin: &Path) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|doc| {
            let mut value = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", origin.display()));
            value.apply_merge().unwrap();
            value
        })
        .collect()
}

fn documents(path: &Path) -> Vec<Value> {
    parse_documents(&read(path), path)
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

fn seq(value: &Value) -> &[Value] {
    value.as_sequence().map_or(&[], Vec::as_slice)
}

fn strings(value: &Value) -> Vec<String> {
    seq(value).iter().map(|v| str_of(v).to_owned()).collect()
}

/// The image's repository without registry or tag.
fn image_name(image: &str) -> &str {
    let repo = image.rsplit('/').next().unwrap_or(image);
    repo.split(':').next().unwrap_or(repo)
}

// ---------------------------------------------------------------------------------------------
// The image, as the Dockerfile builds it.

/// Shell-like words: whitespace-separated, double quotes grouping, backslash escaping.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                word.extend(chars.next());
                in_word = true;
            }
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The Dockerfile's instructions (keyword, arguments) per stage: continuation lines joined,
/// comment lines dropped (inside a continuation too, as Docker does).
fn dockerfile_stages() -> Vec<Vec<(String, String)>> {
    let text = read(&repo().join("Dockerfile"));
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    let mut logical = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            logical.push_str(head);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let instruction = std::mem::take(&mut logical);
        let instruction = instruction.trim();
        if instruction.is_empty() {
            continue;
        }
        let (keyword, rest) = instruction
            .split_once(char::is_whitespace)
            .unwrap_or((instruction, ""));
        let keyword = keyword.to_ascii_uppercase();
        if keyword == "FROM" {
            stages.push(Vec::new());
        }
        stages
            .last_mut()
            .expect("the Dockerfile starts with FROM")
            .push((keyword, rest.trim().to_owned()));
    }
    stages
}

/// `COPY` from the build context (not `--from` another stage): sources and destination.
fn context_copy(args: &str) -> Option<(Vec<String>, String)> {
    let mut parts = words(args);
    if parts.iter().any(|p| p.starts_with("--from")) {
        return None;
    }
    parts.retain(|p| !p.starts_with("--"));
    let dest = parts.pop().expect("COPY has a destination");
    Some((parts, dest))
}

/// What a container of the image starts with: the runtime stage of the Dockerfile.
struct Image {
    env: BTreeMap<String, String>,
    /// Files and directories copied from the build context: (image path, repository path).
    files: Vec<(String, PathBuf)>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    user: String,
    volumes: Vec<String>,
}

impl Image {
    fn from_dockerfile() -> Self {
        let stages = dockerfile_stages();
        let runtime = stages.last().expect("a stage");
        let mut image = Image {
            env: BTreeMap::new(),
            files: Vec::new(),
            entrypoint: Vec::new(),
            cmd: Vec::new(),
            user: "root".to_owned(),
            volumes: Vec::new(),
        };
        let exec_form = |keyword: &str, args: &str| -> Vec<String> {
            serde_json::from_str(args).unwrap_or_else(|_| {
                panic!(
                    "{keyword} is in exec form (a JSON array), so no shell sits before the proxy"
                )
            })
        };
        for (keyword, args) in runtime {
            match keyword.as_str() {
                "ENV" => {
                    let parts = words(args);
                    if parts[0].contains('=') {
                        for part in parts {
                            let (key, value) = part.split_once('=').unwrap();
                            image.env.insert(key.to_owned(), value.to_owned());
                        }
                    } else {
                        let value = args[parts[0].len()..].trim();
                        image.env.insert(parts[0].clone(), value.to_owned());
                    }
                }
                "COPY" | "ADD" => {
                    if let Some((sources, dest)) = context_copy(args) {
                        for source in sources {
                            let target = if dest.ends_with('/') {
                                let base = Path::new(&source).file_name().unwrap();
                                format!("{dest}{}", base.to_string_lossy())
                            } else {
                                dest.clone()
                            };
                            image.files.push((target, repo().join(source)));
                        }
                    }
                }
                "ENTRYPOINT" => {
                    image.entrypoint = exec_form(keyword, args);
                    // Docker: a new ENTRYPOINT clears an inherited CMD.
                    image.cmd.clear();
                }
                "CMD" => image.cmd = exec_form(keyword, args),
                "USER" => args.clone_into(&mut image.user),
                "VOLUME" => image.volumes.extend(exec_form(keyword, args)),
                _ => {}
            }
        }
        image
    }
}

// ---------------------------------------------------------------------------------------------
// A container: the image's filesystem under a temporary directory, plus what the orchestrator
// adds, loaded the way `harness-proxy serve` loads it.

/// The pod's name, as the Deployment's `fieldRef: metadata.name` gives it.
const POD_NAME: &str = "harness-proxy-7d9c5b6f4-x2x7q";
/// What the orchestrator mounts for the secret `name` (the real ones are never in the
/// repository): a text of its own per secret, so a file is known to come from its secret.
fn secret_text(name: &str) -> String {
    format!("key-from-the-secret-{name}")
}

/// The key a replica's reasoning seals are made with: the file its config names, read as the
/// proxy reads it (trimmed). A key in the config itself would sit in a manifest.
fn seal_key(container: &Container, config: &Config) -> String {
    assert!(
        config.opencode.reasoning_key.is_none(),
        "no seal key in a manifest"
    );
    let file = config.opencode.reasoning_key_file.as_ref().expect(
        "opencode.reasoning_key_file is set: replicas with random keys cannot open each other's seals",
    );
    read(&container.path(&file.display().to_string()))
        .trim()
        .to_owned()
}

struct Container {
    root: tempfile::TempDir,
    env: BTreeMap<String, String>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
}

impl Container {
    fn of(image: &Image) -> Self {
        let container = Container {
            root: tempfile::tempdir().unwrap(),
            env: image.env.clone(),
            entrypoint: image.entrypoint.clone(),
            cmd: image.cmd.clone(),
        };
        for (inside, source) in &image.files {
            copy_tree(source, &container.path(inside));
        }
        container
    }

    fn path(&self, inside: &str) -> PathBuf {
        assert!(inside.starts_with('/'), "{inside} is absolute");
        self.root.path().join(inside.trim_start_matches('/'))
    }

    fn write(&self, inside: &str, text: &str) {
        let path = self.path(inside);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A mount hides whatever the image had at that path.
    fn mount_empty(&self, inside: &str) {
        let path = self.path(inside);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else if path.exists() {
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::create_dir_all(path).unwrap();
    }

    fn argv(&self) -> Vec<String> {
        self.entrypoint.iter().chain(&self.cmd).cloned().collect()
    }

    /// The config file `--config` names (inside the container) and the other flags, read from
    /// the process's argv as the binary's CLI reads it.
    fn flags(&self) -> (Option<String>, FlagOverrides) {
        let argv = self.argv();
        assert_eq!(
            argv.first().map(String::as_str),
            Some("harness-proxy"),
            "the container runs the proxy: {argv:?}"
        );
        let mut file = None;
        let mut flags = FlagOverrides::default();
        let mut rest = argv[1..].iter();
        let mut subcommand = None;
        while let Some(arg) = rest.next() {
            let Some(flag) = arg.strip_prefix("--") else {
                assert!(subcommand.is_none(), "one subcommand: {argv:?}");
                subcommand = Some(arg.clone());
                continue;
            };
            let (name, value) = match flag.split_once('=') {
                Some((name, value)) => (name, value.to_owned()),
                None => (flag, rest.next().expect("a flag's value").clone()),
            };
            match name {
                "config" => file = Some(value),
                "listen" => flags.listen = Some(value),
                "upstream" => flags.upstream = Some(value),
                "default-harness" => flags.default_harness = Some(value),
                "log-format" => flags.log_format = Some(value),
                "prompts-dir" => flags.prompts_dir = Some(value.into()),
                other => panic!("unknown flag --{other} in {argv:?}"),
            }
        }
        assert_eq!(subcommand.as_deref(), Some("serve"), "{argv:?}");
        (file, flags)
    }

    /// The config `harness-proxy serve` builds in this container: the file its `--config` names,
    /// then its environment, then its flags.
    fn config(&self) -> Config {
        let (file, flags) = self.flags();
        let file = file.map(|f| self.path(&f));
        if let Some(file) = &file {
            assert!(file.is_file(), "{} exists in the container", file.display());
        }
        config::load(file.as_deref(), &self.env, &flags)
            .unwrap_or_else(|e| panic!("the container's config is valid: {e}"))
    }

    /// The text of the config file the process reads.
    fn config_file(&self) -> String {
        let (file, _) = self.flags();
        read(&self.path(&file.expect("a --config file")))
    }

    fn prompts(&self, config: &Config) -> Prompts {
        let dir = config
            .prompts_dir
            .as_ref()
            .map(|d| self.path(&d.display().to_string()));
        Prompts::load(dir.as_deref()).expect("the container's prompts load")
    }
}

/// Every key the file sets has, in the loaded config, the file's value: nothing overrode it.
fn assert_every_key_of_the_file_holds(file_text: &str, loaded: &Config, origin: &str) {
    fn walk(prefix: &str, file: &toml::Table, loaded: &toml::Table, origin: &str) {
        for (key, value) in file {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            match value {
                toml::Value::Table(table) => {
                    let inner = loaded[key].as_table().unwrap();
                    walk(&path, table, inner, origin);
                }
                value => assert_eq!(
                    loaded.get(key),
                    Some(value),
                    "`{path}` from {origin} is what the process runs with"
                ),
            }
        }
    }
    let file: toml::Table = file_text.parse().unwrap();
    let toml::Value::Table(loaded) = toml::Value::try_from(loaded).unwrap() else {
        panic!("the config serializes to a table");
    };
    walk("", &file, &loaded, origin);
}

fn redis_host(store: &StoreUrl) -> String {
    let StoreUrl::Redis(url) = store else {
        panic!("the store is the shared Redis one, not {store:?}");
    };
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split('/').next().unwrap();
    let host_port = authority.rsplit('@').next().unwrap();
    host_port.split(':').next().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------
// Kubernetes, as `kubectl kustomize deploy/kubernetes` renders it.

struct Kustomization {
    docs: Vec<Value>,
    /// ConfigMaps by their base name: generated (`configMapGenerator`) or listed as resources.
    config_maps: BTreeMap<String, BTreeMap<String, String>>,
}

fn kubernetes_dir() -> PathBuf {
    deploy_dir().join("kubernetes")
}

fn kustomization_file() -> Value {
    documents(&kubernetes_dir().join("kustomization.yaml"))
        .into_iter()
        .next()
        .unwrap()
}

fn kustomization() -> Kustomization {
    let dir = kubernetes_dir();
    let file = kustomization_file();
    let mut docs = Vec::new();
    for resource in strings(&file["resources"]) {
        docs.extend(documents(&dir.join(resource)));
    }
    let mut config_maps = BTreeMap::new();
    for doc in docs.iter().filter(|d| d["kind"] == "ConfigMap") {
        let data = doc["data"]
            .as_mapping()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (str_of(k).to_owned(), str_of(v).to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        config_maps.insert(str_of(&doc["metadata"]["name"]).to_owned(), data);
    }
    for generator in seq(&file["configMapGenerator"]) {
        let mut data = BTreeMap::new();
        for entry in strings(&generator["files"]) {
            let (key, path) = entry.split_once('=').unwrap_or_else(|| {
                let key = Path::new(&entry).file_name().unwrap().to_str().unwrap();
                (key, entry.as_str())
            });
            data.insert(key.to_owned(), read(&dir.join(path)));
        }
        for literal in strings(&generator["literals"]) {
            let (key, value) = literal.split_once('=').unwrap();
            data.insert(key.to_owned(), value.to_owned());
        }
        config_maps.insert(str_of(&generator["name"]).to_owned(), data);
    }
    Kustomization { docs, config_maps }
}

fn deployment(k: &Kustomization) -> &Value {
    find(&k.docs, "Deployment", "harness-proxy")
}

/// A pod of the Deployment: the image, then the container's command/args, env and mounts.
fn render_pod(k: &Kustomization, image: &Image) -> Container {
    let spec = &deployment(k)["spec"]["template"]["spec"];
    let container_spec = &spec["containers"][0];
    let mut pod = Container::of(image);
    // Kubernetes: `command` replaces ENTRYPOINT (and drops CMD), `args` replaces CMD.
    if container_spec["command"].is_sequence() {
        pod.entrypoint = strings(&container_spec["command"]);
        pod.cmd.clear();
    }
    if container_spec["args"].is_sequence() {
        pod.cmd = strings(&container_spec["args"]);
    }
    assert!(container_spec["envFrom"].is_null(), "no envFrom to follow");
    for var in seq(&container_spec["env"]) {
        let name = str_of(&var["name"]).to_owned();
        let value = if var["value"].is_string() {
            str_of(&var["value"]).to_owned()
        } else if var["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name" {
            POD_NAME.to_owned()
        } else {
            panic!("env {name}: only values and the pod name are rendered here");
        };
        pod.env.insert(name, value);
    }
    let volumes = seq(&spec["volumes"]);
    for mount in seq(&container_spec["volumeMounts"]) {
        let name = &mount["name"];
        let volume = volumes
            .iter()
            .find(|v| &v["name"] == name)
            .unwrap_or_else(|| panic!("volume {name:?} is declared"));
        let mut files: Vec<(String, String)> = Vec::new();
        if volume["configMap"].is_mapping() {
            let source = &volume["configMap"];
            let optional = source["optional"] == true;
            let data = match k.config_maps.get(str_of(&source["name"])) {
                Some(data) => data.clone(),
                None if optional => BTreeMap::new(),
                None => panic!("ConfigMap {:?} exists", source["name"]),
            };
            if source["items"].is_sequence() {
                for item in seq(&source["items"]) {
                    match data.get(str_of(&item["key"])) {
                        Some(text) => files.push((str_of(&item["path"]).to_owned(), text.clone())),
                        None => assert!(optional, "key {:?} is in the ConfigMap", item["key"]),
                    }
                }
            } else {
                files.extend(data);
            }
        } else if volume["secret"].is_mapping() {
            let text = secret_text(str_of(&volume["secret"]["secretName"]));
            for item in seq(&volume["secret"]["items"]) {
                files.push((str_of(&item["path"]).to_owned(), text.clone()));
            }
        } else {
            assert!(volume["emptyDir"].is_mapping(), "{volume:?}");
        }
        let at = str_of(&mount["mountPath"]);
        if mount["subPath"].is_string() {
            let sub = str_of(&mount["subPath"]);
            let (_, text) = files
                .iter()
                .find(|(path, _)| path == sub)
                .unwrap_or_else(|| panic!("subPath {sub} is in volume {name:?}"));
            pod.write(at, text);
        } else {
            pod.mount_empty(at);
            for (path, text) in &files {
                pod.write(&format!("{at}/{path}"), text);
            }
        }
    }
    pod
}

// ---------------------------------------------------------------------------------------------
// Compose, as `docker compose -f deploy/compose.yaml config` resolves it with an empty shell
// environment.

fn compose() -> Value {
    documents(&deploy_dir().join("compose.yaml"))
        .into_iter()
        .next()
        .unwrap()
}

/// `${NAME:-default}` and `${NAME-default}` → the default, `${NAME}` → "", `$$` → `$`.
fn interpolate(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = after.strip_prefix('{') {
            let end = inner.find('}').expect("closed ${");
            let body = &inner[..end];
            if let Some((_, default)) = body.split_once(":-").or_else(|| body.split_once('-')) {
                out.push_str(default);
            }
            rest = &inner[end + 1..];
        } else {
            panic!("unbraced variable in {text:?}");
        }
    }
    out.push_str(rest);
    out
}

fn proxy_services(compose: &Value) -> Vec<(String, &Value)> {
    compose["services"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, s)| {
            s["image"]
                .as_str()
                .is_some_and(|i| image_name(i) == dockerfile_image_title())
        })
        .map(|(name, s)| (str_of(name).to_owned(), s))
        .collect()
}

/// A compose replica: the image built from the service's `build`, then its environment, secrets,
/// tmpfs and command.
fn compose_replica(service: &Value, image: &Image) -> Container {
    let context = deploy_dir().join(str_of(&service["build"]["context"]));
    let dockerfile = context.join(str_of(&service["build"]["dockerfile"]));
    assert_eq!(
        dockerfile.canonicalize().unwrap(),
        repo().join("Dockerfile").canonicalize().unwrap(),
        "the replica is built from the repository's Dockerfile"
    );
    assert_eq!(
        context.canonicalize().unwrap(),
        repo().canonicalize().unwrap(),
        "with the repository as the build context"
    );
    let mut replica = Container::of(image);
    if service["entrypoint"].is_sequence() {
        replica.entrypoint = strings(&service["entrypoint"]);
        replica.cmd.clear();
    }
    if service["command"].is_sequence() {
        replica.cmd = strings(&service["command"]);
    }
    if let Some(env) = service["environment"].as_mapping() {
        for (name, value) in env {
            let value = match value {
                Value::String(s) => interpolate(s),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => panic!("environment {name:?}: {other:?}"),
            };
            replica.env.insert(str_of(name).to_owned(), value);
        }
    } else {
        for entry in strings(&service["environment"]) {
            let (name, value) = entry.split_once('=').unwrap();
            replica.env.insert(name.to_owned(), interpolate(value));
        }
    }
    for at in strings(&service["tmpfs"]) {
        replica.mount_empty(&at);
    }
    for secret in seq(&service["secrets"]) {
        let source = secret["source"].as_str().unwrap_or_else(|| str_of(secret));
        let target = secret["target"].as_str().unwrap_or(source);
        let at = if target.starts_with('/') {
            target.to_owned()
        } else {
            format!("/run/secrets/{target}")
        };
        replica.write(&at, &secret_text(source));
    }
    assert!(
        service["volumes"].is_null(),
        "a replica mounts no config of its own"
    );
    replica
}

fn dockerfile_image_title() -> String {
    let text = read(&repo().join("Dockerfile"));
    let at = text
        .find("org.opencontainers.image.title=\"")
        .expect("the Dockerfile labels its image title");
    let rest = &text[at + "org.opencontainers.image.title=\"".len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

// ---------------------------------------------------------------------------------------------
// The image alone.

#[test]
fn the_image_sets_its_defaults_in_a_config_file_not_in_env_that_would_override_mounted_files() {
    let image = Image::from_dockerfile();
    let overrides: Vec<&String> = image
        .env
        .keys()
        .filter(|k| k.starts_with(config::ENV_PREFIX))
        .collect();
    assert!(
        overrides.is_empty(),
        "the image sets {overrides:?}: a variable beats every config file, so a mounted \
         config.toml could not change that key; put it in deploy/image-config.toml"
    );

    // `docker run IMAGE` with nothing added: reachable from outside the container, JSON logs,
    // titles in SQLite on the image's volume.
    let container = Container::of(&image);
    let config = container.config();
    assert!(config.listen.ip().is_unspecified(), "{}", config.listen);
    assert_eq!(config.listen.port(), Config::default().listen.port());
    assert_eq!(config.log_format, LogFormat::Json);
    let StoreUrl::Sqlite(file) = &config.titles.store else {
        panic!(
            "the image alone keeps titles in SQLite: {:?}",
            config.titles.store
        );
    };
    assert!(
        image.volumes.iter().any(|v| file.starts_with(v)),
        "{} lies on a VOLUME ({:?})",
        file.display(),
        image.volumes
    );
    assert!(
        read(&repo().join("Dockerfile")).contains(&format!("EXPOSE {}", config.listen.port())),
        "the Dockerfile EXPOSEs the port the image listens on"
    );

    // A variable still overrides the image's file (what compose relies on).
    let mut with_env = Container::of(&image);
    with_env.env.insert(
        "HARNESS_PROXY__TITLES__STORE".to_owned(),
        "redis://elsewhere:6379/0".to_owned(),
    );
    assert_eq!(redis_host(&with_env.config().titles.store), "elsewhere");

    // Its user and group are the ones the Deployment runs as.
    assert_eq!(image.user, "10001:10001", "USER uid:gid");
    let k = kustomization();
    let security = &deployment(&k)["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(security["runAsUser"], 10001);
    assert_eq!(security["runAsGroup"], 10001);
}

#[test]
fn the_build_context_holds_the_sources_and_no_secret() {
    let rules = DockerIgnore::parse(&read(&repo().join(".dockerignore")));
    let context = rules.context(repo());

    // What the build reads is there: every file it copies, everything compiled in.
    let stages = dockerfile_stages();
    let mut copied = Vec::new();
    for (keyword, args) in stages.iter().flatten() {
        if (keyword == "COPY" || keyword == "ADD")
            && let Some((sources, _)) = context_copy(args)
        {
            copied.extend(sources);
        }
    }
    assert!(
        !copied.iter().any(|s| s == "." || s.contains('*')),
        "the Dockerfile copies named paths, not the whole context: {copied:?}"
    );
    for source in &copied {
        let on_disk = repo().join(source);
        assert!(on_disk.exists(), "{source} exists");
        let under = walk(&on_disk, repo());
        assert!(!under.is_empty(), "{source} has files");
        for file in under {
            assert!(context.contains(&file), "{file} is in the build context");
        }
    }
    for file in walk(&repo().join("src"), repo()) {
        let text = read(&repo().join(&file));
        for at in text.match_indices("include_str!(\"").map(|(at, _)| at) {
            let rest = &text[at + "include_str!(\"".len()..];
            let relative = &rest[..rest.find('"').unwrap()];
            let target = Path::new(&file).parent().unwrap().join(relative);
            let target = normalize(&target);
            assert!(
                context.contains(&target),
                "{target}, compiled in by {file}, is in the build context"
            );
        }
    }
    // Benches declared without a path must exist for the manifest to load: the dependency
    // layer's stubs stand in for them (benches/ is not in the context).
    let manifest: toml::Table = read(&repo().join("Cargo.toml")).parse().unwrap();
    let dockerfile = read(&repo().join("Dockerfile"));
    for bench in manifest["bench"].as_array().unwrap() {
        let path = bench.get("path").and_then(toml::Value::as_str).map_or_else(
            || format!("benches/{}.rs", bench["name"].as_str().unwrap()),
            str::to_owned,
        );
        assert!(
            context.contains(&path) || dockerfile.contains(&path),
            "{path} is in the context or stubbed in the Dockerfile"
        );
    }

    // What it must never see, whether or not this checkout has it on disk.
    for file in &context {
        assert!(
            !file.starts_with("deploy/secrets/")
                && !file.starts_with("target/")
                && file != ".git"
                && !file.starts_with(".git/")
                && !file.ends_with(".key")
                && !file.ends_with(".pem")
                && !file.contains(".db")
                && !file.ends_with(".env"),
            "{file} must not be in the build context"
        );
    }
    for path in [
        "deploy/secrets/upstream_key",
        "deploy/secrets",
        "deploy/.env",
        ".env",
        "target/release/harness-proxy",
        ".git/HEAD",
        ".git",
        "harness-proxy.db",
        "harness-proxy.db-wal",
        "src/leftover.key",
        "src/cert.pem",
        "src/.env",
        "prompts/secrets/token",
        "bench/fixtures/x.json",
        "tests/it/main.rs",
        "deploy/kubernetes/config.toml",
    ] {
        assert!(
            rules.excluded(path),
            "{path} is kept out of the build context"
        );
    }
}

/// `.dockerignore` as Docker reads it: one pattern per line (`#` comments), `!` lets a path back
/// in, the last pattern matching a path or one of its parent directories decides; `*` and `?`
/// stay within a path segment, `**` spans any number of them.
struct DockerIgnore {
    rules: Vec<(bool, Vec<String>)>,
}

impl DockerIgnore {
    fn parse(text: &str) -> Self {
        let rules = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|line| {
                let (exception, pattern) = match line.strip_prefix('!') {
                    Some(p) => (true, p.trim()),
                    None => (false, line),
                };
                assert!(
                    !pattern.contains('[') && !pattern.contains('\\'),
                    "pattern {pattern:?}: only *, ? and ** are read here"
                );
                let segments: Vec<String> = pattern
                    .trim_start_matches('/')
                    .split('/')
                    .filter(|s| !s.is_empty() && *s != ".")
                    .map(str::to_owned)
                    .collect();
                // Docker walks into an excluded directory only for an exception whose text starts
                // with that directory's literal path: an exception with a wildcard directory may
                // let nothing back in.
                assert!(
                    !exception
                        || segments[..segments.len() - 1]
                            .iter()
                            .all(|s| !s.contains(['*', '?'])),
                    "exception {pattern:?} has a wildcard directory"
                );
                (exception, segments)
            })
            .collect();
        DockerIgnore { rules }
    }

    fn segment_matches(pattern: &str, name: &str) -> bool {
        fn go(p: &[u8], n: &[u8]) -> bool {
            match p.split_first() {
                None => n.is_empty(),
                Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
                Some((b'?', rest)) => !n.is_empty() && go(rest, &n[1..]),
                Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
            }
        }
        go(pattern.as_bytes(), name.as_bytes())
    }

    fn matches(pattern: &[String], path: &[&str]) -> bool {
        match pattern.split_first() {
            None => path.is_empty(),
            Some((first, rest)) if first == "**" => {
                (0..=path.len()).any(|i| Self::matches(rest, &path[i..]))
            }
            Some((first, rest)) => path.split_first().is_some_and(|(name, tail)| {
                Self::segment_matches(first, name) && Self::matches(rest, tail)
            }),
        }
    }

    fn excluded(&self, path: &str) -> bool {
        let segments: Vec<&str> = path.split('/').collect();
        let mut excluded = false;
        for (exception, pattern) in &self.rules {
            let hit = (1..=segments.len()).any(|n| Self::matches(pattern, &segments[..n]));
            if hit {
                excluded = !exception;
            }
        }
        excluded
    }

    /// Whether an exception could let back in something under this excluded directory.
    fn may_reinclude_under(&self, dir: &str) -> bool {
        let segments: Vec<&str> = dir.split('/').collect();
        self.rules.iter().any(|(exception, pattern)| {
            *exception
                && (pattern.iter().any(|p| p == "**")
                    || (pattern.len() > segments.len()
                        && segments
                            .iter()
                            .zip(pattern)
                            .all(|(name, p)| Self::segment_matches(p, name))))
        })
    }

    /// Every file of `root` that goes into the build context, as relative paths.
    fn context(&self, root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut dirs = vec![String::new()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(root.join(&dir)).unwrap() {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                let excluded = self.excluded(&path);
                if entry.file_type().unwrap().is_dir() {
                    if !excluded || self.may_reinclude_under(&path) {
                        dirs.push(path);
                    }
                } else if !excluded {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }
}

/// Files under `path` (itself, if a file) relative to `root`.
fn walk(path: &Path, root: &Path) -> Vec<String> {
    if path.is_file() {
        return vec![
            path.strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        ];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        out.extend(walk(&entry.unwrap().path(), root));
    }
    out
}

/// `a/b/../c` → `a/c`.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

// ---------------------------------------------------------------------------------------------
// Kubernetes.

#[test]
fn kustomization_lists_every_manifest_and_they_all_parse() {
    let dir = kubernetes_dir();
    let file = kustomization_file();
    let mut listed = strings(&file["resources"]);
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    present.sort();
    assert_eq!(listed, present, "kustomization.yaml lists every manifest");
    let k = kustomization();
    for doc in &k.docs {
        assert!(
            doc["apiVersion"].is_string() && doc["kind"].is_string(),
            "{doc:?}"
        );
    }
    // ConfigMaps are generated (a content hash in their name rolls the pods on any change).
    assert!(
        k.docs.iter().all(|d| d["kind"] != "ConfigMap"),
        "ConfigMaps come from configMapGenerator, so an edit reaches the pods"
    );
    assert!(k.config_maps.contains_key("harness-proxy-config"));
    // The minimum version is stated where an operator looks.
    let readme = read(&deploy_dir().join("README.md"));
    for text in [read(&dir.join("kustomization.yaml")), readme] {
        assert!(text.contains("Kubernetes >= 1.25") || text.contains("Kubernetes ≥ 1.25"));
    }
}

#[test]
fn a_pod_runs_with_the_configmap_and_the_shared_redis_store() {
    let image = Image::from_dockerfile();
    let mut k = kustomization();
    let pod = render_pod(&k, &image);
    let config = pod.config();

    // The store is the in-cluster Redis Service, as the ConfigMap says, not the image's SQLite.
    let host = redis_host(&config.titles.store);
    let redis = find(&k.docs, "Service", &host);
    assert_eq!(redis["spec"]["ports"][0]["port"], 6379);
    // Every key of the ConfigMap's config.toml is what the pod runs with (no ENV overrides it).
    let configmap_text = k.config_maps["harness-proxy-config"]["config.toml"].clone();
    assert_eq!(
        pod.config_file(),
        configmap_text,
        "the ConfigMap is the file"
    );
    assert_every_key_of_the_file_holds(&configmap_text, &config, "the ConfigMap");
    assert_eq!(config.titles.instance_id.as_deref(), Some(POD_NAME));
    let key_file = config.upstream.api_key_file.as_ref().expect("a key file");
    assert_eq!(
        read(&pod.path(&key_file.display().to_string())),
        secret_text("harness-proxy-upstream")
    );
    assert!(config.upstream.api_key.is_none());
    // Every pod seals reasoning with the one key of the Secret harness-proxy-reasoning.
    let seal = seal_key(&pod, &config);
    assert_eq!(seal, secret_text("harness-proxy-reasoning"));
    let other = render_pod(&k, &image);
    assert_eq!(
        seal_key(&other, &other.config()),
        seal,
        "the same in every pod"
    );

    // The prompts ConfigMap ships no override: the built-in prompts are used.
    let prompts = pod.prompts(&config);
    assert!(config.prompts_dir.is_some());
    assert_eq!(prompts.title, Prompts::load(None).unwrap().title);

    // An operator's edit of the ConfigMap reaches the process.
    let edited = configmap_text
        .replace("listen = \"0.0.0.0:8080\"", "listen = \"0.0.0.0:9090\"")
        .replace("log_format = \"json\"", "log_format = \"human\"");
    assert_ne!(edited, configmap_text);
    k.config_maps
        .get_mut("harness-proxy-config")
        .unwrap()
        .insert("config.toml".to_owned(), edited);
    let edited = pod_config(&k, &image);
    assert_eq!(edited.listen, "0.0.0.0:9090".parse::<SocketAddr>().unwrap());
    assert_eq!(edited.log_format, LogFormat::Human);

    // So does a prompt added to the prompts ConfigMap.
    k.config_maps
        .get_mut("harness-proxy-prompts")
        .unwrap()
        .insert("opencode-title.md".to_owned(), "Name it.\n".to_owned());
    let with_prompt = render_pod(&k, &image);
    let title = with_prompt.prompts(&with_prompt.config()).title;
    assert_eq!(title, "Name it.\n");
}

fn pod_config(k: &Kustomization, image: &Image) -> Config {
    render_pod(k, image).config()
}

/// `640Mi` → MiB.
fn mebibytes(quantity: &str) -> f64 {
    let units = [("Ki", 1.0 / 1024.0), ("Mi", 1.0), ("Gi", 1024.0)];
    for (suffix, factor) in units {
        if let Some(number) = quantity.strip_suffix(suffix) {
            return number.parse::<f64>().unwrap() * factor;
        }
    }
    panic!("quantity {quantity:?}: use Ki, Mi or Gi");
}

#[tokio::test]
async fn the_deployment_agrees_with_the_config_the_routes_and_the_image() {
    let image = Image::from_dockerfile();
    let k = kustomization();
    let deployment = deployment(&k);
    let pod_spec = &deployment["spec"]["template"]["spec"];
    let container = &pod_spec["containers"][0];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let config = pod_config(&k, &image);

    // Ports: the container's, the config's listen port and the Service's target.
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert_eq!(port, u64::from(config.listen.port()));
    let service = find(&k.docs, "Service", "harness-proxy");
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"],
        container["ports"][0]["name"]
    );
    assert_eq!(&service["spec"]["selector"], labels);
    let pdb = find(&k.docs, "PodDisruptionBudget", "harness-proxy");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], labels);
    let hpa = find(&k.docs, "HorizontalPodAutoscaler", "harness-proxy");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "harness-proxy");
    assert!(hpa["spec"]["minReplicas"].as_u64().unwrap() >= 2);
    assert!(
        seq(&hpa["spec"]["metrics"])
            .iter()
            .all(|m| m["resource"]["name"] != "memory"),
        "no memory target: the allocator keeps freed pages, so it would scale up and never down"
    );
    let policy = find(&k.docs, "NetworkPolicy", "harness-proxy-redis");
    assert_eq!(
        &policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"], labels,
        "only the proxy's pods reach the demo Redis"
    );

    // Grace: the pod gets longer than the preStop pause plus the proxy's own drain. The pause is
    // an exec of `sleep` (the `sleep` action needs Kubernetes 1.30).
    let pre_stop = &container["lifecycle"]["preStop"];
    assert!(pre_stop["sleep"].is_null(), "exec sleep, for any version");
    let command = strings(&pre_stop["exec"]["command"]);
    assert_eq!(command[0], "sleep");
    let pause: u64 = command[1].parse().unwrap();
    let grace = pod_spec["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        grace > pause + config.shutdown_grace.as_secs(),
        "terminationGracePeriodSeconds {grace} must exceed preStop {pause}s + shutdown_grace {:?}",
        config.shutdown_grace
    );

    // Hardening.
    assert_eq!(pod_spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    // Memory: request = limit (a busy pod is no early eviction candidate), at least what the
    // measured per-stream cost gives at the concurrency cap (read from the one place it is
    // written, docs/operations.md "Sizing") and the in-flight body budget's bound
    // (tests/it/memory.rs: 640 MiB).
    let request = mebibytes(str_of(&container["resources"]["requests"]["memory"]));
    let limit = mebibytes(str_of(&container["resources"]["limits"]["memory"]));
    assert!(
        (request - limit).abs() < f64::EPSILON,
        "{request} = {limit}"
    );
    let (per_stream, base) = sizing_budget();
    let streams = base + per_stream * config.limits.max_concurrent_requests as f64;
    assert!(
        request >= streams,
        "{request} MiB holds {streams} MiB of streams"
    );
    assert!(
        request >= 640.0,
        "{request} MiB holds the in-flight body budget"
    );

    // The key comes from a Secret reference only.
    let secret = seq(&pod_spec["volumes"])
        .iter()
        .find(|v| v["secret"].is_mapping())
        .expect("the upstream key comes from a Secret");
    assert!(secret["secret"]["secretName"].is_string());
    assert!(
        config
            .upstream
            .api_key_file
            .as_ref()
            .is_some_and(|f| f.starts_with("/run/secrets/harness-proxy")),
        "api_key_file points into the mounted Secret"
    );

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

/// The memory budget docs/operations.md "Sizing" states, `**Budget ~X MiB per stream plus ~Y
/// MiB**`, as (MiB per stream, MiB besides): the one source of the sizing figures.
fn sizing_budget() -> (f64, f64) {
    let text = read(&repo().join("docs/operations.md")).replace('\n', " ");
    let rest = text
        .split_once("**Budget ~")
        .expect("docs/operations.md states the budget as **Budget ~X MiB per stream plus ~Y MiB**")
        .1;
    let (per_stream, rest) = rest
        .split_once(" MiB per stream plus ~")
        .expect("the per-stream figure");
    let base = rest.split_once(" MiB").expect("the base figure").0;
    let figure = |text: &str| -> f64 {
        text.parse()
            .unwrap_or_else(|_| panic!("`{text}` is a figure in MiB"))
    };
    (figure(per_stream), figure(base))
}

#[test]
fn the_sizing_budget_is_read_from_the_operations_book() {
    let (per_stream, base) = sizing_budget();
    assert!(
        per_stream > 0.0 && per_stream < 1.0 && base > 0.0 && base < 100.0,
        "{per_stream} MiB per stream, {base} MiB besides"
    );
}

// ---------------------------------------------------------------------------------------------
// Compose.

#[test]
fn compose_replicas_run_with_the_shared_redis_store_over_the_images_default() {
    let image = Image::from_dockerfile();
    let compose = compose();
    let proxies = proxy_services(&compose);
    assert_eq!(proxies.len(), 2, "two proxy replicas");
    for (name, service) in &proxies {
        let replica = compose_replica(service, &image);
        let config = replica.config();
        let host = redis_host(&config.titles.store);
        assert!(
            compose["services"][host.as_str()]["image"]
                .as_str()
                .is_some_and(|i| image_name(i) == "redis"),
            "{name}'s store is the compose Redis service"
        );
        assert!(
            config.listen.ip().is_unspecified(),
            "{name} listens outside"
        );
        let key_file = config.upstream.api_key_file.as_ref().expect("a key file");
        assert_eq!(
            read(&replica.path(&key_file.display().to_string())),
            secret_text("upstream_key"),
            "{name} reads the key from its secret"
        );
        assert_eq!(
            seal_key(&replica, &config),
            secret_text("reasoning_key"),
            "{name} seals reasoning with the key of the one secret every replica mounts"
        );
        assert!(config.upstream.api_key.is_none(), "no key in the file");
        assert_eq!(service["read_only"], true);
        assert!(
            config.shutdown_grace.as_secs()
                < humantime::parse_duration(str_of(&service["stop_grace_period"]))
                    .unwrap()
                    .as_secs(),
            "{name} is given longer than its drain before it is killed"
        );
    }
    assert!(compose["secrets"]["upstream_key"]["file"].is_string());
    assert!(compose["secrets"]["reasoning_key"]["file"].is_string());
}

/// Issue 30 item 6: under podman the container's resolv.conf lists aardvark-dns and then the
/// host's resolvers, which do not know the replicas' names; nginx asks its resolvers in turn, so
/// one replica was always unresolvable. The balancer's entrypoint keeps only the first, the
/// network's own. What runs here is the script's choice on each runtime's resolv.conf; nginx
/// under podman itself is not run (no container runtime in the suite).
#[test]
fn the_balancer_asks_only_the_container_network_s_resolver() {
    use std::os::unix::fs::PermissionsExt;
    let compose = compose();
    let lb = &compose["services"]["lb"];
    let mount = strings(&lb["volumes"])
        .into_iter()
        .find(|v| v.contains("nginx-resolver.envsh"))
        .expect("the lb mounts the resolver script");
    let (source, rest) = mount.split_once(':').unwrap();
    let target = rest.split(':').next().unwrap();
    // Sourced after the image's own resolver list is made, before the template is rendered.
    let name = target.strip_prefix("/docker-entrypoint.d/").expect(target);
    assert!(name.ends_with(".envsh"), "{name}");
    assert!(name > "15-local-resolvers.envsh" && name < "20-envsubst-on-templates.sh");
    let script = deploy_dir().join(source);
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert!(
        mode & 0o111 != 0,
        "the entrypoint sources only executable .envsh files"
    );
    for (resolv_conf, expected) in [
        // podman (netavark + aardvark-dns): the network's gateway, then the host's.
        (
            "search dns.podman\nnameserver 10.89.0.1\nnameserver 192.168.1.1\n",
            "10.89.0.1",
        ),
        // Docker: its embedded DNS alone.
        ("nameserver 127.0.0.11\noptions ndots:0\n", "127.0.0.11"),
        ("nameserver fd00::1\nnameserver 10.0.0.1\n", "[fd00::1]"),
    ] {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), resolv_conf).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", ". \"$0\"; printf %s \"$NGINX_LOCAL_RESOLVERS\""])
            .arg(&script)
            .env("RESOLV_CONF", file.path())
            .env("NGINX_LOCAL_RESOLVERS", "10.89.0.1 192.168.1.1")
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "{resolv_conf:?}"
        );
    }
}

#[test]
fn nginx_re_resolves_the_replicas_and_gives_up_on_a_gone_one_fast() {
    let image = Image::from_dockerfile();
    let compose = compose();
    let lb = &compose["services"]["lb"];
    let template_mount = strings(&lb["volumes"])
        .into_iter()
        .find(|v| v.contains("nginx.conf.template"))
        .expect("the lb mounts the template");
    let (source, rest) = template_mount.split_once(':').unwrap();
    let target = rest.split(':').next().unwrap();
    assert_eq!(target, "/etc/nginx/templates/nginx.conf.template");
    assert_eq!(lb["environment"]["NGINX_ENVSUBST_OUTPUT_DIR"], "/etc/nginx");
    assert!(lb["environment"]["NGINX_ENTRYPOINT_LOCAL_RESOLVERS"].is_string());
    let nginx = read(&deploy_dir().join(source));

    // `resolve` on upstream servers is open-source nginx from 1.27.3 on.
    let version: Vec<u32> = str_of(&lb["image"])
        .split_once(':')
        .unwrap()
        .1
        .split('-')
        .next()
        .unwrap()
        .split('.')
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(
        version.as_slice() >= [1, 27, 3].as_slice(),
        "nginx {version:?} has no `resolve`"
    );
    let lines: Vec<&str> = nginx
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    let directive = |name: &str| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(name).filter(|r| r.starts_with(' ')))
            .map(|r| r.trim().trim_end_matches(';').to_owned())
            .collect()
    };
    let resolver = directive("resolver");
    assert_eq!(resolver.len(), 1, "one resolver");
    assert!(resolver[0].starts_with("${NGINX_LOCAL_RESOLVERS} "));
    let valid = resolver[0]
        .split_whitespace()
        .find_map(|w| w.strip_prefix("valid="))
        .expect("a short TTL");
    assert!(humantime::parse_duration(valid).unwrap().as_secs() <= 10);
    assert!(!directive("zone").is_empty(), "`resolve` needs a zone");
    let servers = directive("server");
    for (name, _) in proxy_services(&compose) {
        assert!(
            servers
                .iter()
                .any(|s| s.starts_with(&format!("{name}:8080 ")) && s.contains(" resolve")),
            "the balancer sends to {name:?} and re-resolves it: {servers:?}"
        );
    }
    let connect = directive("proxy_connect_timeout");
    assert!(humantime::parse_duration(&connect[0]).unwrap().as_secs() <= 2);
    let retries = directive("proxy_next_upstream");
    assert!(
        !retries[0].contains("non_idempotent"),
        "a sent POST is not retried, as the comment says"
    );
    // nginx drops an idle connection before the replica would.
    let (_, service) = &proxy_services(&compose)[0];
    let replica = compose_replica(service, &image).config();
    let keepalive = humantime::parse_duration(&directive("keepalive_timeout")[0]).unwrap();
    assert!(keepalive < replica.limits.keep_alive_timeout);
    assert!(
        str_of(&lb["ports"][0]).ends_with(&format!(":{}", replica.listen.port())),
        "the balancer listens on the replicas' port"
    );
}

// ---------------------------------------------------------------------------------------------
// The operator's document.

#[test]
fn the_deploy_readme_stands_on_its_own() {
    let readme = read(&deploy_dir().join("README.md"));
    // It names every file it asks the operator to use, and points at nothing outside the
    // repository (no machine paths, no shared folders, only links to the repository's files).
    for file in walk(&deploy_dir(), &deploy_dir()) {
        let name = Path::new(&file).file_name().unwrap().to_string_lossy();
        if name != "README.md" && name != ".gitignore" {
            assert!(readme.contains(&*name), "deploy/README.md names {file}");
        }
    }
    for outside in ["/work/", "shared/", "../../"] {
        assert!(
            !readme.contains(outside),
            "deploy/README.md mentions {outside}"
        );
    }
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap().split('#').next().unwrap();
        if target.is_empty() || target.contains("://") {
            continue;
        }
        let resolved = deploy_dir().join(target).canonicalize();
        assert!(
            resolved.is_ok_and(|p| p.starts_with(repo().canonicalize().unwrap())),
            "deploy/README.md links {target}, not a file of the repository"
        );
    }
    // The key goes to Kubernetes from a file, never on a command line.
    assert!(readme.contains("--from-file=api-key="));
    assert!(!readme.contains("--from-literal"));
}
