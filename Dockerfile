# Strata server image.
#
#   docker build -t strata .
#   docker run -d -p 9000:9000 -v strata-data:/data \
#       -e STRATA_ROOT_USER=admin -e STRATA_ROOT_PASSWORD='a-long-secret' strata
#
# STRATA_ROOT_USER and STRATA_ROOT_PASSWORD are required: the server listens on 0.0.0.0
# here, and it refuses any non-loopback address while the default credentials are in use
# (it exits with a message saying so).
#
# Data: nine drive folders /data/d1 ... /data/d9 (one 6+3 erasure set) on the /data volume;
# the server expands the `{1...9}` range itself. A named volume takes /data's ownership from
# the image; a bind-mounted host folder must be writable by uid 10001. Other drives or flags:
# pass them as the command, e.g. `... strata --ec 4+2 /data/d{1...6}` (quoted in a shell).

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin strata

FROM debian:bookworm-slim
# tini is PID 1: it forwards docker stop's SIGTERM to the server and reaps children.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 strata \
    && useradd --system --uid 10001 --gid strata --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin strata \
    && mkdir /data \
    && chown strata:strata /data
COPY --from=build /src/target/release/strata /usr/local/bin/strata
USER strata
WORKDIR /data
VOLUME /data
EXPOSE 9000
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/strata", "server", "--address", "0.0.0.0:9000"]
# Exec form: no shell sees the braces, so strata receives the range and expands it.
CMD ["/data/d{1...9}"]
