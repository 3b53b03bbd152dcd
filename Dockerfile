# syntax=docker/dockerfile:1
# Multi-stage build: compile in the Rust image, run from a small Debian base as a non-root user.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# The whole context (see .dockerignore): explicitly declared test and bench targets must exist.
COPY . .
RUN cargo build --release --locked --bin harness-proxy

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --create-home harness
COPY --from=build /src/target/release/harness-proxy /usr/local/bin/harness-proxy
USER harness
WORKDIR /data
# Listen on every interface inside the container; titles go to the /data volume.
ENV HARNESS_PROXY__LISTEN=0.0.0.0:8080 \
    HARNESS_PROXY__TITLES__STORE=sqlite:///data/harness-proxy.db \
    HARNESS_PROXY__LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["harness-proxy"]
CMD ["serve"]
