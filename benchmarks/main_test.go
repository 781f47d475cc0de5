// Package benchmarks holds meshbench's scenarios. Each is one short
// benchmark function; `go test ./benchmarks -bench .` runs them all against
// the embedded local target, and `benchstat -col /arm` pivots the output on
// the baseline and meshed arms.
package benchmarks

import (
	"os"
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
)

// mb is the suite every scenario in this package runs in.
var mb = suite.New()

func TestMain(m *testing.M) { os.Exit(mb.Main(m)) }
