# goodput's image: one static binary on a distroless base, run as a
# non-root user. Build it with
#
#   docker build -t goodput:latest .
#
# and push it where the cluster pulls from (goodput k8s job --image).

# The builder: the module's own Go version, modules fetched before the
# sources are copied so that a source change reuses the download layer.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
ARG VERSION=dev
# No cgo: a static binary that needs no libc in the final image.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/goodput/goodput/internal/cli.Version=${VERSION}" \
      -o /out/goodput ./cmd/goodput

# The image: distroless static (CA certificates, /etc/passwd with nonroot,
# no shell, no package manager).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/goodput /goodput
USER 65532:65532
WORKDIR /tmp
# The rendezvous of goodput bench --shards N --rendezvous HOST:7077.
EXPOSE 7077
ENTRYPOINT ["/goodput"]
CMD ["--help"]
