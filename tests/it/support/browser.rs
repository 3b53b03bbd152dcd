//! A real headless Chromium, driven over WebDriver (chromedriver's HTTP API, spoken with reqwest).
//! Missing browser: the test is skipped visibly (`support::skip`: a `SKIPPED` line and an entry in
//! the skip ledger), except in CI (`CI=true`), where it fails — `.ci/run` installs the Debian
//! packages `chromium` and `chromium-driver`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::skip::{ran, skip};

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/lib/chromium")])
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

impl Browser {
    /// `None` (a visible skip) when Chromium or chromedriver is not installed outside CI.
    pub async fn start() -> Option<Self> {
        let chromium = find(&["chromium", "chromium-browser", "google-chrome"]);
        let driver = find(&["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            return skip(
                "the browser test",
                "chromium and chromedriver are not installed \
                 (apt-get install -y chromium chromium-driver)",
            );
        };
        ran("the browser test");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("addr").port()
        };
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Self {
            driver: child,
            base,
            session: String::new(),
            http,
        };
        browser.wait_ready().await;
        let profile = tempfile::tempdir().expect("profile dir").keep();
        let created = browser
            .call(
                reqwest::Method::POST,
                "/session",
                json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-dev-shm-usage", "--window-size=1280,900",
                                 format!("--user-data-dir={}", profile.display())]
                    }
                }}}),
            )
            .await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_owned();
        Some(browser)
    }

    async fn wait_ready(&self) {
        for _ in 0..400 {
            let ready = self
                .http
                .get(format!("{}/status", self.base))
                .send()
                .await
                .ok()
                .map(|r| r.status().is_success());
            if ready == Some(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("chromedriver did not start");
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if !body.is_null() {
            request = request.json(&body);
        }
        let response = request.send().await.expect("WebDriver call");
        let value: Value = response.json().await.expect("WebDriver JSON");
        value["value"].clone()
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub async fn goto(&self, url: &str) {
        self.call(
            reqwest::Method::POST,
            &self.session_path("/url"),
            json!({"url": url}),
        )
        .await;
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) in the page, returning its value.
    pub async fn eval(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            &self.session_path("/execute/sync"),
            json!({"script": script, "args": args}),
        )
        .await
    }

    /// Evaluates `script` until it returns `true`-ish; fails after 20 s with `what`.
    pub async fn wait_for(&self, what: &str, script: &str, args: Value) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let value = self.eval(script, args.clone()).await;
            if !(value.is_null() || value == json!(false) || value == json!("")) {
                return value;
            }
            if tokio::time::Instant::now() >= deadline {
                let page = self
                    .eval("return document.body.innerText;", json!([]))
                    .await;
                panic!(
                    "the page never showed {what}; it shows:\n{}",
                    page.as_str().unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends the session, which closes Chromium.
    pub async fn quit(self) {
        self.call(reqwest::Method::DELETE, &self.session_path(""), Value::Null)
            .await;
    }

    /// Saves a PNG of the page and returns where.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        use base64::Engine;
        let encoded = self
            .call(
                reqwest::Method::GET,
                &self.session_path("/screenshot"),
                Value::Null,
            )
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().expect("base64 screenshot"))
            .expect("valid base64");
        let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::write(&path, bytes).expect("write screenshot");
        path
    }
}

impl Drop for Browser {
    /// A failing test must not leave chromedriver behind (`quit` also closes Chromium first).
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
