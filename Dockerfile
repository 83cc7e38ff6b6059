# The operator image: dgdr-operator (controllers, webhooks and the `report` subcommand that runs
# inside every search Job) and dgdrctl. The Planner image that runs AISimulate is NOT built here:
# it comes from the Dynamo release that matches this operator version (docs/guide/user-guide.md, "On a real cluster").
#
#   make image IMG=registry.example.com/dgdr-operator:v0.1.0
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" \
      -o /out/dgdr-operator ./cmd/dgdr-operator && \
    CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/dgdrctl ./cmd/dgdrctl

# distroless/static: no shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/dgdr-operator /out/dgdrctl /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/dgdr-operator"]
