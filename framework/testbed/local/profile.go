package local

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/framework/measure"
	"github.com/meshbench/meshbench/framework/testbed"
)

// pprofEndpoint is a sidecar that serves Go's net/http/pprof on an admin
// unix socket when its spec names one (SidecarSpec.Admin): Caddy's admin
// endpoint serves /debug/pprof/.
type pprofEndpoint interface{ pprofEndpoint() }

var _ testbed.Profiler = (*Target)(nil)

// CanProfile implements testbed.Profiler: every meshed arm's sidecar must
// serve pprof, and the target must have turned its admin endpoint on,
// which it does only in an upgrade gate (Options.Candidate).
func (t *Target) CanProfile() error {
	for _, m := range t.meshes {
		if _, ok := plain(m.sc).(pprofEndpoint); !ok {
			return fmt.Errorf("%s is not a Go program with a pprof endpoint", m.sc.Name())
		}
	}
	if !t.profiling() {
		return fmt.Errorf("the sidecars' admin endpoints are on only in an upgrade gate (%s)", t.o.Words.Say(testbed.SettingCandidate, ""))
	}
	return nil
}

// profiling says whether the sidecars get an admin socket to profile them
// through: in an upgrade gate, both arms alike, idle until a profile is
// asked for.
func (t *Target) profiling() bool { return t.o.Candidate != nil }

// adminSocket is a sidecar's admin socket in the run directory, named by
// a digest of its file stem: a unix socket's path must stay short.
func (t *Target) adminSocket(s SidecarSpec) string {
	sum := sha256.Sum256([]byte(s.stem()))
	return filepath.Join(t.dir, fmt.Sprintf("admin-%x.sock", sum[:6]))
}

// profileSidecars starts a CPU profile of every sidecar in procs that has
// an admin socket, each over seconds, and returns a function that waits
// for them all.
func profileSidecars(ctx context.Context, procs []*process, seconds int) func() ([]testbed.CPUProfile, error) {
	type result struct {
		p   testbed.CPUProfile
		err error
	}
	var chans []chan result
	for _, p := range procs {
		if p.role != measure.RoleSidecar || p.admin == "" {
			continue
		}
		ch := make(chan result, 1)
		chans = append(chans, ch)
		go func() {
			data, err := fetchProfile(ctx, p.admin, seconds)
			ch <- result{testbed.CPUProfile{Process: p.name, Data: data}, err}
		}()
	}
	return func() ([]testbed.CPUProfile, error) {
		var out []testbed.CPUProfile
		var errs []error
		for _, ch := range chans {
			r := <-ch
			if r.err != nil {
				errs = append(errs, fmt.Errorf("profile %s: %w", r.p.Process, r.err))
				continue
			}
			out = append(out, r.p)
		}
		return out, errors.Join(errs...)
	}
}

// fetchProfile asks the pprof endpoint on the unix socket sock for a CPU
// profile of seconds, and returns it as served (gzipped protobuf).
func fetchProfile(ctx context.Context, sock string, seconds int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+30*time.Second)
	defer cancel()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	url := fmt.Sprintf("http://admin/debug/pprof/profile?seconds=%d", seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s on %s: %w", url, sock, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the profile from %s: %w", sock, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s on %s: %s: %s", url, sock, resp.Status, data)
	}
	return data, nil
}

// profileSeconds is a profile's length for a measured window of d: whole
// seconds (what pprof takes), at least one.
func profileSeconds(d time.Duration) int {
	return max(1, int(math.Round(d.Seconds())))
}
