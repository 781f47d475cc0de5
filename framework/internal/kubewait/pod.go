// Package kubewait says why pods cannot become ready, with their events
// and last log lines, and deletes namespaces waiting until they are gone:
// what the kube target and the mesh installer both wait on.
package kubewait

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodError is a workload that cannot become ready: the pod (empty when
// the pod could not even be created), the container, the reason as the
// kubelet or the controller reports it, and what a reader needs to fix it.
type PodError struct {
	// Namespace is the pod's namespace.
	Namespace string
	// Pod is the pod's name; empty when it could not be created.
	Pod string
	// Container is the container that fails; empty for the whole pod.
	Container string
	// Reason is the kubelet's or controller's reason: CrashLoopBackOff,
	// ImagePullBackOff, ErrImagePull, CreateContainerError, StartError,
	// OOMKilled, Unhealthy (a probe that keeps failing), Unschedulable,
	// FailedCreate (the ReplicaSet could not create the pod), ...
	Reason string
	// Message is the kubelet's or controller's message, with what a
	// reader needs to fix it.
	Message string
	// Events are the pod's (or ReplicaSet's) events, oldest first.
	Events []string
	// Logs are the container's last log lines (of the previous instance
	// when it restarted).
	Logs string
}

// Error says which pod and container fail, why, and their events and
// last log lines.
func (e *PodError) Error() string {
	var b strings.Builder
	who := e.Namespace + "/" + e.Pod
	if e.Pod == "" {
		who = "namespace " + e.Namespace
	}
	if e.Container != "" {
		who += " container " + e.Container
	}
	fmt.Fprintf(&b, "%s: %s", who, e.Reason)
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if len(e.Events) > 0 {
		b.WriteString("\nevents:\n  " + strings.Join(e.Events, "\n  "))
	}
	if e.Logs != "" {
		b.WriteString("\nlast log lines:\n  " + strings.ReplaceAll(strings.TrimRight(e.Logs, "\n"), "\n", "\n  "))
	}
	return b.String()
}

// failWaiting are the waiting reasons that do not resolve themselves.
var failWaiting = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerError":       true,
	"CreateContainerConfigError": true,
	"RunContainerError":          true,
	"PreStartHookError":          true,
	"PostStartHookError":         true,
}

// failTerminated are the termination reasons that fail at once: the
// container will not run however often it is restarted.
var failTerminated = map[string]bool{
	"OOMKilled":          true,
	"StartError":         true, // e.g. the command is missing from a distroless image
	"ContainerCannotRun": true,
}

// transientStart are the messages of container starts that failed for a
// reason a restart cures, which the kubelet does on its own: runc could
// not freeze the new container's cgroup (v1) on a busy host. A CI run's
// loadgen failed so ("error setting cgroup config for procHooks process:
// unable to freeze"), and its next start succeeded. maxTransientRestarts
// bounds how often they are forgiven.
var transientStart = []string{"unable to freeze"}

const maxTransientRestarts = 3

// restartCures reports whether s failed to start only for a transient
// reason (transientStart), fewer than maxTransientRestarts times so far.
func restartCures(s corev1.ContainerStatus) bool {
	if s.RestartCount >= maxTransientRestarts {
		return false
	}
	var msgs []string
	if w := s.State.Waiting; w != nil {
		msgs = append(msgs, w.Message)
	}
	for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
		if t != nil {
			msgs = append(msgs, t.Message)
		}
	}
	for _, m := range msgs {
		for _, cue := range transientStart {
			if strings.Contains(m, cue) {
				return true
			}
		}
	}
	return false
}

