# syntax=docker/dockerfile:1
# The harness-proxy image. Multi-stage: compile in the Rust image, run from a small Debian base as
# a non-root user (uid and gid 10001). Build from the repository root:
#   docker build -t harness-proxy:latest .
# The build context is only what .dockerignore lets in (the manifest, .cargo/config.toml, src/,
# prompts/, ui/ and deploy/image-config.toml): never deploy/secrets, target/ or .git.

FROM rust:1.95-slim-bookworm AS build
# make: the allocator, jemalloc (tikv-jemalloc-sys), is built by its own configure and make.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# 1. Dependencies only, in their own layer: a skeleton crate with the real manifest and lock file.
#    This layer is rebuilt only when Cargo.toml or Cargo.lock change, not on a source change.
#    Benches declared without a path must exist for the manifest to load; their stubs stay for
#    step 2 (tests/ and benches/ are not in the build context; explicit test paths may be absent).
COPY Cargo.toml Cargo.lock ./
# jemalloc's compiled-in options (its decay times) are set here, as for `cargo build` anywhere.
COPY .cargo/config.toml .cargo/config.toml
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && for f in benches/hot_path.rs benches/end_to_end.rs; do echo 'fn main() {}' > "$f"; done \
 && cargo build --release --locked --bin harness-proxy \
 && rm -rf src \
      target/release/harness-proxy* target/release/deps/harness_proxy-* \
      target/release/deps/libharness_proxy-* target/release/.fingerprint/harness-proxy-*
# 2. The crate itself: its sources, and the prompts and console files compiled in.
COPY src src
COPY prompts prompts
COPY ui ui
RUN cargo build --release --locked --bin harness-proxy

FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="harness-proxy" \
      org.opencontainers.image.description="OpenAI Chat Completions proxy that runs any coding agent as if it were opencode"
# curl: only for the HEALTHCHECK below. The user and its group are both 10001 (what the
# Kubernetes securityContext sets); /data is created empty, owned by them, without the dotfiles
# `useradd --create-home` would copy in.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 harness \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin harness \
 && install -d -o 10001 -g 10001 -m 0750 /data
COPY --from=build /src/target/release/harness-proxy /usr/local/bin/harness-proxy
# The image's defaults as a config file, not as ENV: a HARNESS_PROXY__… variable would override
# the config file an orchestrator mounts here (deploy/image-config.toml says what each key does).
COPY deploy/image-config.toml /etc/harness-proxy/config.toml
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# /healthz: the process answers (liveness). Orchestrators should gate traffic on /readyz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["harness-proxy"]
# Another subcommand takes the file the same way: `docker run IMAGE check-config --config
# /etc/harness-proxy/config.toml`.
CMD ["serve", "--config", "/etc/harness-proxy/config.toml"]
