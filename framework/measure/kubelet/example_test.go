package kubelet_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
	"k8s.io/client-go/kubernetes"
)

// Read a node before and after the measured window, and report what each
// role used. A container that restarted in between invalidates the run.
func Example() {
	var c kubernetes.Interface // from the run's kubeconfig
	if c == nil {
		fmt.Println("no cluster here")
		return
	}
	ctx := context.Background()
	before, err := kubelet.Fetch(ctx, c, "kind-worker")
	if err != nil {
		panic(err)
	}
	// ... run the load ...
	after, err := kubelet.Fetch(ctx, c, "kind-worker")
	if err != nil {
		panic(err)
	}
	u, err := kubelet.Delta(before, after)
	var reset *kubelet.CounterResetError
	if errors.As(err, &reset) {
		fmt.Println("run invalid:", reset)
	}
	roleOf := kubelet.RolesFromPods(nil, kubelet.RoleOther)
	for _, r := range kubelet.SumByRole(roleOf, u) {
		fmt.Printf("%s %.0fm\n", r.Role, r.Millicores)
	}
	// Output: no cluster here
}
