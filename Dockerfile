# syntax=docker/dockerfile:1
# The scheduler image: `make image` (docker buildx build --platform linux/amd64,linux/arm64
# --build-arg VERSION=<git describe> -t tailor-scheduler:<version> .). The builder runs on the build
# machine's platform and cross-compiles for each target, so one build gives an image for x86 and
# Graviton nodes without emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags=-s -o /tailor-scheduler ./cmd/scheduler

FROM gcr.io/distroless/static-debian12:nonroot
# The version only labels the image. It is not stamped into the binary: the one version variable
# there, k8s.io/component-base/version's, is a Kubernetes version (kube-scheduler's --version,
# kubernetes_build_info, and what its metrics registry compares deprecated metrics against).
ARG VERSION=dev
LABEL org.opencontainers.image.title="tailor-scheduler" org.opencontainers.image.version="${VERSION}"
COPY --from=build /tailor-scheduler /tailor-scheduler
USER 65532:65532
ENTRYPOINT ["/tailor-scheduler"]
