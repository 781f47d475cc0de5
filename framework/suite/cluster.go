package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/load"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/testbed/kind"
	"github.com/meshbench/meshbench/framework/testbed/kube"
)

// clusterState is the cluster under a Kubernetes target: for -target=kind
// the kind cluster, which the teardown deletes when this run created it
// and -keep-cluster is off; a remote cluster is never deleted.
type clusterState struct {
	kind          kind.Cluster
	deleteCluster bool
	// imagesLoaded is set once LoadImages has run for the cluster.
	imagesLoaded bool
	rest         *rest.Config
	// base is the baseline's cluster, for a mesh that is on for a whole
	// cluster (clusterwide.go); empty otherwise.
	base struct {
		kind          kind.Cluster
		deleteCluster bool
		imagesLoaded  bool
		rest          *rest.Config
	}
}

// createCluster creates or reuses the kind cluster of -kind-config, or
// reads the remote cluster of -kubeconfig, with the baseline's cluster
// first for a mesh on a whole cluster; once (listed twice, the second
// call keeps the first's record of whether this run created the cluster).
func (s *Suite) createCluster(ctx context.Context) error {
	c := s.Config
	if s.cl.rest != nil || c.Target == "local" {
		return nil
	}
	switch c.Target {
	case "kind":
		existing, err := kindcluster.NewProvider().List()
		if err != nil {
			return fmt.Errorf("kind: list clusters (is dockerd running? hack/offline/docker.sh starts one): %w", err)
		}
		opts := []kind.Option{kind.WithLogger(kind.LoggerFunc(s.logf)), kind.WithReuse(true)}
		if c.NodeImage != "" {
			opts = append(opts, kind.WithNodeImage(c.NodeImage))
		}
		if m, why := c.clusterWide(); m != nil {
			// The baseline's cluster first: made before the mesh's, its
			// nodes start on a host the mesh has not touched.
			if err := s.createBaselineCluster(ctx); err != nil {
				return err
			}
			s.logf("%s: installing it as the CNI of kind cluster %s", why, c.KindCluster)
			opts = append(opts, kind.WithCNI(meshCNI{m: m, c: c, logf: s.logf}))
		}
		cl, err := kind.Up(ctx, c.KindCluster, c.KindConfig, opts...)
		if cl != nil {
			s.mu.Lock()
			s.cl.kind, s.cl.deleteCluster = cl, !slices.Contains(existing, c.KindCluster) && !c.KeepCluster
			s.mu.Unlock()
		}
		if err != nil {
			return err
		}
		if s.cl.rest = cl.RESTConfig(); s.cl.rest == nil {
			return fmt.Errorf("kind %s: cannot read its kubeconfig %s", cl.Name(), cl.Kubeconfig())
		}
	case "remote":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig}
		rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: c.KubeContext}).ClientConfig()
		if err != nil {
			return fmt.Errorf("kubeconfig %s (context %q): %w", c.Kubeconfig, c.KubeContext, err)
		}
		if m, _ := c.clusterWide(); m != nil {
			if err := s.createBaselineCluster(ctx); err != nil {
				return err
			}
		}
		s.cl.rest = rc
	default:
		return fmt.Errorf("-target=%s is not a Kubernetes target", c.Target)
	}
	return nil
}

// loadImages imports the workload images found in the local Docker into
// the kind cluster's nodes (a registry, when reachable, serves the
// others), and into the baseline's cluster when there is one; once.
func (s *Suite) loadImages(ctx context.Context) error {
	if err := s.loadImagesInto(ctx, s.cl.kind, &s.cl.imagesLoaded); err != nil {
		return err
	}
	return s.loadImagesInto(ctx, s.cl.base.kind, &s.cl.base.imagesLoaded)
}

// loadImagesInto loads the workload images into cl's nodes, once.
func (s *Suite) loadImagesInto(ctx context.Context, cl kind.Cluster, loaded *bool) error {
	if cl == nil || *loaded {
		return nil
	}
	*loaded = true
	agent := "" // the node CPU agent's image, when it is deployed
	if s.Config.NodeCPU == kube.NodeCPUAgent {
		agent = s.Config.NodeCPUImage
	}
	images := append([]string{s.Config.NginxImage, s.Config.LoadgenImage, s.Config.candidateImage(), agent}, s.Config.meshImages()...)
	local := kind.LocalImages(ctx, images...)
	if len(local) == 0 {
		return nil
	}
	s.logf("kind %s: loading local images %v into the nodes", cl.Name(), local)
	return cl.LoadImages(ctx, local...)
}

// meshImages are the images -mesh-install installs, for an adapter that
// names them (mesh.Imager: images built offline, such as
// istio-proxyless's); none otherwise. checkMesh has refused a bad
// -mesh-version, so an error here names nothing to load.
func (c *Config) meshImages() []string {
	if !c.MeshInstall || c.Mesh == "" {
		return nil
	}
	m, err := c.NewMesh()
	im, ok := m.(mesh.Imager)
	if err != nil || !ok {
		return nil
	}
	refs, err := im.Images(c.meshRelease())
	if err != nil {
		return nil
	}
	if c.CandidateMeshVersion != "" {
		if cand, err := im.Images(c.candidateRelease()); err == nil {
			refs = append(refs, cand...)
		}
	}
	return refs
}

