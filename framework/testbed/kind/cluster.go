package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindlog "sigs.k8s.io/kind/pkg/log"
)

// OfflineImageRepo is the repository of the node images that
// hack/offline/node-image.sh builds (tag: the Kubernetes version).
const OfflineImageRepo = "meshbench/kind-node"

// Cluster is a running kind cluster.
type Cluster interface {
	// Name is the kind cluster name.
	Name() string
	// Kubeconfig is the path of the cluster's kubeconfig file.
	Kubeconfig() string
	// RESTConfig is the client configuration for the cluster.
	RESTConfig() *rest.Config
	// LoadImages imports local Docker images into every node's containerd.
	LoadImages(ctx context.Context, images ...string) error
	// Delete deletes the cluster and its kubeconfig file.
	Delete(ctx context.Context) error
	// ExportLogs writes every node's logs (kubelet, containerd, pods) under
	// dir, as `kind export logs` does.
	ExportLogs(ctx context.Context, dir string) error
}

type cluster struct {
	name     string
	opts     options
	provider *kindcluster.Provider
	rest     *rest.Config
}

func newCluster(name string, opts []Option) *cluster {
	o := buildOptions(opts)
	o.normalize(name)
	return &cluster{
		name:     name,
		opts:     o,
		provider: kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.logger})),
	}
}

// Up creates the kind cluster name from the kind config at configPath ("":
// 1 control plane and 2 workers, without kind's CNI), or reuses it when it
// exists, and returns once every node is Ready and every kube-system pod
// runs.
func Up(ctx context.Context, name, configPath string, opts ...Option) (Cluster, error) {
	c := newCluster(name, opts)
	if err := c.up(ctx, configPath); err != nil {
		return nil, err
	}
	return c, nil
}

// Existing returns the kind cluster name as it is, without creating or
// checking anything: for loading images into, or deleting, a cluster made
// earlier.
func Existing(name string, opts ...Option) Cluster {
	return newCluster(name, opts)
}

// Down deletes the kind cluster name, if it exists.
func Down(ctx context.Context, name string, opts ...Option) error {
	return newCluster(name, opts).Delete(ctx)
}

// Name is the kind cluster name (Cluster).
func (c *cluster) Name() string { return c.name }

// ExportLogs collects every node's logs under dir with kind's CollectLogs,
// logged as one step (Cluster).
func (c *cluster) ExportLogs(ctx context.Context, dir string) error {
	return c.step("export logs to "+dir, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return c.provider.CollectLogs(c.name, dir)
	})
}

// Kubeconfig is the path of the cluster's kubeconfig file (Cluster).
func (c *cluster) Kubeconfig() string { return c.opts.kubeconfig }

// RESTConfig returns the client configuration, or nil when the cluster's
// kubeconfig cannot be read.
func (c *cluster) RESTConfig() *rest.Config {
	if c.rest == nil {
		_ = c.loadRESTConfig()
	}
	return c.rest
}

// step runs f and logs its duration as one line.
func (c *cluster) step(what string, f func() error) error {
	start := time.Now()
	err := f()
	d := time.Since(start).Round(time.Millisecond)
	if err != nil {
		c.opts.logger.Logf("kind %s: %s: failed after %s: %v", c.name, what, d, err)
		return fmt.Errorf("kind %s: %s: %w", c.name, what, err)
	}
	c.opts.logger.Logf("kind %s: %s: %s", c.name, what, d)
	return nil
}

// up creates the cluster from the kind config at configPath, or reuses it,
// then makes it ready: one small step after another, each logged. A
// cluster this call created and could not make ready is deleted, unless the
// caller asked to keep it.
func (c *cluster) up(ctx context.Context, configPath string) (err error) {
	start := time.Now()
	q, err := c.hostQuirks()
	if err != nil {
		return err
	}
	cfg, image, err := c.config(configPath, q)
	if err != nil {
		return err
	}
	created, err := c.createOrReuse(cfg, image)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && created && !c.opts.retain {
			err = errors.Join(err, c.Delete(context.WithoutCancel(ctx)))
		}
	}()
	if err := c.makeReady(ctx, cfg); err != nil {
		return err
	}
	c.opts.logger.Logf("kind %s: ready in %s (kubeconfig %s)", c.name, time.Since(start).Round(time.Millisecond), c.opts.kubeconfig)
	return nil
}

