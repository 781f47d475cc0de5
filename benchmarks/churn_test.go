package benchmarks

import (
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// BenchmarkConnectionChurn is a client that opens a new connection for
// every request (a script, a function, a client without a pool), baseline
// against meshed, across the concurrency sweep. The churn is on the
// client's own hop: a TCP connect and accept per request into its
// outbound sidecar, or into the backend in the baseline. The sidecars keep
// their mTLS connections to each other pooled, so it is not an mTLS
// handshake per request, and the path proof shows it: on the local target
// its CONNECTIONS column is 1 per request on the baseline's edge and a few
// connections in all on the meshed one (counted by the backend's sidecar).
func BenchmarkConnectionChurn(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Workload: testbed.Workload{NewConnections: true}})
}
