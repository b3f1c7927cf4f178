# syntax=docker/dockerfile:1
# The receiptfleet image: built with the Swift toolchain, run on a slim Debian that holds only the
# C libraries the binary links (hiredis, libcurl, libpq), the CA certificates for Apple's TLS, and
# stunnel4 for the TLS sidecar to a managed Redis (hiredis 0.14 has no TLS; docs/operations.md,
# "TLS to Redis"). One image runs every process: worker, relay, schedule, serve, migrate,
# simulate-appstore, and the sidecar (`stunnel4 /etc/stunnel/redis.conf`).
#
#   docker build -t receiptfleet .
#   docker run --rm receiptfleet worker --help
#
# (No Docker engine runs where ReceiptFleet is developed: Tests/DeployTests checks this file's
# stages and packages, not a build.)

FROM swift:6.3-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends pkg-config libhiredis-dev libcurl4-openssl-dev libpq-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The dependencies first, so that a change to the sources does not fetch them again.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
# SwiftPM checks every target's folder, the test targets' too.
COPY Tests ./Tests
# The Swift runtime and Foundation go into the binary, so the runtime image needs no toolchain.
RUN swift build -c release --product receiptfleet --static-swift-stdlib \
    && install -D "$(swift build -c release --show-bin-path)/receiptfleet" /out/receiptfleet

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libhiredis0.14 libcurl4 libpq5 ca-certificates tzdata stunnel4 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin receiptfleet
COPY --from=build /out/receiptfleet /usr/local/bin/receiptfleet
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
# Metrics (every process), the API (serve), the simulator.
EXPOSE 9464 8080 9180
ENTRYPOINT ["/usr/local/bin/receiptfleet"]
CMD ["--help"]