// hostQuirks returns the quirks given as an option, or detects the host's,
// and logs them.
func (c *cluster) hostQuirks() (Quirks, error) {
	q := Quirks{}
	if err := c.step("detect host quirks", func() error {
		if c.opts.quirks != nil {
			q = *c.opts.quirks
			return nil
		}
		var err error
		q, err = DetectQuirks()
		return err
	}); err != nil {
		return Quirks{}, err
	}
	c.opts.logger.Logf("kind %s: host quirks: %s", c.name, q)
	return q, nil
}

// config loads the kind config at configPath with the host quirks applied,
// picks the node image ("": kind's default), and refuses a config that keeps
// kind's CNI where the image has none or another CNI is given.
func (c *cluster) config(configPath string, q Quirks) (*v1alpha4.Cluster, string, error) {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return nil, "", err
	}
	applyQuirks(cfg, q)
	image := c.nodeImage()
	if strings.HasPrefix(image, OfflineImageRepo+":") && !cfg.Networking.DisableDefaultCNI {
		return nil, "", fmt.Errorf("kind %s: node image %s has no default CNI: set networking.disableDefaultCNI: true in %s",
			c.name, image, configPath)
	}
	if c.opts.cni != nil && !cfg.Networking.DisableDefaultCNI {
		return nil, "", fmt.Errorf("kind %s: %s is the cluster's CNI: set networking.disableDefaultCNI: true in %s",
			c.name, c.opts.cni.Name(), configPath)
	}
	return cfg, image, nil
}

// createOrReuse reuses the cluster when it exists (if allowed), or creates
// it from cfg on image; created says whether this call created it.
func (c *cluster) createOrReuse(cfg *v1alpha4.Cluster, image string) (created bool, err error) {
	existing, err := c.provider.List()
	if err != nil {
		return false, fmt.Errorf("kind %s: list clusters: %w", c.name, err)
	}
	if slices.Contains(existing, c.name) {
		if !*c.opts.reuse {
			return false, fmt.Errorf("kind %s: cluster exists", c.name)
		}
		return false, c.step("reuse existing cluster", func() error {
			return c.provider.ExportKubeConfig(c.name, c.opts.kubeconfig, false)
		})
	}
	if err := c.create(cfg, image); err != nil {
		return false, err
	}
	return true, nil
}

// create creates the cluster from cfg on image ("": kind's default node
// image), writing its kubeconfig.
func (c *cluster) create(cfg *v1alpha4.Cluster, image string) error {
	what := "create cluster (node image " + image + ")"
	if image == "" {
		what = "create cluster (kind's default node image)"
	}
	createOpts := []kindcluster.CreateOption{
		kindcluster.CreateWithV1Alpha4Config(cfg),
		kindcluster.CreateWithKubeconfigPath(c.opts.kubeconfig),
		kindcluster.CreateWithRetain(c.opts.retain),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	}
	if image != "" {
		createOpts = append(createOpts, kindcluster.CreateWithNodeImage(image))
	}
	return c.step(what, func() error { return c.provider.Create(c.name, createOpts...) })
}

// makeReady loads the kubeconfig, installs the CNI when kind's is disabled,
// and waits for every node and kube-system pod to be Ready.
func (c *cluster) makeReady(ctx context.Context, cfg *v1alpha4.Cluster) error {
	if err := c.step("load kubeconfig", c.loadRESTConfig); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.rest)
	if err != nil {
		return fmt.Errorf("kind %s: client: %w", c.name, err)
	}
	kindNodes, err := c.provider.ListInternalNodes(c.name)
	if err != nil {
		return fmt.Errorf("kind %s: list nodes: %w", c.name, err)
	}
	if cfg.Networking.DisableDefaultCNI {
		if err := c.installNetwork(ctx, cs, kindNodes, cfg); err != nil {
			return err
		}
	}
	return c.waitReady(ctx, cs, len(kindNodes))
}

