package mesh

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// scrape reads path on port of pod through the API server's pod proxy
// (GET /api/v1/namespaces/{ns}/pods/{pod}:{port}/proxy/{path}), so it works
// from outside the cluster without port-forwards.
func scrape(ctx context.Context, c kubernetes.Interface, p *corev1.Pod, port int, path string) ([]byte, error) {
	rc := c.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || (ok && r == nil) {
		return nil, errors.New("reading proxy metrics needs a clientset with a REST client (a fake clientset has none)")
	}
	segs := append([]string{"/api/v1/namespaces", p.Namespace, "pods", p.Name + ":" + strconv.Itoa(port), "proxy"},
		strings.Split(path, "/")...)
	res := rc.Get().AbsPath(segs...).Do(ctx)
	if err := res.Error(); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("reading %s/%s:%d/%s was forbidden: the identity in use needs RBAC `get` on `pods/proxy` in namespace %s: %w",
				p.Namespace, p.Name, port, path, p.Namespace, err)
		}
		return nil, fmt.Errorf("reading %s/%s:%d/%s: %w", p.Namespace, p.Name, port, path, err)
	}
	return res.Raw()
}

// workloadOf names the workload that owns a pod, "namespace/name": the
// Deployment of a ReplicaSet-owned pod (the ReplicaSet name minus the pod's
// pod-template-hash), else the owner, else the pod itself.
func workloadOf(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" {
				return p.Namespace + "/" + strings.TrimSuffix(o.Name, "-"+h)
			}
		}
		return p.Namespace + "/" + o.Name
	}
	return p.Namespace + "/" + p.Name
}