// PodProblem returns why p can never become ready, or nil. An
// unschedulable pod fails only after grace: a cluster can be briefly short
// of a node. A container whose start failed for a reason a restart cures
// (restartCures) is waited for.
func PodProblem(p *corev1.Pod, now time.Time, grace time.Duration) *PodError {
	if p.DeletionTimestamp != nil {
		return nil
	}
	e := &PodError{Namespace: p.Namespace, Pod: p.Name}
	if p.Status.Phase == corev1.PodFailed {
		e.Reason, e.Message = cmp.Or(p.Status.Reason, "Failed"), p.Status.Message
		return e
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if restartCures(s) {
			continue
		}
		if w := s.State.Waiting; w != nil && failWaiting[w.Reason] {
			e.Container, e.Reason, e.Message = s.Name, w.Reason, w.Message
			if t := s.LastTerminationState.Terminated; t != nil {
				e.Message = strings.TrimSpace(fmt.Sprintf("%s (last exit code %d, %s: %s)", e.Message, t.ExitCode, t.Reason, strings.TrimSpace(t.Message)))
			}
			return e
		}
		for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
			if t != nil && failTerminated[t.Reason] {
				e.Container, e.Reason = s.Name, t.Reason
				e.Message = strings.TrimSpace(fmt.Sprintf("exit code %d %s", t.ExitCode, strings.TrimSpace(t.Message)))
				return e
			}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			!c.LastTransitionTime.IsZero() && now.Sub(c.LastTransitionTime.Time) >= grace {
			e.Reason = c.Reason
			e.Message = fmt.Sprintf("%s (for %v)", c.Message, now.Sub(c.LastTransitionTime.Time).Round(time.Second))
			return e
		}
	}
	return nil
}

// SortEvents sorts events oldest first, by their last time seen.
func SortEvents(evs []corev1.Event) {
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(&evs[i]).Before(eventTime(&evs[j])) })
}

// eventTime is when e was last seen.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// ran reports whether container of p has ever run.
func ran(p *corev1.Pod, container string) bool {
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == container {
			return s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil || s.RestartCount > 0
		}
	}
	return true // no status: try
}

// describeEvents lists the events of one object (or, with name empty, of
// the namespace) as one line each, oldest first.
func describeEvents(ctx context.Context, c kubernetes.Interface, ns, name string) []string {
	opts := metav1.ListOptions{}
	if name != "" {
		opts.FieldSelector = "involvedObject.name=" + name
	}
	evs, err := c.CoreV1().Events(ns).List(ctx, opts)
	if err != nil {
		return []string{"(events unavailable: " + err.Error() + ")"}
	}
	SortEvents(evs.Items)
	var out []string
	for _, ev := range evs.Items {
		if name != "" && ev.InvolvedObject.Name != name {
			continue // the fake clientset ignores field selectors
		}
		if name == "" && ev.Type == corev1.EventTypeNormal {
			continue
		}
		n := ""
		if ev.Count > 1 {
			n = fmt.Sprintf(" (x%d)", ev.Count)
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s: %s%s", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, strings.TrimSpace(ev.Message), n))
	}
	return out
}

// tailLogs reads a container's last lines: of its previous instance when
// there is one (the one that crashed), else of the current one.
func tailLogs(ctx context.Context, c kubernetes.Interface, ns, pod, container string, lines int64) (string, error) {
	get := func(previous bool) (string, error) {
		b, err := c.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines, Previous: previous}).Do(ctx).Raw()
		return string(b), err
	}
	if s, err := get(true); err == nil && strings.TrimSpace(s) != "" {
		return s, nil
	}
	s, err := get(false)
	if err != nil {
		return "", fmt.Errorf("logs of %s/%s %s: %w", ns, pod, container, err)
	}
	return s, nil
}

// Explain adds the pod's events and its container's last log lines (at
// most lines of them) to e, and returns it.
func Explain(ctx context.Context, c kubernetes.Interface, e *PodError, lines int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	e.Events = describeEvents(ctx, c, e.Namespace, e.Pod)
	if e.Pod == "" || e.Container == "" {
		return e
	}
	if p, err := c.CoreV1().Pods(e.Namespace).Get(ctx, e.Pod, metav1.GetOptions{}); err == nil && !ran(p, e.Container) {
		return e // no logs to read: the container never started
	}
	logs, err := tailLogs(ctx, c, e.Namespace, e.Pod, e.Container, lines)
	if err != nil {
		e.Logs = "(logs unavailable: " + err.Error() + ")"
	} else {
		e.Logs = logs
	}
	return e
}
