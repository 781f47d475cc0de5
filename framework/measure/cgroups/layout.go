package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Version is a cgroup hierarchy's version.
type Version int

// The cgroup versions.
const (
	// V1 has one hierarchy per controller (cpu, cpuacct, memory).
	V1 Version = 1
	// V2 is the unified hierarchy.
	V2 Version = 2
)

// Driver is the kubelet's cgroup driver (its --cgroup-driver).
type Driver string

// The kubelet's cgroup drivers.
const (
	// Cgroupfs names cgroups as plain directories:
	// kubepods/burstable/pod<uid>/<id>.
	Cgroupfs Driver = "cgroupfs"
	// Systemd names them as slices and scopes:
	// kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope.
	Systemd Driver = "systemd"
)

// QOSClass is a pod's QoS class, spelled as the pod's status.qosClass.
type QOSClass string

// The pod QoS classes.
const (
	Guaranteed QOSClass = "Guaranteed"
	Burstable  QOSClass = "Burstable"
	BestEffort QOSClass = "BestEffort"
)

// Runtime is a container runtime, as the scheme of a pod status's
// containerID names it.
type Runtime string

// The container runtimes whose cgroup names are known.
const (
	Containerd Runtime = "containerd"
	CRIO       Runtime = "cri-o"
	Docker     Runtime = "docker" // cri-dockerd
)

// Container names one container as its pod's status does.
type Container struct {
	// PodUID is metadata.uid of the pod.
	PodUID string `json:"podUID"`
	// ID is status.containerStatuses[].containerID: "<runtime>://<id>".
	ID string `json:"id"`
	// QOS is status.qosClass of the pod.
	QOS QOSClass `json:"qos"`
}

// String names the container by ID, pod UID and QoS class.
func (c Container) String() string {
	return fmt.Sprintf("container %s of pod %s (%s)", c.ID, c.PodUID, c.QOS)
}

// ParseContainerID splits a pod status's containerID ("containerd://abc")
// into its runtime and ID.
func ParseContainerID(s string) (Runtime, string, error) {
	scheme, id, ok := strings.Cut(s, "://")
	if !ok || id == "" || strings.ContainsAny(id, "/.") {
		return "", "", fmt.Errorf("container ID %q: want <runtime>://<id>", s)
	}
	switch r := Runtime(scheme); r {
	case Containerd, CRIO, Docker:
		return r, id, nil
	}
	return "", "", fmt.Errorf("container ID %q: runtime %q has no known cgroup naming (known: containerd, cri-o, docker)", s, scheme)
}

// Layout is where a node's kubelet puts the cgroups of its containers.
type Layout struct {
	// Version is the cgroup version, V1 or V2.
	Version Version `json:"version"`
	// Driver is the kubelet's cgroup driver, cgroupfs or systemd.
	Driver Driver `json:"driver"`
	// Kubepods is the kubelet's pods cgroup, relative to a hierarchy's
	// root: "kubepods", "kubepods.slice", or below a --cgroup-root such as
	// kind's: "kubelet.slice/kubelet-kubepods.slice".
	Kubepods string `json:"kubepods"`
	// CPU, CPUAcct and Memory are the hierarchies of those controllers,
	// relative to the tree's root: "" on v2; on v1 "cpu,cpuacct" (or
	// "cpu", "cpuacct") and "memory".
	CPU     string `json:"cpu"`
	CPUAcct string `json:"cpuacct"`
	Memory  string `json:"memory"`
}

