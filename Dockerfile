# Strata server image.
#
#   docker build -t strata .
#   docker run -d -p 9000:9000 \
#       -e STRATA_ROOT_USER=admin -e STRATA_ROOT_PASSWORD='a-long-secret' \
#       -v strata-d1:/data/d1 -v strata-d2:/data/d2 ... -v strata-d9:/data/d9 strata
#
# Configured by environment variables, which deploy/docker-entrypoint.sh turns into the
# `strata server` command line: STRATA_ROOT_USER and STRATA_ROOT_PASSWORD (required: the
# server listens on 0.0.0.0 here and refuses the default credentials there; *_FILE variants
# read Docker secrets), STRATA_DRIVES, STRATA_EC (default 6+3), STRATA_ADDRESS (default
# 0.0.0.0:9000), STRATA_DOMAIN, STRATA_CERTS_DIR, STRATA_JSON_LOGS; the server reads the others
# (STRATA_LOG, STRATA_MAX_REQUESTS, ...) itself. Arguments starting with `-` are extra server
# flags; any other command runs instead of the server (e.g. `strata admin info`).
#
# Data: one volume per drive, /data/d1 ... /data/d9 (one 6+3 erasure set); in production put
# each on its own disk. Unmounted drives get anonymous volumes. A named volume takes the
# drive folder's ownership from the image; a bind-mounted host folder must be writable by uid
# 10001. Other layouts: STRATA_DRIVES='/data{1...9}' (strata expands the range) with a volume
# mounted on each. Examples: deploy/docker-compose.yml, deploy/kubernetes/statefulset.yaml.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin strata

FROM debian:bookworm-slim
# tini is PID 1: it forwards docker stop's SIGTERM to the server and reaps children.
# curl serves the HEALTHCHECK.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 strata \
    && useradd --system --uid 10001 --gid strata --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin strata \
    && mkdir -p /data/d1 /data/d2 /data/d3 /data/d4 /data/d5 /data/d6 /data/d7 /data/d8 /data/d9 \
    && chown -R strata:strata /data
COPY --from=build /src/target/release/strata /usr/local/bin/strata
COPY --chmod=0755 deploy/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
# Numeric, so Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /data
VOLUME ["/data/d1", "/data/d2", "/data/d3", "/data/d4", "/data/d5", "/data/d6", "/data/d7", "/data/d8", "/data/d9"]
# The S3 API, and the web console.
EXPOSE 9000 9001
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/docker-entrypoint.sh", "healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/docker-entrypoint.sh"]
