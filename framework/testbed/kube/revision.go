package kube

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/meshbench/meshbench/framework/mesh"
	"github.com/meshbench/meshbench/framework/testbed"
)

// An Istio canary upgrade as an upgrade gate (Options.Candidate with a
// Revision): the reference arm's namespace is injected by the reference
// revision (the mesh adapter's, mesh.WithRevision, or the default
// injector), the candidate
// arm's by revision NAME, both istiods running side by side in the control
// plane's namespace. Each arm is verified against its own revision.

// meshOf is the mesh adapter of arm a: the candidate revision's for the
// candidate arm of a revision gate, else the target's.
func (t *Target) meshOf(a *arm) mesh.Mesh {
	return a.meshOr(t.o.Mesh)
}

// meshOr is a's own mesh adapter, def when it has none (or a is nil).
func (a *arm) meshOr(def mesh.Mesh) mesh.Mesh {
	if a != nil && a.mesh != nil {
		return a.mesh
	}
	return def
}

// candidateMesh is the adapter of the candidate revision; nil without a
// revision candidate.
func (g upgradeGate) candidateMesh() mesh.Mesh {
	c := g.cand
	if c == nil || c.Revision == "" {
		return nil
	}
	rm, ok := g.mesh.(mesh.Revisioned)
	if !ok {
		return nil // refused by Options.normalize
	}
	return rm.AtRevision(c.Revision)
}

// revisionsApart checks, in a revision gate whose reference is the
// default injector, that the reference arm's sidecars do not come from the
// candidate revision (a default tag pointing at it would make the gate
// compare the candidate with itself). A reference with a revision is
// checked by its adapter's Verify.
// v is the reference arm's verification.
func (g upgradeGate) revisionsApart(v mesh.Verification) error {
	c := g.cand
	rm, ok := g.mesh.(mesh.Revisioned)
	if c == nil || c.Revision == "" || !ok || rm.Revision() != "" {
		return nil
	}
	var pods []string
	for _, p := range v.Pods {
		if p.Revision == c.Revision {
			pods = append(pods, p.Pod)
		}
	}
	if len(pods) == 0 {
		return nil
	}
	return fmt.Errorf("reference arm: the sidecars of pods %s were injected by Istio revision %s, the candidate's: the default injector (istio-injection=enabled) is that revision, "+
		"so the gate would compare the candidate with itself; name the reference's revision with %s", strings.Join(pods, ", "), c.Revision, g.words.Say(testbed.SettingMeshRevision, ""))
}

// revisionsConfig describes the arms of a revision gate for the
// environment: each arm's revision and the version of its istiod, as
// refInfo and cand say.
func (g upgradeGate) revisionsConfig(cfg map[string]string, refInfo, cand mesh.Info) {
	ref := ""
	if rm, ok := g.mesh.(mesh.Revisioned); ok {
		ref = rm.Revision()
	}
	for _, x := range []struct {
		arm  testbed.Arm
		rev  string
		info mesh.Info
	}{{testbed.Reference, ref, refInfo}, {testbed.Candidate, g.cand.Revision, cand}} {
		key := "arm." + string(x.arm)
		what := "revision " + x.rev
		if x.rev == "" {
			what = "the default injector (istio-injection=enabled)"
		}
		cfg[key] = fmt.Sprintf("%s %s, version %s", x.info.Mesh, what, cmp.Or(x.info.Version, "unknown"))
		cfg[key+".revision"] = x.rev
		cfg[key+".version"] = x.info.Version
		var cps []string
		for _, comp := range x.info.Components {
			cps = append(cps, fmt.Sprintf("%s/%s (%s)", comp.Namespace, comp.Name, comp.Image))
		}
		cfg[key+".controlPlane"] = strings.Join(cps, ", ")
	}
}
