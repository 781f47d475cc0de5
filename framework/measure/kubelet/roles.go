package kubelet

import (
	"errors"
	"math"
	"sort"

	"github.com/meshbench/meshbench/framework/measure"
	corev1 "k8s.io/api/core/v1"
)

// Role is measure.Role: the kubelet source shares meshbench's role model.
type Role = measure.Role

// Roles the kubelet source adds to the ones in package measure.
const (
	// RoleWaypoint is a per-namespace L7 proxy (an Istio ambient waypoint):
	// neither a sidecar nor a per-node daemon.
	RoleWaypoint Role = "waypoint"
	// RoleOther is everything else on the node (kube-system, CNI, ...).
	RoleOther Role = "other"
)

// RoleOf classifies one container.
type RoleOf func(namespace, pod, container string) Role

// RoleRule matches containers by namespace, pod labels and container name.
// Empty fields match anything.
type RoleRule struct {
	// Role is the role of the containers matched.
	Role Role
	// Namespace is the exact namespace.
	Namespace string
	// PodLabels must all be present on the pod with these values.
	PodLabels map[string]string
	// Container is the exact container name.
	Container string
}

func (r RoleRule) matches(ns, container string, labels map[string]string) bool {
	if r.Namespace != "" && r.Namespace != ns {
		return false
	}
	if r.Container != "" && r.Container != container {
		return false
	}
	for k, v := range r.PodLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// RolesFromPods returns a RoleOf that looks pods up by namespace and name in
// pods, and returns the Role of the first rule that matches; def when none
// does. A pod missing from pods has no labels, so only rules without
// PodLabels can match it. Matching on labels and exact container names,
// not on substrings of pod names, keeps the classification stable across
// pod restarts.
func RolesFromPods(pods []corev1.Pod, def Role, rules ...RoleRule) RoleOf {
	labels := make(map[PodKey]map[string]string, len(pods))
	for _, p := range pods {
		labels[PodKey{Namespace: p.Namespace, Pod: p.Name}] = p.Labels
	}
	return func(ns, pod, container string) Role {
		l := labels[PodKey{Namespace: ns, Pod: pod}] // nil for a pod not in pods
		for _, r := range rules {
			if r.matches(ns, container, l) {
				return r.Role
			}
		}
		return def
	}
}

// RoleUsage is the usage of every container of one role, summed.
type RoleUsage struct {
	// Role is the role summed.
	Role Role `json:"role"`
	// Containers is the number of containers summed.
	Containers int `json:"containers"`
	// Millicores is the sum of the containers' CPU use.
	Millicores float64 `json:"millicores"`
	// WorkingSetBytes and WorkingSetBytesBefore sum the working sets at the
	// second and first read.
	WorkingSetBytes       float64 `json:"workingSetBytes"`
	WorkingSetBytesBefore float64 `json:"workingSetBytesBefore"`
	// MaxThrottledRatio is the worst CFS throttled-period ratio of any
	// container of the role; a non-zero value means some container ran into
	// its CPU limit during the window.
	MaxThrottledRatio float64 `json:"maxThrottledRatio"`
	// MaxThrottled names the container with MaxThrottledRatio.
	MaxThrottled ContainerKey `json:"maxThrottled,omitzero"`
}

// SumByRole sums the usage of one or more nodes per role: loadgen, app,
// sidecar, node-proxy, waypoint, control-plane, other, then any other role
// by name. Unlike measure.Window.ByRole it keeps the CFS throttling.
func SumByRole(roleOf RoleOf, usages ...Usage) []RoleUsage {
	sums := map[Role]*RoleUsage{}
	for _, u := range usages {
		for _, c := range u.Containers {
			r := roleOf(c.Container.Namespace, c.Container.Pod, c.Container.Container)
			s := sums[r]
			if s == nil {
				s = &RoleUsage{Role: r}
				sums[r] = s
			}
			s.Containers++
			s.Millicores += c.Millicores
			s.WorkingSetBytes += c.WorkingSetBytes
			s.WorkingSetBytesBefore += c.WorkingSetBytesBefore
			if c.HasCFS && c.ThrottledRatio > s.MaxThrottledRatio {
				s.MaxThrottledRatio = c.ThrottledRatio
				s.MaxThrottled = c.Container
			}
		}
	}
	out := make([]RoleUsage, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		oi, oj := roleOrder(out[i].Role), roleOrder(out[j].Role)
		if oi != oj {
			return oi < oj
		}
		return out[i].Role < out[j].Role
	})
	return out
}

func roleOrder(r Role) int {
	for i, k := range []Role{measure.RoleLoadgen, measure.RoleApp, measure.RoleSidecar, measure.RoleNodeProxy,
		RoleWaypoint, measure.RoleControlPlane, RoleOther} {
		if r == k {
			return i
		}
	}
	return 100
}

// Window converts the usage of one or more nodes into a measure.Window, the
// shape every meshbench CPU source reports. allocatableCores gives each
// node's status.allocatable cpu in cores; nodes missing from it get no
// utilisation figure. The RSS fields hold each container's RSS when both
// reads had it, else its working set, and Memory says which
// (ContainerUsage.Memory). The kubelet does not see threads, so
// MaxThreadMilliCores and Threads stay 0.
func Window(roleOf RoleOf, allocatableCores map[string]float64, usages ...Usage) measure.Window {
	w := measure.Window{NodeUtilisation: map[string]float64{}, Cores: map[string]int{}}
	for _, u := range usages {
		if u.NodeWindow > w.Elapsed {
			w.Elapsed = u.NodeWindow
		}
		if a, ok := allocatableCores[u.Node]; ok && a > 0 {
			w.Cores[u.Node] = int(math.Round(a))
			w.NodeUtilisation[u.Node], _ = u.NodeUtilisation(a)
		}
		for _, c := range u.Containers {
			idle, load, kind := c.Memory()
			w.Usage = append(w.Usage, measure.Usage{
				Name:       c.Container.String(),
				Role:       roleOf(c.Container.Namespace, c.Container.Pod, c.Container.Container),
				Pod:        PodKey{Namespace: c.Container.Namespace, Pod: c.Container.Pod}.String(),
				CPUSeconds: c.CPUSeconds,
				MilliCores: c.Millicores,
				IdleRSS:    int64(idle),
				LoadRSS:    int64(load),
				Memory:     kind,
			})
		}
		for _, k := range u.Appeared {
			w.Restarts = append(w.Restarts, k.String()+": started during the window")
		}
	}
	return w
}

// Restarts lists, one line each, the containers a Delta error reports as
// restarted, reset or missing; nil when err holds none.
func Restarts(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		var cr *CounterResetError
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		} else if errors.As(e, &cr) {
			out = append(out, cr.Error())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}
