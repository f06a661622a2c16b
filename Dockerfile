# syntax=docker/dockerfile:1
# The scheduler image: `make image` (docker build -t tailor-scheduler:dev .). The builder runs on
# the build machine's platform and cross-compiles for the target, so
# `docker buildx build --platform linux/amd64,linux/arm64` gives an image for Graviton nodes too.
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
COPY --from=build /tailor-scheduler /tailor-scheduler
USER 65532:65532
ENTRYPOINT ["/tailor-scheduler"]
