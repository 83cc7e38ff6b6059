// Package image checks the operator image's Dockerfile without a container engine: the final
// stage with BuildKit's own parser, and the build stage's go build commands on the host.
package image
