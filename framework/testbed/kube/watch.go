package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/fixtures/manifests"
	"github.com/meshbench/meshbench/framework/internal/kubewait"
)

// PodError is a workload that cannot become ready: the pod (empty when
// the pod could not even be created), the container, the reason as the
// kubelet or the controller reports it, and what a reader needs to fix it.
type PodError = kubewait.PodError

// eventProblem returns a problem that only events show: a pod whose probes
// failed at least probes times while it is not ready, or a ReplicaSet that
// cannot create its pods (a Pod Security violation at once; anything else,
// such as the namespace's service account not existing yet, after 5 tries).
func eventProblem(events []corev1.Event, pods map[string]*corev1.Pod, probes int) *PodError {
	events = append([]corev1.Event(nil), events...)
	kubewait.SortEvents(events)
	fails := map[string]int{}
	for i := range events {
		ev := &events[i]
		n := int(max(ev.Count, 1))
		if ev.Series != nil {
			n = int(max(ev.Series.Count, int32(n)))
		}
		switch {
		case ev.Reason == "Unhealthy" && ev.InvolvedObject.Kind == "Pod":
			p, ok := pods[ev.InvolvedObject.Name]
			if !ok || podReady(p) || p.DeletionTimestamp != nil {
				continue
			}
			fails[p.Name] += n
			if fails[p.Name] >= probes {
				return &PodError{Namespace: ev.Namespace, Pod: p.Name, Container: containerOf(ev.InvolvedObject.FieldPath),
					Reason: "Unhealthy", Message: fmt.Sprintf("%d failed probes, the last: %s", fails[p.Name], ev.Message)}
			}
		case ev.Reason == "FailedCreate" && (ev.InvolvedObject.Kind == "ReplicaSet" || ev.InvolvedObject.Kind == "DaemonSet"):
			if strings.Contains(ev.Message, "violates PodSecurity") || n >= 5 {
				return &PodError{Namespace: ev.Namespace, Reason: "FailedCreate",
					Message: fmt.Sprintf("%s %s cannot create pods (%d times): %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, n, ev.Message)}
			}
		}
	}
	return nil
}

// containerOf reads "spec.containers{nginx}" as "nginx".
func containerOf(fieldPath string) string {
	if i := strings.Index(fieldPath, "{"); i >= 0 && strings.HasSuffix(fieldPath, "}") {
		return fieldPath[i+1 : len(fieldPath)-1]
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// want is the number of ready pods expected of one component in one namespace.
type want struct {
	Namespace string
	Component manifests.Component
	Replicas  int
}

// readiness waits for the workloads of a run while watching their pods.
type readiness struct {
	c        kubernetes.Interface
	run      string // value of manifests.LabelRun
	wants    []want
	probes   int
	grace    time.Duration
	every    time.Duration // how often events are read and everything re-listed
	now      func() time.Time
	logf     func(string, ...any)
	logLines int64
}

// wait returns nil when every wanted pod is ready, a *PodError as soon as
// one cannot become ready, and ctx's error, with what is not ready, when
// ctx ends first.
func (r *readiness) wait(ctx context.Context) error {
	nss := r.namespaces()
	nudge := make(chan struct{}, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, ns := range nss {
		go r.watch(wctx, ns, nudge)
	}
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	withEvents := true
	for {
		pods, err := r.list(ctx, nss)
		if err != nil {
			return err
		}
		if e := r.problem(ctx, pods, withEvents); e != nil {
			return r.explain(ctx, e)
		}
		if r.ready(pods) {
			return nil
		}
		withEvents = false
		select {
		case <-ctx.Done():
			return fmt.Errorf("workloads not ready: %w: %s", ctx.Err(), r.pending(pods))
		case <-nudge:
		case <-tick.C:
			withEvents = true
		}
	}
}

func (r *readiness) namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range r.wants {
		if !seen[w.Namespace] {
			seen[w.Namespace] = true
			out = append(out, w.Namespace)
		}
	}
	return out
}

func (r *readiness) selector() string { return manifests.LabelRun + "=" + r.run }

// watch nudges the waiter on every change of a pod of the run in ns, and
// re-establishes the watch when the API server closes it, until ctx ends.
func (r *readiness) watch(ctx context.Context, ns string, nudge chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := r.c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: r.selector()})
		if err != nil {
			// The periodic re-list carries on; try the watch again later.
			select {
			case <-ctx.Done():
			case <-time.After(r.every):
			}
			continue
		}
		r.forward(ctx, w, nudge)
		w.Stop()
	}
}

// forward nudges on every event of w until w ends, fails, or ctx ends.
func (r *readiness) forward(ctx context.Context, w watch.Interface, nudge chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			select {
			case nudge <- struct{}{}:
			default:
			}
		}
	}
}

func (r *readiness) list(ctx context.Context, nss []string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, ns := range nss {
		l, err := r.c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: r.selector()})
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("workloads not ready: %w", ctx.Err())
			}
			return nil, fmt.Errorf("list pods in %s: %w", ns, err)
		}
		out = append(out, l.Items...)
	}
	return out, nil
}

func (r *readiness) problem(ctx context.Context, pods []corev1.Pod, withEvents bool) *PodError {
	now := r.now()
	for i := range pods {
		if e := kubewait.PodProblem(&pods[i], now, r.grace); e != nil {
			return e
		}
	}
	if !withEvents {
		return nil
	}
	for _, ns := range r.namespaces() {
		evs, err := r.c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.logf("kube target: cannot read events in %s (probe failures will only show as a timeout): %v", ns, err)
			continue
		}
		byName := map[string]*corev1.Pod{}
		for i := range pods {
			if pods[i].Namespace == ns {
				byName[pods[i].Name] = &pods[i]
			}
		}
		if e := eventProblem(evs.Items, byName, r.probes); e != nil {
			return e
		}
	}
	return nil
}

// ready reports whether every wanted component has its ready pods.
func (r *readiness) ready(pods []corev1.Pod) bool {
	got := map[want]int{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && podReady(p) {
			got[want{Namespace: p.Namespace, Component: manifests.Component(p.Labels[manifests.LabelComponent])}]++
		}
	}
	for _, w := range r.wants {
		if got[want{Namespace: w.Namespace, Component: w.Component}] < w.Replicas {
			return false
		}
	}
	return true
}

// pending describes the pods that are not ready.
func (r *readiness) pending(pods []corev1.Pod) string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if podReady(p) {
			continue
		}
		s := fmt.Sprintf("%s/%s %s", p.Namespace, p.Name, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				s += fmt.Sprintf(" %s:%s", cs.Name, w.Reason)
			} else if !cs.Ready {
				s += fmt.Sprintf(" %s:not-ready", cs.Name)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Status == corev1.ConditionFalse && c.Message != "" {
				s += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
			}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no pod created yet (see the ReplicaSets' events)"
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// explain adds the pod's events and its container's last log lines to e.
func (r *readiness) explain(ctx context.Context, e *PodError) error {
	return kubewait.Explain(ctx, r.c, e, r.logLines)
}
