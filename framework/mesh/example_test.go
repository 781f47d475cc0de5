package mesh_test

import (
	"context"
	"fmt"
	"github.com/meshbench/meshbench/framework/testbed"
	"os"

	"github.com/meshbench/meshbench/framework/mesh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Turn injection on for the meshed arm, then print the mTLS table that the
// verification step produces.
func Example() {
	ctx := context.Background()
	c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mb-meshed"}})

	m, err := mesh.New("istio")
	if err != nil {
		panic(err)
	}
	if err := m.Enable(ctx, c, "mb-meshed"); err != nil {
		panic(err)
	}
	ns, _ := c.CoreV1().Namespaces().Get(ctx, "mb-meshed", metav1.GetOptions{})
	fmt.Println("istio-injection =", ns.Labels["istio-injection"])
	fmt.Println("sidecars:", m.Roles().Sidecars)

	if _, ok := m.(mesh.MTLSChecker); ok {
		testbed.PrintEdges(os.Stdout, []mesh.Edge{
			{Src: "mb-meshed/frontend", Dst: "mb-meshed/backend", Secured: true,
				Evidence: `istio_requests_total{reporter="destination",connection_security_policy="mutual_tls"} 1200`},
		})
	}
	// Output:
	// istio-injection = enabled
	// sidecars: [istio-proxy]
	// SRC                 DST                SECURED     EVIDENCE
	// mb-meshed/frontend  mb-meshed/backend  yes (mTLS)  istio_requests_total{reporter="destination",connection_security_policy="mutual_tls"} 1200
}
