// Package chaos holds fault-injection tests that run against the sandbox (dgdr-sandbox): a
// burst of requests while the operator is SIGKILLed and restarted, the reporter killed
// mid-publication, the API server killed briefly, and leader election with two operator
// replicas. Build tag chaos, env DGDR_CHAOS=1; run with `make test-chaos`. See docs/develop/chaos.md.
package chaos
