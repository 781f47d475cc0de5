package meshinstall

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// CNIInstall says how InstallCNI installs a mesh that is the cluster's CNI.
type CNIInstall struct {
	// Install is the release and image registry.
	Install mesh.InstallOptions
	// ChartDir, when set, is searched for the charts instead of their
	// repositories (as HelmOptions.ChartDir).
	ChartDir string
	// Timeout bounds each release's install and rollout. Default: 5m.
	Timeout time.Duration
	// Logf receives one line per step. Default: none.
	Logf func(string, ...any)
	// Words say the settings the errors advise (as HelmOptions.Words).
	Words testbed.Words
}

// InstallCNI installs the mesh m from its Helm charts on a cluster whose
// nodes wait for a CNI (kind's WithCNI step), unless it is installed
// already, and waits until its workloads roll out. The release is not
// uninstalled by a target: a cluster without its CNI has no pod network,
// so it goes with the cluster.
func InstallCNI(ctx context.Context, cfg *rest.Config, m mesh.Mesh, o CNIInstall) error {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("install %s: client for %s: %w", m.Name(), cfg.Host, err)
	}
	_, err = m.Detect(ctx, c)
	var ni *mesh.NotInstalledError
	if err == nil {
		o.Logf("kube: %s is installed already", m.Name())
		return nil
	}
	if !errors.As(err, &ni) {
		return fmt.Errorf("install %s: %w", m.Name(), err)
	}
	inst, ok := m.(mesh.Installer)
	if !ok {
		return fmt.Errorf("install %s: the adapter has no charts", m.Name())
	}
	charts, err := inst.Charts(o.Install)
	if err != nil {
		return fmt.Errorf("install %s: %w", m.Name(), err)
	}
	if err := Prepare(ctx, c, m, o.Install, o.Logf); err != nil {
		return err
	}
	h := NewHelm(cfg, c, HelmOptions{ChartDir: o.ChartDir, Timeout: o.Timeout, Grace: o.Timeout, Logf: o.Logf, Words: o.Words})
	if err := h.Install(ctx, charts); err != nil {
		return fmt.Errorf("install %s: %w", m.Name(), err)
	}
	return nil
}

// Prepare runs the mesh's steps before its charts (Cilium's IPsec key),
// logging each of their notes.
func Prepare(ctx context.Context, c kubernetes.Interface, m mesh.Mesh, o mesh.InstallOptions, logf func(string, ...any)) error {
	p, ok := m.(mesh.Preparer)
	if !ok {
		return nil
	}
	notes, err := p.Prepare(ctx, c, o)
	for _, n := range notes {
		logf("kube: %s: %s", m.Name(), n)
	}
	if err != nil {
		return fmt.Errorf("install %s: prepare: %w", m.Name(), err)
	}
	return nil
}
