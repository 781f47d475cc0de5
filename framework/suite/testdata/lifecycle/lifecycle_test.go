// Package lifecycle is a benchmark package on a fake target that prints
// when it is built and closed: TestLifecycleSetsUpAndTearsDownOnce builds
// it and runs it as go test -bench would, its TestMain the lifecycle of
// benchmarks/main_test.go, or that list without the env func named by
// LIFECYCLE_WITHOUT.
package lifecycle

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

var mb = suite.New()

func TestMain(m *testing.M) {
	mb.NewTarget = func(context.Context, *suite.Config, func(string, ...any)) (testbed.Target, error) {
		fmt.Println("lifecycle: target built")
		return fake{}, nil
	}
	testenv := mb.Environment()
	setup := map[string]env.Func{"CheckFixtures": mb.CheckFixtures, "CreateCluster": mb.CreateCluster, "LoadImages": mb.LoadImages, "SetUpTarget": mb.SetUpTarget}
	for _, name := range []string{"CheckFixtures", "CreateCluster", "LoadImages", "SetUpTarget"} {
		if name != os.Getenv("LIFECYCLE_WITHOUT") {
			testenv.Setup(setup[name])
		}
	}
	testenv.Finish(mb.Report)
	testenv.Finish(mb.ExportLogsOnFailure)
	testenv.Finish(mb.TearDown)
	os.Exit(mb.Run(testenv, m))
}

// BenchmarkLifecycle finds the target, then skips: its requirement is a
// program no machine has.
func BenchmarkLifecycle(b *testing.B) {
	fmt.Println("lifecycle: benchmark")
	mb.Sweep(b, suite.Scenario{Requires: []suite.Requirement{suite.OnPath("meshbench-no-such-program", "none")}})
}

// fake is a target that runs nothing and says when it is closed.
type fake struct{ testbed.Target }

func (fake) Name() string { return "fake" }
func (fake) Environment() testbed.Environment {
	return testbed.Environment{Target: "fake", Cores: 1, Mesh: testbed.MeshInfo{Name: "none"}}
}
func (fake) Close(context.Context) error { fmt.Println("lifecycle: target closed"); return nil }
