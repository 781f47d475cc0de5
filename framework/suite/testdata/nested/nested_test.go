// Package nested is a benchmark package whose scenario nests the caller's
// own b.Run sweep around axes: TestNestedSweepKeepsEveryRecord builds it
// and runs it through Main, as `go test -bench` would.
package nested

import (
	"fmt"
	"os"
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

var mb = suite.New()

func TestMain(m *testing.M) { os.Exit(mb.Main(m)) }

func BenchmarkNested(b *testing.B) {
	for _, qps := range []float64{50, 100} {
		b.Run(fmt.Sprintf("qps=%g", qps), func(b *testing.B) {
			mb.Sweep(b, suite.Scenario{
				Window: func(w *testbed.Window) { w.QPS = qps },
				Axes:   []suite.Axis{suite.Payloads(128, 1<<10)},
			})
		})
	}
}