// installNetwork installs the CNI given as an option, or else the package's
// own (host-local IPAM, routes between nodes), logging each node's network.
func (c *cluster) installNetwork(ctx context.Context, cs kubernetes.Interface, kindNodes []nodes.Node, cfg *v1alpha4.Cluster) error {
	if c.opts.cni != nil {
		return c.step("install CNI "+c.opts.cni.Name(), func() error { return c.opts.cni.InstallCNI(ctx, c) })
	}
	return c.step("install CNI (host-local IPAM, routes between nodes)", func() error {
		nets, err := installCNI(ctx, cs, kindNodes, c.opts.cniPlugin, cfg.Networking.PodSubnet, cfg.Networking.ServiceSubnet, c.opts.readyTimeout)
		for _, n := range nets {
			c.opts.logger.Logf("kind %s: node %s: IP %s, pod CIDR %s, CNI %s", c.name, n.node, n.ip, n.podCIDR, n.plugin)
		}
		return err
	})
}

// waitReady waits for the cluster's want nodes, then its kube-system pods,
// to be Ready.
func (c *cluster) waitReady(ctx context.Context, cs kubernetes.Interface, want int) error {
	if err := c.step(fmt.Sprintf("wait for %d nodes Ready", want), func() error {
		return waitNodesReady(ctx, cs, want, c.opts.readyTimeout)
	}); err != nil {
		return err
	}
	return c.step("wait for kube-system pods Ready", func() error {
		return waitSystemPods(ctx, cs, c.opts.readyTimeout)
	})
}

func (c *cluster) loadRESTConfig() error {
	raw, err := c.provider.KubeConfig(c.name, false)
	if err != nil {
		return err
	}
	c.rest, err = clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	return err
}

// nodeImage picks the node image (see the package doc); "" means kind's default.
func (c *cluster) nodeImage() string {
	if c.opts.nodeImage != "" {
		return c.opts.nodeImage
	}
	if img := os.Getenv("MESHBENCH_KIND_NODE_IMAGE"); img != "" {
		return img
	}
	if c.opts.version != "" {
		if dockerHasImage(OfflineImageRepo + ":" + c.opts.version) {
			return OfflineImageRepo + ":" + c.opts.version
		}
		return "kindest/node:" + c.opts.version
	}
	out, err := exec.Command("docker", "image", "ls", OfflineImageRepo, "--format", "{{.Tag}}").Output()
	if err == nil {
		for _, tag := range strings.Fields(string(out)) {
			if tag != "<none>" {
				return OfflineImageRepo + ":" + tag
			}
		}
	}
	return ""
}

func dockerHasImage(image string) bool {
	return exec.Command("docker", "image", "inspect", image).Run() == nil
}

// LoadImages imports local Docker images into every node's containerd, as
// `kind load docker-image` does: an image whose ID a node already has under
// its name is not loaded into that node again (a kept cluster reused by the
// next run), and the others are saved once and imported into the nodes that
// lack one, in parallel.
func (c *cluster) LoadImages(ctx context.Context, images ...string) error {
	return c.step("load images "+strings.Join(images, " "), func() error {
		ids, err := dockerImageIDs(ctx, images)
		if err != nil {
			return err
		}
		kindNodes, err := c.nodes()
		if err != nil {
			return err
		}
		missing := nodesLacking(kindNodes, images, ids)
		if len(missing) == 0 {
			c.opts.logger.Logf("kind %s: images %s: present on all %d nodes, with the local IDs", c.name, strings.Join(images, " "), len(kindNodes))
			return nil
		}
		// A large image takes minutes to import into every node: say so first.
		c.opts.logger.Logf("kind %s: loading images %s into %d of %d nodes (docker save, then containerd import in parallel)",
			c.name, strings.Join(images, " "), len(missing), len(kindNodes))
		f, err := os.CreateTemp("", "meshbench-images-*.tar")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		args := append([]string{"save", "-o", f.Name()}, images...)
		if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("docker save: %w: %s", err, out)
		}
		return loadArchive(missing, f.Name())
	})
}

