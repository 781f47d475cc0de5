package local

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/arms"
	"github.com/meshbench/meshbench/framework/testbed"
)

// armDifferences are the only ways the reference's processes may differ
// from the candidate's in an A/A gate, each replaced by a placeholder
// before the two are compared: the arm's name (in process names, pods,
// configuration files and logs), its listeners' ports (each arm has its
// own, drawn the same way) and the admin socket named by a digest of the
// configuration file's stem, which holds the arm's name.
var armDifferences = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b(reference|candidate)\b`), "ARM"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`admin-[0-9a-f]+\.sock`), "admin-DIGEST.sock"},
}

func symmetric(s string) string {
	for _, d := range armDifferences {
		s = d.re.ReplaceAllString(s, d.with)
	}
	return s
}

// procView is a process as the comparison sees it: its command line, its
// environment and every file of the run directory it names, with the
// declared differences replaced.
type procView struct {
	Role, Pod string
	Argv, Env []string
	Files     map[string]string
}

func viewOf(t *testing.T, dir string, p *process) procView {
	v := procView{Role: string(p.role), Pod: symmetric(p.pod), Files: map[string]string{}}
	for _, a := range p.argv {
		v.Argv = append(v.Argv, symmetric(a))
		if strings.HasPrefix(a, dir+string(filepath.Separator)) && !strings.HasSuffix(a, ".sock") {
			data, err := os.ReadFile(a)
			require.NoError(t, err, "%s names %s", p.name, a)
			v.Files[symmetric(a)] = symmetric(string(data))
		}
	}
	for _, e := range p.env {
		v.Env = append(v.Env, symmetric(e))
	}
	return v
}

// TestArmsAreDeployedSymmetrically: in an A/A gate the reference and the
// candidate run the same binaries with the same configuration, their
// processes named, ported and configured alike: they differ only in the
// declared ways (armDifferences), so that neither arm is favoured by how
// it was deployed. The duet mode runs them at once and relies on it.
func TestArmsAreDeployedSymmetrically(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and Caddy; run without -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tg, err := New(ctx, Options{Candidate: &arms.Spec{Proxy: "caddy"}, Logf: t.Logf})
	require.NoError(t, err)
	defer func() { assert.NoError(t, tg.Close(ctx)) }()
	require.Equal(t, tg.meshes[0].bin, tg.meshes[1].bin, "the same sidecar binary")

	byArm := map[testbed.Arm]map[string]procView{testbed.Reference: {}, testbed.Candidate: {}}
	ports := map[string]testbed.Arm{}
	tg.sup.mu.Lock()
	procs := append([]*process(nil), tg.sup.procs...)
	tg.sup.mu.Unlock()
	for _, p := range procs {
		arm, rest, _ := strings.Cut(p.name, "/")
		if views, ok := byArm[testbed.Arm(arm)]; ok {
			views[rest] = viewOf(t, tg.dir, p)
			for _, a := range p.addrs {
				assert.NotContains(t, ports, a, "%s: each arm listens on its own ports", p.name)
				ports[a] = testbed.Arm(arm)
			}
		}
	}
	require.NotEmpty(t, byArm[testbed.Reference])
	assert.Len(t, byArm[testbed.Candidate], len(byArm[testbed.Reference]), "as many processes in each arm")
	for name, ref := range byArm[testbed.Reference] {
		cand, ok := byArm[testbed.Candidate][name]
		if assert.True(t, ok, "the candidate has %s too", name) {
			assert.Equal(t, ref, cand, "%s: the arms differ only in the declared ways", name)
		}
	}
}
