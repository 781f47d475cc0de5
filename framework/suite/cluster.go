package suite

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/target"
	"github.com/meshbench/meshbench/framework/target/kind"
	"github.com/meshbench/meshbench/framework/target/kube"
)

// clusterTarget is the Kubernetes target plus, for -target=kind, the kind
// cluster under it, which Close deletes when this run created it and
// -keep-cluster is off. A remote cluster is never deleted.
type clusterTarget struct {
	*kube.Target
	cluster       kind.Cluster
	deleteCluster bool
	logf          func(string, ...any)
}

// Close deletes the run's namespaces, then the cluster if the run made it.
func (t *clusterTarget) Close(ctx context.Context) error {
	var err error
	if t.Target != nil {
		err = t.Target.Close(ctx)
	}
	if t.cluster != nil {
		if t.deleteCluster {
			err = errors.Join(err, t.cluster.Delete(ctx))
		} else {
			t.logf("kind cluster %s kept (-keep-cluster, or it existed before the run)", t.cluster.Name())
		}
	}
	return err
}

// kubeTarget builds the target for -target=kind (create or reuse a kind
// cluster from kind-config.yaml through kind's Go library) or -target=remote
// (the cluster of -kubeconfig / $KUBECONFIG).
func kubeTarget(ctx context.Context, c *Config, logf func(string, ...any)) (_ target.Target, err error) {
	ct := &clusterTarget{logf: logf}
	defer func() {
		if err != nil {
			err = errors.Join(err, ct.Close(context.WithoutCancel(ctx)))
		}
	}()
	var rc *rest.Config
	switch c.Target {
	case "kind":
		existing, lerr := kindcluster.NewProvider().List()
		if lerr != nil {
			return nil, fmt.Errorf("kind: list clusters (is dockerd running? hack/offline/docker.sh starts one): %w", lerr)
		}
		opts := []kind.Option{kind.WithLogger(kind.LoggerFunc(logf)), kind.WithReuse(true)}
		if c.NodeImage != "" {
			opts = append(opts, kind.WithNodeImage(c.NodeImage))
		}
		cl, err := kind.Up(ctx, c.KindCluster, c.KindConfig, opts...)
		if err != nil {
			return nil, err
		}
		ct.cluster, ct.deleteCluster = cl, !slices.Contains(existing, c.KindCluster) && !c.KeepCluster
		if local := localImages(ctx, c.NginxImage, c.LoadgenImage); len(local) > 0 {
			logf("kind: loading local images %v into the nodes", local)
			if err := cl.LoadImages(ctx, local...); err != nil {
				return nil, err
			}
		}
		if rc = cl.RESTConfig(); rc == nil {
			return nil, fmt.Errorf("kind %s: cannot read its kubeconfig %s", cl.Name(), cl.Kubeconfig())
		}
	case "remote":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig}
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: c.KubeContext}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s (context %q): %w", c.Kubeconfig, c.KubeContext, err)
		}
	default:
		return nil, fmt.Errorf("-target=%s is not a Kubernetes target", c.Target)
	}
	m, err := mesh.New(c.Mesh, c.MeshOptions()...)
	if err != nil {
		return nil, fmt.Errorf("-mesh=%s: %w", c.Mesh, err)
	}
	placement, err := kube.ParsePlacement(c.Placement)
	if err != nil {
		return nil, fmt.Errorf("-placement: %w", err)
	}
	ct.Target, err = kube.New(ctx, rc, kube.Options{
		Name:            c.Target,
		Mesh:            m,
		Placement:       placement,
		Loadgens:        c.Loadgens,
		NamespacePrefix: c.Namespace,
		InstallMesh:     c.MeshInstall,
		Install:         mesh.InstallOptions{Version: c.MeshVersion, Registry: c.MeshRegistry},
		ChartDir:        c.MeshCharts,
		Workloads: manifests.Params{
			Images:       manifests.Images{Nginx: c.NginxImage, Loadgen: c.LoadgenImage},
			ResponseSize: c.ResponseSize,
		},
		Logf: logf,
	})
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// localImages lists the images present in the local Docker, to be loaded
// into kind's nodes (a registry, when reachable, serves the others).
func localImages(ctx context.Context, images ...string) []string {
	var out []string
	for _, img := range images {
		if img != "" && exec.CommandContext(ctx, "docker", "image", "inspect", img).Run() == nil {
			out = append(out, img)
		}
	}
	return out
}
