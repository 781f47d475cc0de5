package kind_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/meshbench/meshbench/framework/testbed/kind"
)

// The lifecycle test runs only with MESHBENCH_KIND_E2E=1: it creates a real
// 3-node kind cluster from the repository's kind-config.yaml, checks
// pod-to-pod traffic across nodes with the nginx image from
// hack/offline/images.sh (MESHBENCH_NGINX_IMAGE, else any local
// meshbench/nginx image), and deletes the cluster. MESHBENCH_KIND_CNI
// (bridge or ptp) forces the CNI plugin.

type ctxKey int

const namespaceKey ctxKey = iota

var (
	testenv     env.Environment
	clusterName string
	nginxImage  string
)

func TestMain(m *testing.M) {
	if os.Getenv("MESHBENCH_KIND_E2E") != "1" {
		os.Exit(m.Run())
	}
	nginxImage = os.Getenv("MESHBENCH_NGINX_IMAGE")
	if nginxImage == "" {
		out, err := exec.Command("docker", "image", "ls", "meshbench/nginx", "--format", "{{.Repository}}:{{.Tag}}").Output()
		if f := strings.Fields(string(out)); err == nil && len(f) > 0 {
			nginxImage = f[0]
		}
	}
	if nginxImage == "" {
		log.Fatal("no meshbench/nginx image: run hack/offline/images.sh nginx")
	}
	clusterName = envconf.RandomName("meshbench-e2e", 18)
	logger := kind.LoggerFunc(func(format string, args ...any) { log.Printf(format, args...) })
	testenv = env.New()
	testenv.Setup(
		kind.Create(clusterName, "../../../kind-config.yaml", kind.WithLogger(logger),
			kind.WithCNIPlugin(os.Getenv("MESHBENCH_KIND_CNI"))),
		kind.LoadImages(clusterName, nginxImage),
	)
	testenv.Finish(kind.Destroy(clusterName, kind.WithLogger(logger)))
	os.Exit(testenv.Run(m))
}

func skipUnlessE2E(t *testing.T) {
	if os.Getenv("MESHBENCH_KIND_E2E") != "1" {
		t.Skip("set MESHBENCH_KIND_E2E=1 to create a real kind cluster")
	}
}

func TestThreeNodeCluster(t *testing.T) {
	skipUnlessE2E(t)
	f := features.New("a 3-node kind cluster").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := envconf.RandomName("pods", 12)
			ctx, err := envfuncs.CreateNamespace(ns)(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return context.WithValue(ctx, namespaceKey, ns)
		}).
		Assess("all 3 nodes are Ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var list corev1.NodeList
			if err := cfg.Client().Resources().List(ctx, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 3 {
				t.Fatalf("nodes: got %d, want 3", len(list.Items))
			}
			for _, n := range list.Items {
				if !ready(n.Status.Conditions) {
					t.Errorf("node %s is not Ready", n.Name)
				}
			}
			return ctx
		}).
		Assess("a pod on worker 1 reaches nginx on worker 2 by pod IP and by Service name", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := ctx.Value(namespaceKey).(string)
			w1, w2 := workers(ctx, t, cfg)
			server := nginxPod(ns, "server", w2)
			if err := cfg.Client().Resources().Create(ctx, server); err != nil {
				t.Fatal(err)
			}
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: ns},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": "server"},
					Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
				},
			}
			if err := cfg.Client().Resources().Create(ctx, svc); err != nil {
				t.Fatal(err)
			}
			if err := wait.For(conditions.New(cfg.Client().Resources()).PodReady(server), wait.WithTimeout(2*time.Minute)); err != nil {
				t.Fatalf("server pod on %s not Ready: %v\n%s", w2, err, podReport(ctx, cfg, ns, "server"))
			}
			for _, tc := range []struct{ name, target string }{
				{"client-by-ip", server.Status.PodIP},
				{"client-by-service", "server." + ns + ".svc.cluster.local."}, // FQDN: no search-list queries
			} {
				name, target := tc.name, tc.target
				client := nginxPod(ns, name, w1)
				client.Spec.RestartPolicy = corev1.RestartPolicyNever
				client.Spec.Containers[0].ReadinessProbe = nil
				client.Spec.Containers[0].Command = []string{"bash", "-c", fetchScript, "fetch", target}
				if err := cfg.Client().Resources().Create(ctx, client); err != nil {
					t.Fatal(err)
				}
				done := func(o k8s.Object) bool {
					p := o.(*corev1.Pod)
					return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
				}
				if err := wait.For(conditions.New(cfg.Client().Resources()).ResourceMatch(client, done), wait.WithTimeout(2*time.Minute)); err != nil {
					t.Fatalf("client pod on %s did not finish: %v\n%s", w1, err, podReport(ctx, cfg, ns, name))
				}
				out := podLogs(ctx, t, cfg, ns, name)
				if client.Status.Phase != corev1.PodSucceeded || !strings.Contains(out, "HTTP/1.1 200 OK") {
					t.Fatalf("GET http://%s/ from %s: phase %s, output:\n%s\n%s", target, w1, client.Status.Phase, out, podReport(ctx, cfg, ns, name))
				}
				if err := cfg.Client().Resources().Get(ctx, name, ns, client); err != nil {
					t.Fatal(err)
				}
				// The server saw the client's own pod IP: served by the
				// intended pod, across nodes, with no masquerading.
				access := podLogs(ctx, t, cfg, ns, "server")
				if !strings.Contains(access, client.Status.PodIP+" - ") {
					t.Fatalf("server log has no request from client pod %s:\n%s", client.Status.PodIP, access)
				}
				t.Logf("GET http://%s/ from %s (pod %s on %s) served by %s on %s", target, name, client.Status.PodIP, w1, server.Status.PodIP, w2)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := ctx.Value(namespaceKey).(string)
			if _, err := envfuncs.DeleteNamespace(ns)(ctx, cfg); err != nil {
				t.Log(err)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// fetchScript sends one HTTP GET to $1:80 with bash's /dev/tcp (the nginx
// image has no HTTP client), retrying a few times while DNS and Service
// rules settle.
const fetchScript = `for i in 1 2 3 4 5 6 7 8 9 10; do
  if exec 3<>"/dev/tcp/$1/80"; then
    printf 'GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$1" >&3
    cat <&3
    exit 0
  fi
  sleep 1
done
exit 1`

func nginxPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:            "nginx",
				Image:           nginxImage,
				ImagePullPolicy: corev1.PullNever,
				Ports:           []corev1.ContainerPort{{ContainerPort: 80}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// workers returns the two worker nodes, in name order.
func workers(ctx context.Context, t *testing.T, cfg *envconf.Config) (string, string) {
	var list corev1.NodeList
	if err := cfg.Client().Resources().List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	if len(names) != 2 {
		t.Fatalf("workers: got %v, want 2", names)
	}
	return names[0], names[1]
}

func ready(conds []corev1.NodeCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podLogs(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, name string) string {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", ns, name, err)
	}
	return string(raw)
}

// podReport is the pod's status and events, for failure messages.
func podReport(ctx context.Context, cfg *envconf.Config, ns, name string) string {
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		fmt.Fprintf(&b, "pod %s: phase %s, node %s, IP %s\n", name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s: %+v\n", s.Name, s.State)
		}
	}
	if ev, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name}); err == nil {
		for _, e := range ev.Items {
			fmt.Fprintf(&b, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
		}
	}
	return b.String()
}
