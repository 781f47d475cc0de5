package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/meshinstall"
	"github.com/meshbench/meshbench/framework/testbed"
)

// installState is the mesh's Helm installer when the run installed the
// mesh (or the candidate revision), nil otherwise; Close uninstalls what
// it installed. helmMu guards it.
type installState struct {
	helmMu sync.Mutex
	helm   *meshinstall.Helm
}

// meshInstaller finds the mesh and the candidate revision in the cluster
// and, when the run installs the mesh (Options.InstallMesh), installs
// them with Helm through restCfg and c, with the target's options; the
// installer it made is its installState.
type meshInstaller struct {
	*installState
	c       kubernetes.Interface
	restCfg *rest.Config
	o       *Options
	now     func() time.Time
	// candidate is the candidate revision's adapter, nil without one;
	// candidateNS the candidate arm's namespace.
	candidate   mesh.Mesh
	candidateNS string
}

// installer is the target's mesh installer.
func (t *Target) installer() meshInstaller {
	return meshInstaller{installState: &t.installState, c: t.c, restCfg: t.restCfg, o: &t.o, now: t.now,
		candidate: t.gate().candidateMesh(), candidateNS: t.ns(string(testbed.Candidate))}
}

func (mi meshInstaller) detect(ctx context.Context) (mesh.Info, error) {
	m := mi.o.Mesh
	info, err := m.Detect(ctx, mi.c)
	var ni *mesh.NotInstalledError
	if errors.As(err, &ni) && mi.o.InstallMesh {
		inst, ok := m.(mesh.Installer)
		if !ok {
			return info, fmt.Errorf("kube target: %w; the %s adapter cannot install it, install it first", err, m.Name())
		}
		charts, err := inst.Charts(mi.o.Install)
		if err != nil {
			return info, fmt.Errorf("kube target: install %s: %w", m.Name(), err)
		}
		start := mi.now()
		mi.o.Logf("kube target: %s is not installed (%s): installing it from %d Helm chart(s)", m.Name(), ni.Looked, len(charts))
		if err := meshinstall.Prepare(ctx, mi.c, m, mi.o.Install, mi.o.Logf); err != nil {
			return info, fmt.Errorf("kube target: %w", err)
		}
		mi.helmMu.Lock()
		mi.helm = mi.newHelm()
		h := mi.helm
		mi.helmMu.Unlock()
		if err := h.Install(ctx, charts); err != nil {
			return info, fmt.Errorf("kube target: install %s: %w", m.Name(), err)
		}
		mi.o.Logf("kube target: %s installed in %v", m.Name(), mi.now().Sub(start).Round(time.Second))
		info, err = m.Detect(ctx, mi.c)
		if err != nil {
			return info, fmt.Errorf("kube target: %s installed but not detected: %w", m.Name(), err)
		}
		return info, nil
	}
	if err != nil {
		return info, fmt.Errorf("kube target: %w", err)
	}
	return info, nil
}

// Installed lists the Helm releases the target installed (and uninstalls
// on Close); empty when the mesh was already there.
func (t *Target) Installed() []meshinstall.Installed {
	t.helmMu.Lock()
	defer t.helmMu.Unlock()
	if t.helm == nil {
		return nil
	}
	return t.helm.Installed()
}

// newHelm is the installer of the mesh, with the target's options.
func (mi meshInstaller) newHelm() *meshinstall.Helm {
	return meshinstall.NewHelm(mi.restCfg, mi.c, meshinstall.HelmOptions{ChartDir: mi.o.ChartDir, Timeout: mi.o.InstallTimeout,
		Grace: mi.o.UnschedulableGrace, Logf: mi.o.Logf, Words: mi.o.Words})
}

// detectCandidate finds the candidate revision's istiod before anything is
// deployed, installing it when the run installs the mesh
// (Options.InstallMesh); a missing revision is an error that says how to
// install it. It returns the candidate's istiod as detected, the zero
// Info without a revision candidate.
func (mi meshInstaller) detectCandidate(ctx context.Context) (mesh.Info, error) {
	cm := mi.candidate
	if cm == nil {
		return mesh.Info{}, nil
	}
	c, w := mi.o.Candidate, mi.o.Words
	info, err := cm.Detect(ctx, mi.c)
	var ni *mesh.NotInstalledError
	switch {
	case errors.As(err, &ni) && mi.o.InstallMesh:
		info, err = mi.installRevision(ctx, cm, ni)
	case errors.As(err, &ni):
		ns := cmp.Or(info.Namespace, "istio-system")
		return info, fmt.Errorf("kube target: %s: %w; the candidate arm's namespace %s would be labelled %s=%s: install that revision first "+
			"(istioctl install --revision=%s, or helm install istiod-%s istio/istiod -n %s --set revision=%s) or pass %s",
			w.Say(testbed.SettingCandidate, c.String()), err, mi.candidateNS, "istio.io/rev", c.Revision, c.Revision, c.Revision, ns, c.Revision,
			w.Say(testbed.SettingMeshInstall, ""))
	}
	if err != nil {
		return info, fmt.Errorf("kube target: %s: %w", w.Say(testbed.SettingCandidate, c.String()), err)
	}
	return info, nil
}

// installRevision installs the candidate revision's istiod (the mesh's
// charts but base, which the reference's installation holds), of the
// candidate's release (Options.CandidateInstall and CandidateChartDir:
// by default the version the run installs), and detects it again. The
// installer uninstalls it on Close, before the reference's releases.
func (mi meshInstaller) installRevision(ctx context.Context, cm mesh.Mesh, ni *mesh.NotInstalledError) (mesh.Info, error) {
	o := mi.o.Install
	if ci := mi.o.CandidateInstall; ci != nil {
		o = *ci
	}
	charts, err := meshinstall.RevisionCharts(cm, o, mi.o.CandidateChartDir)
	if err != nil {
		return mesh.Info{}, fmt.Errorf("install %s revision %s: %w", cm.Name(), mi.o.Candidate.Revision, err)
	}
	start := mi.now()
	mi.o.Logf("kube target: %s revision %s is not installed (%s): installing it from %d Helm chart(s), release %s", cm.Name(), mi.o.Candidate.Revision, ni.Looked, len(charts),
		cmp.Or(o.Version, "the adapter's default"))
	mi.helmMu.Lock()
	if mi.helm == nil {
		mi.helm = mi.newHelm()
	}
	h := mi.helm
	mi.helmMu.Unlock()
	if err := h.Install(ctx, charts); err != nil {
		return mesh.Info{}, fmt.Errorf("install %s revision %s: %w", cm.Name(), mi.o.Candidate.Revision, err)
	}
	mi.o.Logf("kube target: %s revision %s installed in %v", cm.Name(), mi.o.Candidate.Revision, mi.now().Sub(start).Round(time.Second))
	info, err := cm.Detect(ctx, mi.c)
	if err != nil {
		return info, fmt.Errorf("%s revision %s installed but not detected: %w", cm.Name(), mi.o.Candidate.Revision, err)
	}
	return info, nil
}
