package local

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SidecarRef names a sidecar proxy and, optionally, the version to build,
// e.g. "caddy" or "caddy@v2.10.2" (arms.Spec's Proxy and Version).
type SidecarRef struct {
	Name string // a registered sidecar, e.g. "caddy"
	// Version is a Go module version such as "v2.10.2", or "" for the
	// default (for caddy, this module's go.mod tool dependency).
	Version string
}

// String returns the reference as written: "caddy" or "caddy@v2.10.2".
func (r SidecarRef) String() string {
	if r.Version == "" {
		return r.Name
	}
	return r.Name + "@" + r.Version
}

// versionedModules are the sidecars that can be built at any version, with
// the Go module and main package to build.
var versionedModules = map[string]struct{ module, pkg string }{
	"caddy": {"github.com/caddyserver/caddy/v2", caddyPkg},
}

// SidecarFor returns the proxy that ref names: the registered sidecar, or,
// with a version, one that builds that version from the Go module proxy.
func SidecarFor(ref SidecarRef) (Sidecar, error) {
	sc, err := lookSidecar(ref.Name)
	if err != nil || ref.Version == "" {
		return sc, err
	}
	m, ok := versionedModules[ref.Name]
	if !ok {
		return nil, fmt.Errorf("sidecar %s: %s cannot be built at a version", ref, ref.Name)
	}
	return versioned{Sidecar: sc, ref: ref, module: m.module, pkg: m.pkg}, nil
}

// BuildSidecar builds the proxy ref names into the binary cache (dir, or
// $MESHBENCH_CACHE/bin, or meshbench/bin under the user cache directory)
// and returns its path, so that a run can fail on a version that does not
// build before anything is measured. logf receives progress; nil is quiet.
func BuildSidecar(ctx context.Context, ref SidecarRef, dir string, logf func(string, ...any)) (string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sc, err := SidecarFor(ref)
	if err != nil {
		return "", err
	}
	b, err := newBuilder(dir, logf)
	if err != nil {
		return "", err
	}
	return sc.Binary(ctx, b)
}

// versioned is a sidecar built at a given module version. Everything but
// the binary (config, command, version) is the plain sidecar's.
type versioned struct {
	Sidecar
	ref         SidecarRef
	module, pkg string
}

// Name is the reference as written, e.g. "caddy@v2.10.2" (Sidecar).
func (v versioned) Name() string { return v.ref.String() }

// unwrap is the plain sidecar, for its optional interfaces (permissive,
// variants).
func (v versioned) unwrap() Sidecar { return v.Sidecar }

// plain returns sc without a version wrapper.
func plain(sc Sidecar) Sidecar {
	if v, ok := sc.(versioned); ok {
		return v.unwrap()
	}
	return sc
}

// Binary builds the proxy's module at the reference's version into the
// binary cache, or reuses that build, and returns its path (Sidecar).
func (v versioned) Binary(ctx context.Context, b *builder) (string, error) {
	return b.buildModule(ctx, v.ref.Name, v.module, v.ref.Version, v.pkg)
}

// buildModule builds main package pkg of module@version into
// dir/name-version and returns its path. It reuses a binary whose build
// info already says module@version and the current Go version. Otherwise it
// generates a wrapper module requiring module@version in a fresh directory
// under the cache (so that nothing is written to this repository and a
// module's own replace lines do not matter), resolves it with `go mod tidy`
// from the module proxy, checks the version did not move, and builds; the
// binary is renamed into place, so two runs building at once do not clash.
func (b *builder) buildModule(ctx context.Context, name, module, version, pkg string) (string, error) {
	out := filepath.Join(b.dir, name+"-"+version)
	goVersion, err := goEnv(ctx, "GOVERSION")
	if err != nil {
		return "", err
	}
	if built(out, module, version, goVersion) {
		return out, nil
	}
	start := time.Now()
	b.logf("building %s@%s from the Go module proxy (a few minutes the first time)", name, version)
	src, err := os.MkdirTemp(filepath.Dir(b.dir), "src-"+name+"-"+version+"-")
	if err != nil {
		return "", fmt.Errorf("build %s@%s: %w", name, version, err)
	}
	defer os.RemoveAll(src)
	tmp := filepath.Join(src, name)
	steps := [][]string{
		{"mod", "init", "meshbench.local/sidecar/" + name},
		{"mod", "edit", "-require=" + module + "@" + version, "-tool=" + pkg},
		{"mod", "tidy"},
		// no DWARF: nothing reads it, and without it a cold build
		// takes 7 % less CPU (cmd/mbloadgen, 2026-12-05; hack/offline's
		// GO_NO_DWARF)
		{"build", "-trimpath", "-gcflags=all=-dwarf=false", "-o", tmp, pkg},
	}
	for i, args := range steps {
		if err := goCmd(ctx, src, args...); err != nil {
			return "", fmt.Errorf("build %s@%s: %w", name, version, err)
		}
		if i == 2 { // tidy must not have moved the version we asked for
			if got, err := goCmdOutput(ctx, src, "list", "-m", "-f", "{{.Version}}", module); err != nil {
				return "", fmt.Errorf("build %s@%s: %w", name, version, err)
			} else if got != version {
				return "", fmt.Errorf("build %s@%s: %s resolved to %s, not %s", name, version, module, got, version)
			}
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("build %s@%s: %w", name, version, err)
	}
	b.logf("built %s@%s in %v (cached in %s)", name, version, time.Since(start).Round(time.Second), out)
	return out, nil
}

// built reports whether bin exists and was built from module@version with
// Go goVersion. A main package built from a dependency of the wrapper
// module records that dependency as the main module.
func built(bin, module, version, goVersion string) bool {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil || bi.GoVersion != goVersion {
		return false
	}
	if bi.Main.Path == module {
		return bi.Main.Version == version && bi.Main.Replace == nil
	}
	for _, d := range bi.Deps {
		if d.Path == module {
			return d.Version == version && d.Replace == nil
		}
	}
	return false
}

// goCmd runs the go command in dir with the module settings a wrapper
// module needs: modules resolved and go.mod updated as needed, no workspace.
func goCmd(ctx context.Context, dir string, args ...string) error {
	_, err := goCmdOutput(ctx, dir, args...)
	return err
}

func goCmdOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// goEnv returns one value of `go env`.
func goEnv(ctx context.Context, key string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s (is go on PATH?): %w", key, err)
	}
	return strings.TrimSpace(string(out)), nil
}
