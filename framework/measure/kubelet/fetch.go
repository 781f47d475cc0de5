package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RBACError reports that the API server refused the node-proxy read. Reading
// kubelet metrics through the API server needs "get" on the "nodes/proxy"
// subresource.
type RBACError struct {
	// Node is the node whose metrics were read.
	Node string
	// Path is the API server path refused, e.g.
	// /api/v1/nodes/{node}/proxy/metrics/resource.
	Path string
	// Err is the API server's answer.
	Err error
}

// Error names the path refused and the RBAC rule the read needs.
func (e *RBACError) Error() string {
	return fmt.Sprintf("reading %s was forbidden: the identity in use needs RBAC `get` on `nodes/proxy` "+
		"(a ClusterRole rule with apiGroups: [\"\"], resources: [\"nodes/proxy\"], verbs: [\"get\"]); the API server said: %v",
		e.Path, e.Err)
}

// Unwrap returns the API server's error.
func (e *RBACError) Unwrap() error { return e.Err }

// UnreachableError reports that the API server (or, through it, the kubelet)
// could not be reached at all.
type UnreachableError struct {
	// Host is the API server address, or the node name when the API server
	// answered but could not reach the node's kubelet.
	Host string
	// Kubelet is true when the API server answered but could not reach the kubelet.
	Kubelet bool
	// Err is the connection's error.
	Err error
}

// Error names what could not be reached and what to check.
func (e *UnreachableError) Error() string {
	if e.Kubelet {
		return fmt.Sprintf("the API server could not reach the kubelet on node %s (is the node Ready?): %v", e.Host, e.Err)
	}
	return fmt.Sprintf("the API server at %s is unreachable (check -kubeconfig/-context and that the cluster is running): %v", e.Host, e.Err)
}

// Unwrap returns the connection's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Fetch reads /metrics/resource and /metrics/cadvisor of one node through the
// API server's node proxy (GET /api/v1/nodes/{node}/proxy/metrics/...), and
// returns them as one Snapshot.
func Fetch(ctx context.Context, c kubernetes.Interface, node string) (Snapshot, error) {
	rc := c.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || (ok && r == nil) {
		return Snapshot{}, errors.New("kubelet.Fetch needs a clientset with a REST client (a fake clientset has none)")
	}
	readAt := time.Now().UTC()
	res, err := get(ctx, rc, node, "resource")
	if err != nil {
		return Snapshot{}, err
	}
	snap, err := ParseResource(bytes.NewReader(res))
	if err != nil {
		return Snapshot{}, fmt.Errorf("node %s: %w", node, err)
	}
	snap.Node, snap.ReadAt = node, readAt
	cad, err := get(ctx, rc, node, "cadvisor")
	if err != nil {
		return Snapshot{}, err
	}
	ca, err := ParseCadvisor(bytes.NewReader(cad))
	if err != nil {
		return Snapshot{}, fmt.Errorf("node %s: %w", node, err)
	}
	return snap.WithCadvisor(ca), nil
}

func get(ctx context.Context, rc rest.Interface, node, endpoint string) ([]byte, error) {
	path := "/api/v1/nodes/" + node + "/proxy/metrics/" + endpoint
	res := rc.Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics", endpoint).Do(ctx)
	// Error, unlike Raw, decodes a Status body into the error's message.
	err := res.Error()
	if err == nil {
		return res.Raw()
	}
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case apierrors.IsForbidden(err):
		return nil, &RBACError{Node: node, Path: path, Err: err}
	case apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("reading %s: the API server rejected the credentials (expired token or wrong -context?): %w", path, err)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s: not found (no node %q, or its kubelet does not serve /metrics/%s): %w", path, node, endpoint, err)
	case isStatus(err, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout):
		return nil, &UnreachableError{Host: node, Kubelet: true, Err: err}
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		host := ""
		if urlErr != nil {
			if u, perr := url.Parse(urlErr.URL); perr == nil {
				host = u.Scheme + "://" + u.Host
			}
		}
		return nil, &UnreachableError{Host: host, Err: err}
	}
	return nil, fmt.Errorf("reading %s: %w", path, err)
}

func isStatus(err error, codes ...int32) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Status().Code == c {
			return true
		}
	}
	return false
}
