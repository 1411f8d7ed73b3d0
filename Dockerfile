# One image, three programs: the operator (manager, the entrypoint), the cache server
# (iocache-server) and the load generator (iocache-bench). The operator deploys servers and
# benchmark Jobs from the image it runs in, so the three never drift apart in version.

# Build stage: static binaries, exactly as `make build` names them, cross-compiled on the build
# machine's own platform for each target platform (docker buildx build --platform
# linux/amd64,linux/arm64, as make docker-build does): no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG VERSION=0.1.0
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY Makefile ./
COPY api/ api/
COPY controllers/ controllers/
COPY server/ server/
COPY hack/boilerplate.go.txt hack/
RUN GOOS=${TARGETOS} GOARCH=${TARGETARCH} make build VERSION=${VERSION}

# Runtime stage: no shell, no package manager, non-root.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/iocache/iocache" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.description="iocache: operator, Redis-compatible server and load generator"
COPY --from=build /src/bin/manager /usr/local/bin/manager
COPY --from=build /src/bin/iocache-server /usr/local/bin/iocache-server
COPY --from=build /src/bin/iocache-bench /usr/local/bin/iocache-bench
USER 65532:65532
EXPOSE 6379 9121
ENTRYPOINT ["/usr/local/bin/manager"]
