package suite

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/meshinstall"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kind"
	"github.com/meshbench/meshbench/framework/testbed/kube"
)

// A mesh that is on for a whole cluster (mesh.ClusterWide: Cilium's
// transparent encryption) leaves no namespace of its cluster without it.
// Its baseline arm runs on a second cluster built from the same kind
// config with meshbench's bridge CNI (-target=kind), or on the cluster of
// -baseline-kubeconfig (remote), interleaved with the meshed arm as any
// two arms are (testbed.Split). On kind the mesh is the meshed cluster's
// CNI, installed by the cluster's CNI step (kind.WithCNI).

// clusterWide returns the mesh's reason when it is on for a whole cluster.
func (c *Config) clusterWide() (mesh.Mesh, string) {
	m, err := c.NewMesh()
	if err != nil || c.Target == "local" {
		return nil, ""
	}
	if cw, ok := m.(mesh.ClusterWide); ok {
		return m, cw.ClusterWide()
	}
	return nil, ""
}

// meshRelease says which mesh release -mesh-install installs, and from
// where: a remote cluster pulls from registries of its own, so adapters
// install their mesh's published images there (mesh.InstallOptions.Published).
func (c *Config) meshRelease() mesh.InstallOptions {
	return mesh.InstallOptions{Version: c.MeshVersion, Registry: c.MeshRegistry, Published: c.Target == "remote"}
}

// candidateRelease is the release the candidate revision is installed at:
// -candidate-mesh-version, else the reference's.
func (c *Config) candidateRelease() mesh.InstallOptions {
	o := c.meshRelease()
	o.Version = cmp.Or(c.CandidateMeshVersion, o.Version)
	return o
}

// candidateInstall is the candidate revision's install settings when they
// are not the reference's (-candidate-mesh-version), nil otherwise.
func (c *Config) candidateInstall() *mesh.InstallOptions {
	if c.CandidateMeshVersion == "" {
		return nil
	}
	o := c.installOptions()
	o.Version = c.CandidateMeshVersion
	return &o
}

// installOptions are the mesh install's settings; on kind, without the
// capabilities the host cannot give the nodes' containers.
func (c *Config) installOptions() mesh.InstallOptions {
	o := c.meshRelease()
	if c.Target == "kind" {
		if q, err := kind.DetectQuirks(); err == nil && q.NoSysResource {
			o.NoCapabilities = []string{"SYS_RESOURCE"}
		}
	}
	return o
}

// meshCNI installs a cluster-wide mesh as a kind cluster's CNI: its images
// from the local Docker into the nodes, then its charts.
type meshCNI struct {
	m    mesh.Mesh
	c    *Config
	logf func(string, ...any)
}

// Name is the mesh's name with " (Helm, as the mesh)", for the kind step's
// log line (kind.CNIInstaller).
func (mc meshCNI) Name() string { return mc.m.Name() + " (Helm, as the mesh)" }

// InstallCNI loads those of the mesh's images that the local Docker has
// into the nodes, then installs its Helm charts as the cluster's CNI
// (kind.CNIInstaller).
func (mc meshCNI) InstallCNI(ctx context.Context, cl kind.Cluster) error {
	io := mc.c.installOptions()
	if im, ok := mc.m.(interface {
		Images(mesh.InstallOptions) ([]string, error)
	}); ok {
		imgs, err := im.Images(io)
		if err != nil {
			return err
		}
		if local := kind.LocalImages(ctx, imgs...); len(local) > 0 {
			if err := cl.LoadImages(ctx, local...); err != nil {
				return err
			}
		}
	}
	return meshinstall.InstallCNI(ctx, cl.RESTConfig(), mc.m, meshinstall.CNIInstall{Install: io, ChartDir: mc.c.MeshCharts, Logf: mc.logf, Words: flagWords})
}

// createBaselineCluster creates or reuses <kind-cluster>-baseline, or
// reads -baseline-kubeconfig; CreateCluster calls it before the run's own
// cluster.
func (s *Suite) createBaselineCluster(ctx context.Context) error {
	c := s.Config
	if s.cl.base.rest != nil {
		return nil
	}
	if c.Target == "remote" {
		rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.BaselineKubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return fmt.Errorf("-baseline-kubeconfig %s: %w", c.BaselineKubeconfig, err)
		}
		s.cl.base.rest = rc
		return nil
	}
	name := c.KindCluster + "-baseline"
	existing, err := kindcluster.NewProvider().List()
	if err != nil {
		return fmt.Errorf("kind: list clusters: %w", err)
	}
	opts := []kind.Option{kind.WithLogger(kind.LoggerFunc(s.logf)), kind.WithReuse(true)}
	if c.NodeImage != "" {
		opts = append(opts, kind.WithNodeImage(c.NodeImage))
	}
	s.logf("kind: the baseline arm runs on a second cluster, %s (bridge CNI)", name)
	cl, err := kind.Up(ctx, name, c.KindConfig, opts...)
	if cl != nil {
		s.mu.Lock()
		s.cl.base.kind, s.cl.base.deleteCluster = cl, !slices.Contains(existing, name) && !c.KeepCluster
		s.mu.Unlock()
	}
	if err != nil {
		return err
	}
	if s.cl.base.rest = cl.RESTConfig(); s.cl.base.rest == nil {
		return fmt.Errorf("kind %s: cannot read its kubeconfig %s", cl.Name(), cl.Kubeconfig())
	}
	return nil
}

// splitTarget is the meshed target on the run's cluster and a baseline
// target (mesh none) on the baseline cluster, which CreateCluster made or
// read and LoadImages loaded.
func (s *Suite) splitTarget(ctx context.Context, meshed *kube.Target, o kube.Options) (testbed.Target, error) {
	none, err := mesh.New("none")
	if err != nil {
		return nil, err
	}
	o.Mesh, o.InstallMesh, o.Install, o.ChartDir = none, false, mesh.InstallOptions{}, ""
	o.NodeExec = nil
	if s.cl.base.kind != nil {
		o.NodeExec = kind.NodeExec(s.cl.base.kind.Name())
	}
	base, err := kube.New(ctx, s.cl.base.rest, o)
	if err != nil {
		return nil, fmt.Errorf("baseline cluster: %w", err)
	}
	where := "cluster of -baseline-kubeconfig " + s.Config.BaselineKubeconfig
	if s.cl.base.kind != nil {
		where = "kind cluster " + s.cl.base.kind.Name() + " (bridge CNI, no mesh)"
	}
	return &testbed.Split{Baseline: base, Meshed: meshed, Where: where}, nil
}
