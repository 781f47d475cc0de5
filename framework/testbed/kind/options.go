package kind

import (
	"context"
	"os"
	"time"
)

// Logger receives one line per step. *testing.T satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

// LoggerFunc adapts a printf-like function (log.Printf, say) to Logger.
type LoggerFunc func(format string, args ...any)

// Logf calls f.
func (f LoggerFunc) Logf(format string, args ...any) { f(format, args...) }

type nopLogger struct{}

// Logf discards the line (Logger).
func (nopLogger) Logf(string, ...any) {}

// Option configures a cluster.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// options holds the settings; the zero value means "the default", filled
// in by normalize.
type options struct {
	// logger receives one line per step. Default: no-op.
	logger Logger
	// nodeImage is the node image. Default: see the package doc.
	nodeImage string
	// version is the Kubernetes version of the node image, used to pick a
	// default image (meshbench/kind-node:<version> or kindest/node:<version>).
	// Default: any local meshbench/kind-node image, else kind's default.
	version string
	// kubeconfig is the path of the kubeconfig file written for the cluster.
	// Default: <os.TempDir()>/meshbench-kind-<name>.kubeconfig.
	kubeconfig string
	// readyTimeout bounds each wait (pod CIDRs, nodes Ready, system pods).
	// Default: 5m.
	readyTimeout time.Duration
	// quirks overrides host detection when non-nil.
	quirks *Quirks
	// retain keeps the node containers when creation fails. Default: false.
	retain bool
	// cniPlugin is the main CNI plugin when kind's CNI is disabled:
	// PluginBridge or PluginPTP. Default: bridge where the node has it,
	// else ptp.
	cniPlugin string
	// reuse uses an existing cluster of the same name instead of failing.
	// Default: true.
	reuse *bool
	// cni, when set, installs the cluster's CNI instead of the package's
	// bridge step (a mesh that is the CNI, such as Cilium).
	cni CNIInstaller
}

// CNIInstaller installs a cluster's CNI. It is called once the nodes exist
// and the kubeconfig is written, before the nodes can be Ready; Up then
// waits for the nodes and the kube-system pods as usual.
type CNIInstaller interface {
	// Name names the CNI in the step's log line.
	Name() string
	InstallCNI(ctx context.Context, c Cluster) error
}

// WithLogger sets the logger that receives one line per step.
func WithLogger(l Logger) Option { return optionFunc(func(o *options) { o.logger = l }) }

// WithNodeImage sets the node image for every node.
func WithNodeImage(image string) Option { return optionFunc(func(o *options) { o.nodeImage = image }) }

// WithVersion selects the node image by Kubernetes version (e.g. "v1.36.3").
func WithVersion(v string) Option { return optionFunc(func(o *options) { o.version = v }) }

// WithKubeconfig sets the path of the kubeconfig file written for the cluster.
func WithKubeconfig(path string) Option { return optionFunc(func(o *options) { o.kubeconfig = path }) }

// WithReadyTimeout bounds each wait during creation (default 5m).
func WithReadyTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.readyTimeout = d })
}

// WithQuirks replaces host detection: the given quirks are applied as they are.
func WithQuirks(q Quirks) Option { return optionFunc(func(o *options) { o.quirks = &q }) }

// WithRetain keeps the node containers when creation fails, for debugging.
func WithRetain(retain bool) Option { return optionFunc(func(o *options) { o.retain = retain }) }

// WithCNIPlugin sets the main CNI plugin (PluginBridge or PluginPTP) used
// when the kind config disables kind's CNI.
func WithCNIPlugin(plugin string) Option {
	return optionFunc(func(o *options) { o.cniPlugin = plugin })
}

// WithCNI replaces the package's bridge CNI step, for a kind config that
// disables kind's CNI, by the installer's: the nodes become Ready once it
// has run.
func WithCNI(i CNIInstaller) Option { return optionFunc(func(o *options) { o.cni = i }) }

// WithReuse says whether an existing cluster of the same name is reused
// (the default) or is an error.
func WithReuse(reuse bool) Option { return optionFunc(func(o *options) { o.reuse = &reuse }) }

func (o *options) normalize(name string) {
	if o.logger == nil {
		o.logger = nopLogger{}
	}
	if o.kubeconfig == "" {
		o.kubeconfig = defaultKubeconfig(name)
	}
	if o.readyTimeout <= 0 {
		o.readyTimeout = 5 * time.Minute
	}
	if o.reuse == nil {
		t := true
		o.reuse = &t
	}
}

func defaultKubeconfig(name string) string {
	return os.TempDir() + "/meshbench-kind-" + name + ".kubeconfig"
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	return o
}
