package benchmarks

import (
	"testing"

	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/suite"
)

// BenchmarkProtocols runs h2 and gRPC end to end: HTTP/2 on every hop,
// h2 with ALPN between the sidecars over mTLS, and for gRPC fortio's ping
// calls against a gRPC backend. Multiplexed HTTP/2 and gRPC's framing and
// trailers cost a proxy differently from HTTP/1.1 (BenchmarkOneHop), and
// they are what most meshed services speak. Each hop's protocol is in the
// path proof.
func BenchmarkProtocols(b *testing.B) {
	mb.Sweep(b, suite.Scenario{Concurrency: []int{8}, Axes: []suite.Axis{suite.Protocols(load.H2, load.GRPC)}})
}
