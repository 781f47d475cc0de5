package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"
)

// DefaultName is the cluster name a provider uses until WithName sets one.
const DefaultName = "meshbench"

// provider adapts cluster to e2e-framework's cluster provider interface.
type provider struct {
	name string
	opts []Option
	c    *cluster
}

// NewProvider returns an e2e-framework cluster provider that runs kind
// through its Go library, with the host quirks and the CNI step of Up.
// Create's optional argument is a kind config path.
func NewProvider(opts ...Option) support.E2EClusterProviderWithImageLoader {
	return &provider{name: DefaultName, opts: opts}
}

// Create returns an env func that creates (or reuses) the kind cluster name
// from the kind config at configPath, points the env config at it, and
// stores the provider in the context for Destroy.
func Create(name, configPath string, opts ...Option) env.Func {
	return envfuncs.CreateClusterWithConfig(NewProvider(opts...), name, configPath)
}

// Destroy returns an env func that deletes the cluster Create made, or the
// kind cluster name when Create failed before storing it in the context
// (so that a Finish step cleans up after any failed Setup).
func Destroy(name string, opts ...Option) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if p, ok := envfuncs.GetClusterFromContext(ctx, name); ok {
			return ctx, p.Destroy(ctx)
		}
		return ctx, Down(ctx, name, opts...)
	}
}

// LoadImages returns an env func that loads local Docker images into every
// node of the cluster Create made.
func LoadImages(name string, images ...string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		p, ok := envfuncs.GetClusterFromContext(ctx, name)
		if !ok {
			return ctx, fmt.Errorf("load images: no cluster %q in context", name)
		}
		l, ok := p.(support.E2EClusterProviderWithImageLoader)
		if !ok {
			return ctx, fmt.Errorf("load images: cluster %q cannot load images", name)
		}
		for _, img := range images {
			if err := l.LoadImage(ctx, img); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

func (p *provider) cluster() *cluster {
	if p.c == nil || p.c.name != p.name {
		p.c = newCluster(p.name, p.opts)
	}
	return p.c
}

// WithName sets the kind cluster name (support.E2EClusterProvider).
func (p *provider) WithName(name string) support.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion selects the node image by Kubernetes version, as the
// WithVersion option does (support.E2EClusterProvider).
func (p *provider) WithVersion(version string) support.E2EClusterProvider {
	p.opts = append(p.opts, WithVersion(version))
	p.c = nil
	return p
}

// WithPath is accepted for the interface and ignored: kind runs as a library.
func (p *provider) WithPath(string) support.E2EClusterProvider { return p }

// WithOpts applies e2e-framework's cluster options to the provider
// (support.E2EClusterProvider).
func (p *provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// SetDefaults names the cluster DefaultName when it has no name
// (support.E2EClusterProvider).
func (p *provider) SetDefaults() support.E2EClusterProvider {
	if p.name == "" {
		p.name = DefaultName
	}
	return p
}

// Create creates or reuses the cluster from the kind config path in
// args[0] ("" without one) and returns its kubeconfig path
// (support.E2EClusterProvider).
func (p *provider) Create(ctx context.Context, args ...string) (string, error) {
	configPath := ""
	if len(args) > 0 {
		configPath = args[0]
	}
	return p.CreateWithConfig(ctx, configPath)
}

// CreateWithConfig creates or reuses the cluster from the kind config at
// configFile, as Up does, and returns its kubeconfig path
// (support.E2EClusterProvider).
func (p *provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	c := p.cluster()
	if err := c.up(ctx, configFile); err != nil {
		return "", err
	}
	return c.Kubeconfig(), nil
}

// GetKubeconfig is the path of the cluster's kubeconfig file
// (support.E2EClusterProvider).
func (p *provider) GetKubeconfig() string { return p.cluster().Kubeconfig() }

// GenerateKubeconfig writes a new kubeconfig file for the cluster and returns
// its path; the argument "--internal" gives the address nodes use.
func (p *provider) GenerateKubeconfig(args ...string) (string, error) {
	c := p.cluster()
	raw, err := c.provider.KubeConfig(c.name, slices.Contains(args, "--internal"))
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "meshbench-kind-"+c.name+"-*.kubeconfig")
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(raw)
	return f.Name(), errors.Join(werr, f.Close())
}

// GetKubectlContext is kind's context name, "kind-<name>"
// (support.E2EClusterProvider).
func (p *provider) GetKubectlContext() string { return "kind-" + p.name }

// ExportLogs collects every node's logs under dest with kind's
// CollectLogs, logged as one step (support.E2EClusterProvider).
func (p *provider) ExportLogs(ctx context.Context, dest string) error {
	c := p.cluster()
	return c.step("export logs to "+dest, func() error { return c.provider.CollectLogs(c.name, dest) })
}

// Destroy deletes the cluster, as Cluster.Delete does
// (support.E2EClusterProvider).
func (p *provider) Destroy(ctx context.Context) error { return p.cluster().Delete(ctx) }

// WaitForControlPlane waits until every kube-system pod runs and is Ready.
func (p *provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	c := p.cluster()
	cs, err := kubernetes.NewForConfig(client.RESTConfig())
	if err != nil {
		return err
	}
	return c.step("wait for control plane", func() error { return waitSystemPods(ctx, cs, c.opts.readyTimeout) })
}

// KubernetesRestConfig is the cluster's client configuration, nil when
// its kubeconfig cannot be read (support.E2EClusterProvider).
func (p *provider) KubernetesRestConfig() *rest.Config { return p.cluster().RESTConfig() }

// LoadImage imports the local Docker image into every node's containerd;
// extra arguments are ignored (support.E2EClusterProviderWithImageLoader).
func (p *provider) LoadImage(ctx context.Context, image string, _ ...string) error {
	return p.cluster().LoadImages(ctx, image)
}

// LoadImageArchive imports the image archive at archivePath into every
// node; extra arguments are ignored
// (support.E2EClusterProviderWithImageLoader).
func (p *provider) LoadImageArchive(ctx context.Context, archivePath string, _ ...string) error {
	c := p.cluster()
	return c.step("load image archive "+archivePath, func() error {
		kindNodes, err := c.nodes()
		if err != nil {
			return err
		}
		return loadArchive(kindNodes, archivePath)
	})
}
