package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// tunnel is a local address that reaches one port of one pod.
type tunnel struct {
	// Addr is 127.0.0.1:port on this machine.
	Addr  string
	close func()
}

// Close stops the tunnel.
func (t *tunnel) Close() {
	if t != nil && t.close != nil {
		t.close()
	}
}

// podAccess reaches into the run's pods from the harness: port-forwards
// (fwd) to the loadgens and the apps, the apps' nginx counters (read with
// hc), the sidecars' plain-request logs and the loadgens' logs, copied to
// loadgenLog (Options.LoadgenLog; nil: not copied), the loadgens' network
// and the nodes the pods run on.
type podAccess struct {
	pods       runPods
	fwd        forwarder
	hc         *http.Client
	loadgenLog io.Writer
}

// access is the target's way into its pods.
func (t *Target) access() podAccess {
	return podAccess{pods: t.pods(), fwd: t.fwd, hc: t.hc, loadgenLog: t.o.LoadgenLog}
}

// forwarder opens tunnels to pods; the cluster implementation port-forwards
// through the API server, tests point at local servers.
type forwarder func(ctx context.Context, namespace, pod string, port int) (*tunnel, error)

// spdyForwarder port-forwards with client-go over SPDY, as
// `kubectl port-forward` does. The API server must allow create on
// pods/portforward.
func spdyForwarder(cfg *rest.Config, c kubernetes.Interface) forwarder {
	return func(ctx context.Context, namespace, pod string, port int) (*tunnel, error) {
		transport, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
		}
		u := c.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		// The tunnel outlives ctx: it is closed with Close.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ready := make(chan struct{})
		var errOut strings.Builder
		fw, err := portforward.NewOnAddressesWithContext(fctx, dialer, []string{"127.0.0.1"},
			[]string{"0:" + strconv.Itoa(port)}, ready, io.Discard, &lockedWriter{w: &errOut})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
		}
		done := make(chan error, 1)
		go func() { done <- fw.ForwardPorts() }()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("port-forward to %s/%s:%d: %w (the identity in use needs RBAC create on pods/portforward)",
				namespace, pod, port, err)
		case <-wctx.Done():
			cancel()
			return nil, fmt.Errorf("port-forward to %s/%s:%d: not ready: %w", namespace, pod, port, wctx.Err())
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) == 0 {
			cancel()
			return nil, fmt.Errorf("port-forward to %s/%s:%d: no local port: %v", namespace, pod, port, err)
		}
		var once sync.Once
		return &tunnel{
			Addr: "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)),
			close: func() {
				once.Do(func() {
					// ForwardPorts closes the listeners when its context ends.
					cancel()
					select {
					case <-done:
					case <-time.After(5 * time.Second):
					}
				})
			},
		}, nil
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to the underlying writer under the lock, so that
// concurrent writers do not interleave (io.Writer).
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// openTunnels opens one tunnel per pod concurrently; on error it closes the
// ones it opened.
func openTunnels(ctx context.Context, fwd forwarder, namespace string, pods []string, port int) ([]*tunnel, error) {
	out := make([]*tunnel, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = fwd(ctx, namespace, p, port)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, t := range out {
				t.Close()
			}
			return nil, err
		}
	}
	return out, nil
}
