# syntax=docker/dockerfile:1
# Multi-stage build: compile in the Rust image, run from a small Debian base as a non-root user.
# Build from the repository root: `docker build -t harness-proxy:latest .`

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# 1. Dependencies only, in their own layer: a skeleton crate with the real manifest and lock file.
#    This layer is rebuilt only when Cargo.toml or Cargo.lock change, not on a source change.
#    Explicitly declared targets (the `it` test, the benches) must exist for the manifest to load.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src tests/it benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && for f in tests/it/main.rs benches/hot_path.rs benches/end_to_end.rs; do echo 'fn main() {}' > "$f"; done \
 && cargo build --release --locked --bin harness-proxy \
 && rm -rf src tests benches \
      target/release/harness-proxy* target/release/deps/harness_proxy-* \
      target/release/deps/libharness_proxy-* target/release/.fingerprint/harness-proxy-*
# 2. The crate itself (the whole context, see .dockerignore; prompts are compiled in).
COPY . .
RUN cargo build --release --locked --bin harness-proxy

FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="harness-proxy" \
      org.opencontainers.image.description="OpenAI Chat Completions proxy that runs any coding agent as if it were opencode"
# curl: only for the HEALTHCHECK below.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --create-home harness
COPY --from=build /src/target/release/harness-proxy /usr/local/bin/harness-proxy
USER 10001
WORKDIR /data
# Every variable set here, and why (each overrides a config key; see README "Configuration"):
# - HARNESS_PROXY__LISTEN: listen on every interface inside the container (the default,
#   127.0.0.1:8080, would be unreachable from outside it). Port 8080, as EXPOSEd.
# - HARNESS_PROXY__TITLES__STORE: titles in the embedded SQLite file on the /data volume, so they
#   survive a container restart. Replicas set `redis://HOST:6379/0` instead (deploy/).
# - HARNESS_PROXY__LOG_FORMAT: one JSON object per line, for log collectors.
ENV HARNESS_PROXY__LISTEN=0.0.0.0:8080 \
    HARNESS_PROXY__TITLES__STORE=sqlite:///data/harness-proxy.db \
    HARNESS_PROXY__LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
# /healthz: the process answers (liveness). Orchestrators should gate traffic on /readyz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["harness-proxy"]
CMD ["serve"]
