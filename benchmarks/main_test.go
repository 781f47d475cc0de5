// Package benchmarks holds meshbench's scenarios. Each is one short
// benchmark function; `go test ./benchmarks -bench .` runs them all against
// the embedded local target, and `benchstat -col /arm` pivots the output on
// the arms.
package benchmarks

import (
	"os"
	"testing"

	"github.com/meshbench/meshbench/framework/suite"
)

// mb is the suite every scenario in this package runs in.
var mb = suite.New()

// TestMain is the run's lifecycle as e2e-framework env funcs: Setup, then
// Finish, in order, with the logs exported before the cluster goes.
func TestMain(m *testing.M) {
	testenv := mb.Environment() // the flags, checked before anything is made; Ctrl-C tears down
	testenv.Setup(
		mb.CheckFixtures, // the threshold fixture decodes, and is for this target
		mb.CreateCluster, // kind: create or reuse from kind-config.yaml; remote: the kubeconfig's
		mb.LoadImages,    // kind: the local workload images into the nodes
		mb.SetUpTarget,   // install the mesh if asked, then deploy the baseline and meshed arms
	)
	// One Finish each: e2e-framework stops a Finish's funcs at the first
	// error, and a failed verdict must not skip the logs or the teardown.
	testenv.Finish(mb.Report)              // the summary, the results file, the thresholds' verdict
	testenv.Finish(mb.ExportLogsOnFailure) // kind: the cluster's logs next to the results when anything failed
	testenv.Finish(mb.TearDown)            // the namespaces, a mesh this run installed, a cluster this run created
	os.Exit(mb.Run(testenv, m))
}
