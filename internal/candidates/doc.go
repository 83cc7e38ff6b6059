// Package candidates turns a search's output into the ranked DynamoGraphDeploymentCandidates the
// reporter publishes, without a cluster: it reads the output under the output contract's caps
// (internal/searchoutput), maps a candidate record's metrics to the API (metrics.go), keeps the best
// candidates settled so far while the search runs (tally.go, best.go), renders each candidate
// (build.go), and reads a Run's kept artifacts back (artifacts.go). The reporter publishes what
// it builds; dgdrctl and the web view read with it.
package candidates