// Dir is the container's cgroup, relative to a hierarchy's root, as the
// layout names it.
func (l Layout) Dir(c Container) (string, error) {
	rt, id, err := ParseContainerID(c.ID)
	if err != nil {
		return "", err
	}
	if c.PodUID == "" || strings.ContainsAny(c.PodUID, "/.") {
		return "", fmt.Errorf("%v: bad pod UID %q", c, c.PodUID)
	}
	qos := ""
	switch c.QOS {
	case Guaranteed:
	case Burstable, BestEffort:
		qos = strings.ToLower(string(c.QOS))
	default:
		return "", fmt.Errorf("%v: unknown QoS class %q (want Guaranteed, Burstable or BestEffort)", c, c.QOS)
	}
	switch l.Driver {
	case Cgroupfs:
		return path.Join(l.Kubepods, qos, "pod"+c.PodUID, cgroupfsName(rt, id)), nil
	case Systemd:
		return l.systemdDir(qos, c.PodUID, rt, id), nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q", l.Driver)
}

// cgroupfsName is the runtime's container directory under the cgroupfs
// driver.
func cgroupfsName(rt Runtime, id string) string {
	if rt == CRIO {
		return "crio-" + id
	}
	return id
}

// systemdDir names the slices as the kubelet's systemd driver does: each
// slice's name repeats its parent's, with "-" between the parts, and the
// pod UID's dashes become underscores.
func (l Layout) systemdDir(qos, uid string, rt Runtime, id string) string {
	base := strings.TrimSuffix(path.Base(l.Kubepods), ".slice") // "kubepods", "kubelet-kubepods"
	dir := l.Kubepods
	if qos != "" {
		base += "-" + qos
		dir = path.Join(dir, base+".slice")
	}
	dir = path.Join(dir, base+"-pod"+strings.ReplaceAll(uid, "-", "_")+".slice")
	scope := map[Runtime]string{Containerd: "cri-containerd-", CRIO: "crio-", Docker: "docker-"}[rt]
	return path.Join(dir, scope+id+".scope")
}

// Detect reads the layout from the cgroup tree fsys (the host's
// /sys/fs/cgroup): the version from the root's files, the kubelet's pods
// cgroup and so its driver from the directories at most two levels down.
func Detect(fsys fs.FS) (Layout, error) {
	var l Layout
	if _, err := fs.Stat(fsys, "cgroup.controllers"); err == nil {
		l.Version = V2
	} else {
		l.Version = V1
		var err error
		if l.CPU, l.CPUAcct, l.Memory, err = v1Hierarchies(fsys); err != nil {
			return Layout{}, err
		}
	}
	kp, err := findKubepods(fsys, l.CPU)
	if err != nil {
		return Layout{}, err
	}
	l.Kubepods, l.Driver = kp, Cgroupfs
	if strings.HasSuffix(kp, ".slice") {
		l.Driver = Systemd
	}
	return l, nil
}

// v1Hierarchies finds the cpu, cpuacct and memory hierarchies of a v1 tree.
// A hierarchy is a mounted cgroup, with a cgroup.procs at its top: a host
// whose cpu and cpuacct controllers are mounted apart leaves kind's nodes
// an empty cpu,cpuacct directory beside them, which is not one.
func v1Hierarchies(fsys fs.FS) (cpu, cpuacct, memory string, err error) {
	first := func(names ...string) string {
		for _, n := range names {
			if fi, err := fs.Stat(fsys, path.Join(n, "cgroup.procs")); err == nil && !fi.IsDir() {
				return n
			}
		}
		return ""
	}
	cpu = first("cpu,cpuacct", "cpuacct,cpu", "cpu")
	cpuacct = first("cpu,cpuacct", "cpuacct,cpu", "cpuacct")
	memory = first("memory")
	if cpu == "" || cpuacct == "" || memory == "" {
		return "", "", "", fmt.Errorf("unrecognised cgroup tree: no cgroup.controllers (v2) and not the cpu, cpuacct and memory hierarchies of v1; its root holds %s", listing(fsys, "."))
	}
	return cpu, cpuacct, memory, nil
}

// findKubepods finds the kubelet's pods cgroup in hierarchy h: a directory
// "kubepods" (cgroupfs) or "…kubepods.slice" (systemd) at the top or one
// level down (a kubelet --cgroup-root).
func findKubepods(fsys fs.FS, h string) (string, error) {
	root := path.Join(".", h)
	top, err := fs.ReadDir(fsys, root)
	if err != nil {
		return "", fmt.Errorf("read the cgroup tree at %s: %w", root, err)
	}
	var found []string
	for _, e := range top {
		if e.IsDir() && isKubepods(e.Name()) {
			found = append(found, e.Name())
		}
	}
	for _, e := range top {
		if !e.IsDir() || len(found) > 0 {
			continue
		}
		sub, err := fs.ReadDir(fsys, path.Join(root, e.Name()))
		if err != nil {
			continue // a cgroup gone during the walk
		}
		for _, s := range sub {
			if s.IsDir() && isKubepods(s.Name()) {
				found = append(found, path.Join(e.Name(), s.Name()))
			}
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("unrecognised cgroup layout: no kubepods cgroup (kubepods, or a systemd …kubepods.slice) in the top two levels of %s, whose top holds %s", root, listing(fsys, root))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("unrecognised cgroup layout: several kubepods cgroups in %s: %s", root, strings.Join(found, ", "))
}

func isKubepods(name string) bool {
	return name == "kubepods" || name == "kubepods.slice" || strings.HasSuffix(name, "-kubepods.slice")
}

// listing names the subdirectories of dir, for an error, at most 20.
func listing(fsys fs.FS, dir string) string {
	es, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return fmt.Sprintf("nothing readable (%v)", err)
	}
	var names []string
	for _, e := range es {
		if e.IsDir() {
			names = append(names, e.Name()+"/")
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no directories"
	}
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("… (%d more)", len(names)-20))
	}
	return "[" + strings.Join(names, " ") + "]"
}

// NotFoundError reports a container whose cgroup is not where the layout
// puts it. Found is the deepest existing directory on the way, and Holds
// what it holds: either the container is gone, or its cgroup is named in
// a way this package does not recognise.
type NotFoundError struct {
	// Container is the container looked for.
	Container Container
	// Want is the path the layout gives, Found the deepest existing
	// directory on it, both relative to the tree's root.
	Want, Found string
	// Holds describes Found's subdirectories, e.g. "[a.slice/ b.scope/]".
	Holds string
}

// Error names the path looked for and what was found on it.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%v: no cgroup at %s; the deepest directory on that path is %s, which holds %s: the container is gone, or its cgroup layout is not one this reader recognises",
		e.Container, e.Want, e.Found, e.Holds)
}

// Find returns the container's cgroup in the CPU hierarchy, relative to the
// tree's root, after checking it exists; else a *NotFoundError.
func (l Layout) Find(fsys fs.FS, c Container) (string, error) {
	dir, err := l.Dir(c)
	if err != nil {
		return "", err
	}
	want := path.Join(".", l.CPU, dir)
	if fi, err := fs.Stat(fsys, want); err == nil && fi.IsDir() {
		return want, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%v: stat %s: %w", c, want, err)
	}
	found := want
	for found != "." {
		found = path.Dir(found)
		if fi, err := fs.Stat(fsys, found); err == nil && fi.IsDir() {
			break
		}
	}
	return "", &NotFoundError{Container: c, Want: want, Found: found, Holds: listing(fsys, found)}
}