// kubeTarget deploys both arms on the cluster CreateCluster made or read,
// into whose nodes LoadImages loaded the images, installing the mesh when
// asked.
func (s *Suite) kubeTarget(ctx context.Context, c *Config, logf func(string, ...any)) (testbed.Target, error) {
	if err := s.clusterReady(); err != nil {
		return nil, err
	}
	o, err := s.kubeOptions(c, logf)
	if err != nil {
		return nil, err
	}
	cw, _ := c.clusterWide()
	o.KernelProof = cw != nil
	tg, err := kube.New(ctx, s.cl.rest, o)
	if err != nil {
		return nil, err
	}
	if cw == nil {
		return tg, nil
	}
	split, err := s.splitTarget(ctx, tg, o)
	if err != nil {
		return nil, errors.Join(err, tg.Close(context.WithoutCancel(ctx)))
	}
	return split, nil
}

// clusterReady checks that the Setup steps before SetUpTarget ran for a
// Kubernetes target: CreateCluster made or read its clusters (the
// baseline's too, for a mesh on a whole cluster), and LoadImages loaded
// the images into their kind nodes. SetUpTarget never runs them itself.
func (s *Suite) clusterReady() error {
	const order = "list CheckFixtures, CreateCluster, LoadImages and SetUpTarget in the environment's Setup, in that order"
	if cw, _ := s.Config.clusterWide(); s.cl.rest == nil || cw != nil && s.cl.base.rest == nil {
		return fmt.Errorf("-target=%s: no cluster: CreateCluster did not run before SetUpTarget; %s", s.Config.Target, order)
	}
	for _, cl := range []struct {
		kind   kind.Cluster
		loaded bool
	}{{s.cl.kind, s.cl.imagesLoaded}, {s.cl.base.kind, s.cl.base.imagesLoaded}} {
		if cl.kind != nil && !cl.loaded {
			return fmt.Errorf("kind %s: the images are not loaded: LoadImages did not run before SetUpTarget; %s", cl.kind.Name(), order)
		}
	}
	return nil
}

// kubeOptions are the kube target's options from c: the mesh, the
// placement, the candidate, the workloads and where the loadgen pods' logs
// go.
func (s *Suite) kubeOptions(c *Config, logf func(string, ...any)) (kube.Options, error) {
	m, err := c.NewMesh()
	if err != nil {
		return kube.Options{}, fmt.Errorf("-mesh=%s: %w", c.Mesh, err)
	}
	placement, err := kube.ParsePlacement(c.Placement)
	if err != nil {
		return kube.Options{}, fmt.Errorf("-placement: %w", err)
	}
	var nodeExec kube.NodeExec
	if s.cl.kind != nil {
		nodeExec = kind.NodeExec(s.cl.kind.Name())
	}
	o := kube.Options{
		Name:            c.Target,
		NodeExec:        nodeExec,
		Mesh:            m,
		Candidate:       c.CandidateSpec,
		Placement:       placement,
		Loadgens:        c.Loadgens,
		ControlPlane:    kube.ControlPlaneOptions{Changes: c.ControlPlaneChanges, ExtraPods: c.ControlPlanePods},
		NamespacePrefix: c.Namespace,
		NodeCPU:         c.NodeCPU,
		NodeCPUImage:    c.NodeCPUImage,
		CheckExec:       c.CheckExec,
		InstallMesh:     c.MeshInstall,
		Install:         c.installOptions(),
		ChartDir:        c.MeshCharts,
		// a canary of another release: its own version and charts
		CandidateInstall:  c.candidateInstall(),
		CandidateChartDir: c.CandidateMeshCharts,
		Workloads: manifests.Params{
			Images:       manifests.Images{Nginx: c.NginxImage, Loadgen: c.LoadgenImage},
			ResponseSize: c.ResponseSize,
			Protocol:     backendProtocol(c.Protocol),
		},
		SidecarWorkers: c.SidecarThreads,
		Logf:           logf,
		Words:          flagWords,
	}
	if s.loadLog != nil {
		// The loadgen pods' logs of a run that failed requests, counted
		// and kept as the local target's fortio log is (drainLog).
		o.LoadgenLog = s.loadLog
	}
	return o, nil
}

// backendProtocol is what the cluster's backends serve for -protocol p:
// gRPC for grpc, HTTP (nginx, which takes h2c too) otherwise.
func backendProtocol(p load.Protocol) string {
	if p == load.GRPC {
		return manifests.GRPC
	}
	return manifests.HTTP
}

// deleteCluster deletes the kind cluster when this run created it.
func (s *Suite) deleteCluster(ctx context.Context) error {
	s.mu.Lock()
	cl, del := s.cl.kind, s.cl.deleteCluster
	base, delBase := s.cl.base.kind, s.cl.base.deleteCluster
	s.cl.kind, s.cl.base.kind = nil, nil
	s.mu.Unlock()
	return errors.Join(s.deleteKind(ctx, cl, del), s.deleteKind(ctx, base, delBase))
}

func (s *Suite) deleteKind(ctx context.Context, cl kind.Cluster, del bool) error {
	if cl == nil {
		return nil
	}
	if !del {
		s.logf("kind cluster %s kept (-keep-cluster, or it existed before the run)", cl.Name())
		return nil
	}
	return cl.Delete(ctx)
}
