# syntax=docker/dockerfile:1
#
# The container image of `workload-report` (the CronJob of charts/workload-report).
#
#   docker build -t registry.example.com/platform/workload-report:0.1.0 .
#
# Two stages: the workspace is built with the pinned Rust toolchain, and only the release binary is
# copied into a distroless base (glibc + CA certificates, no shell, no package manager) that runs as
# the non-root user 65532, the uid the chart's Pod securityContext sets. The chart mounts the
# config read-only at /etc/workload-report and an emptyDir at /work; the root filesystem stays
# read-only. gator, when `engine` is gator or both, is downloaded at run time into /work and
# checked against its sha256 pin (or baked into a derived image and named by `gator.path`).
#
# This repository's CI does not build images (no container engine on its machines).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p workload-report \
 && install -D -m 0755 target/release/workload-report /out/workload-report

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/workload-report /usr/local/bin/workload-report
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/workload-report"]
CMD ["--help"]
