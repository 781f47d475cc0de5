package mesh

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// load decodes every document of a recorded manifest in testdata.
func load(t *testing.T, name string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(t, err, "%s", name)
		out = append(out, obj)
	}
	return out
}

func loadOne[T runtime.Object](t *testing.T, name string) T {
	t.Helper()
	for _, o := range load(t, name) {
		if v, ok := o.(T); ok {
			return v
		}
	}
	var zero T
	t.Fatalf("%s holds no %T", name, zero)
	return zero
}

// podFrom makes the pod a controller would create from a recorded
// Deployment or DaemonSet template, on node, in namespace (when the manifest
// has none). Only the name, namespace and node are meshbench's.
func podFrom(t *testing.T, obj runtime.Object, name, namespace, node string) *corev1.Pod {
	t.Helper()
	var tmpl corev1.PodTemplateSpec
	var ns string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		tmpl, ns = o.Spec.Template, o.Namespace
	case *appsv1.DaemonSet:
		tmpl, ns = o.Spec.Template, o.Namespace
	default:
		t.Fatalf("no pod template in %T", obj)
	}
	if ns == "" {
		ns = namespace
	}
	p := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	p.Name, p.Namespace, p.Spec.NodeName = name, ns, node
	return p
}

func namespace(name string, labels, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
}

func clientset(objs ...runtime.Object) *fake.Clientset { return fake.NewClientset(objs...) }