// nodes is the cluster's nodes, an error when it has none.
func (c *cluster) nodes() ([]nodes.Node, error) {
	kindNodes, err := c.provider.ListInternalNodes(c.name)
	if err != nil {
		return nil, err
	}
	if len(kindNodes) == 0 {
		return nil, fmt.Errorf("no nodes")
	}
	return kindNodes, nil
}

// dockerImageIDs is each image's ID in the local Docker.
func dockerImageIDs(ctx context.Context, images []string) ([]string, error) {
	ids := make([]string, len(images))
	for i, img := range images {
		out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Id}}", img).Output()
		if err != nil {
			return nil, fmt.Errorf("image %q is not in the local Docker: %w", img, err)
		}
		ids[i] = strings.TrimSpace(string(out))
	}
	return ids, nil
}

// nodesLacking is the nodes where some image is missing, or has another ID
// than ids gives (what crictl inspecti says of it; an error counts as
// missing).
func nodesLacking(kindNodes []nodes.Node, images, ids []string) []nodes.Node {
	lack := make([]bool, len(kindNodes))
	var wg sync.WaitGroup
	for i, n := range kindNodes {
		wg.Go(func() {
			for j, img := range images {
				if id, err := nodeutils.ImageID(n, img); err != nil || id != ids[j] {
					lack[i] = true
					return
				}
			}
		})
	}
	wg.Wait()
	var out []nodes.Node
	for i, n := range kindNodes {
		if lack[i] {
			out = append(out, n)
		}
	}
	return out
}

// loadArchive imports an image archive into each of kindNodes, in
// parallel: each node's containerd unpacks the archive on its own.
func loadArchive(kindNodes []nodes.Node, path string) error {
	errs := make([]error, len(kindNodes))
	var wg sync.WaitGroup
	for i, n := range kindNodes {
		wg.Go(func() { errs[i] = loadArchiveInto(n, path) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func loadArchiveInto(n nodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := nodeutils.LoadImageArchive(n, f); err != nil {
		return fmt.Errorf("node %s: %w", n, err)
	}
	return nil
}

// Delete deletes the cluster and, when it is the default one, its kubeconfig file.
func (c *cluster) Delete(ctx context.Context) error {
	return c.step("delete cluster", func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.provider.Delete(c.name, c.opts.kubeconfig); err != nil {
			return err
		}
		if c.opts.kubeconfig == defaultKubeconfig(c.name) {
			if err := os.Remove(c.opts.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	})
}

// kindLogger passes kind's user-facing messages (warnings, errors and
// verbosity 0) to a Logger.
type kindLogger struct{ l Logger }

// Warn logs m as "kind: warning: m" (kindlog.Logger).
func (k kindLogger) Warn(m string) { k.l.Logf("kind: warning: %s", m) }

// Warnf logs a formatted warning, prefixed "kind: warning: "
// (kindlog.Logger).
func (k kindLogger) Warnf(f string, a ...any) { k.l.Logf("kind: warning: "+f, a...) }

// Error logs m as "kind: error: m" (kindlog.Logger).
func (k kindLogger) Error(m string) { k.l.Logf("kind: error: %s", m) }

// Errorf logs a formatted error, prefixed "kind: error: "
// (kindlog.Logger).
func (k kindLogger) Errorf(f string, a ...any) { k.l.Logf("kind: error: "+f, a...) }

// V is the info logger for verbosity v: on at 0 and below, silent above
// (kindlog.Logger).
func (k kindLogger) V(v kindlog.Level) kindlog.InfoLogger { return kindInfo{l: k.l, on: v <= 0} }

type kindInfo struct {
	l  Logger
	on bool
}

// Info logs m, trimmed, as "kind: m" when the level is on
// (kindlog.InfoLogger).
func (k kindInfo) Info(m string) {
	if k.on {
		k.l.Logf("kind: %s", strings.TrimSpace(m))
	}
}

// Infof logs a formatted message, prefixed "kind: ", when the level is on
// (kindlog.InfoLogger).
func (k kindInfo) Infof(f string, a ...any) {
	if k.on {
		k.l.Logf("kind: "+strings.TrimSpace(f), a...)
	}
}

// Enabled reports whether the level is logged: verbosity 0 and below
// (kindlog.InfoLogger).
func (k kindInfo) Enabled() bool { return k.on }
