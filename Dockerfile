# cuckood container image, in two stages on Debian 12:
#
#   build    compiler, CMake and the -dev packages; builds in Release mode without the tests and
#            installs into /staging.
#   runtime  debian:bookworm-slim with only the shared libraries the binary links, redis-cli for
#            the health check, the binary and conf/cuckood.conf; runs as a non-root user.
#
#   docker build -t cuckood .
#   docker run -d --name cuckood -p 127.0.0.1:6379:6379 -v cuckood-data:/data cuckood --requirepass secret
#
# Arguments after the image name are appended to the ENTRYPOINT, so any option of cuckood.conf can
# be given as a flag (flags win over the file; a later flag wins over an earlier one).
#
# Protected mode: the server listens on 0.0.0.0 but keeps the default `protected-mode yes`, so
# without a password it answers only clients on the container's own loopback (the health check)
# and refuses every other client, including the ones forwarded by `docker run -p`. Pass
# `--requirepass <password>` (recommended), or `--protected-mode no` on a private network.
#
# No Docker engine was available where this file was written: scripts/docker_check.sh checks it on
# a Debian 12 machine by reading the ARG lines below (keep the package lists and CMake flags there,
# each on one line), building and installing the same way, checking the libraries with ldd and
# dpkg, and running the ENTRYPOINT and the HEALTHCHECK. See docs/deployment.md.

ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG PREFIX=/usr/local

FROM ${DEBIAN_IMAGE} AS build
ARG PREFIX
ARG BUILD_PACKAGES="build-essential cmake librocksdb-dev libasio-dev libspdlog-dev libcli11-dev catch2 libssl-dev"
# Warnings stay on but are not errors here: at -O3 GCC 12 reports false positives (-Wrestrict on
# std::string concatenation, a known GCC 12 bug) that the -O2 development build does not; CI keeps
# -Werror on the development build.
ARG CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DCUCKOOD_TESTS=OFF -DCUCKOOD_WERROR=OFF"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${BUILD_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build ${CMAKE_ARGS} \
 && cmake --build build -j"$(nproc)" \
 && DESTDIR=/staging cmake --install build --prefix ${PREFIX} --strip

FROM ${DEBIAN_IMAGE} AS runtime
ARG PREFIX
# What `ldd cuckood` resolves to (RocksDB is linked statically: Debian's RocksDB::rocksdb CMake
# target is librocksdb.a, so librocksdb7.8 is not needed), plus redis-tools for redis-cli.
ARG RUNTIME_PACKAGES="libc6 libgcc-s1 libstdc++6 libspdlog1.10 libfmt9 libsnappy1v5 zlib1g libbz2-1.0 liblz4-1 libzstd1 libssl3 redis-tools"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 cuckood \
 && useradd --system --uid 10001 --gid cuckood --home-dir /data --no-create-home \
            --shell /usr/sbin/nologin cuckood \
 && mkdir -p /data \
 && chown cuckood:cuckood /data \
 && chmod 0750 /data
COPY --from=build /staging${PREFIX}/ ${PREFIX}/

USER cuckood
WORKDIR /data
VOLUME /data
EXPOSE 6379
# SIGTERM finishes the commands in flight and closes RocksDB cleanly; give it time with
# `docker stop -t 60` (or stop_grace_period in compose) for large databases.
STOPSIGNAL SIGTERM
# redis-cli exits 0 on any reply, so the reply is checked: PONG, or NOAUTH when a password is set
# (the server is up and answering). Set REDISCLI_AUTH in the container to get PONG instead.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD redis-cli -p 6379 ping | grep -Eq '^(PONG|NOAUTH)' || exit 1
ENTRYPOINT ["/usr/local/bin/cuckood", "--config", "/usr/local/etc/cuckood/cuckood.conf", "--bind", "0.0.0.0", "--dir", "/data"]
