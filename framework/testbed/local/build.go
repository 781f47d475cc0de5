package local

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// builder builds this module's commands and go.mod tools with the go
// command, into a cache directory, so a second run costs only the go build
// cache lookup.
type builder struct {
	dir  string
	logf func(format string, args ...any)
}

// newBuilder uses dir, or $MESHBENCH_CACHE/bin, or the user cache dir.
func newBuilder(dir string, logf func(string, ...any)) (*builder, error) {
	if dir == "" {
		if c := os.Getenv("MESHBENCH_CACHE"); c != "" {
			dir = filepath.Join(c, "bin")
		} else {
			uc, err := os.UserCacheDir()
			if err != nil {
				return nil, fmt.Errorf("find a cache directory (set MESHBENCH_CACHE): %w", err)
			}
			dir = filepath.Join(uc, "meshbench", "bin")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create binary cache %s: %w", dir, err)
	}
	return &builder{dir: dir, logf: logf}, nil
}

// build runs `go build -o dir/name pkg` from the module root and returns the
// binary's path.
func (b *builder) build(ctx context.Context, name, pkg string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	// One binary per checkout: two checkouts (or worktrees) sharing the
	// cache must not run each other's builds.
	sum := sha256.Sum256([]byte(root))
	out := filepath.Join(b.dir, fmt.Sprintf("%s-%x", name, sum[:4]))
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	if d := time.Since(start); d > 2*time.Second {
		b.logf("built %s in %v (cached for next time)", name, d.Round(time.Second))
	}
	return out, nil
}

// moduleRoot finds the meshbench module directory with `go env GOMOD`.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the meshbench module (is go on PATH?): %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the meshbench module: run from its checkout")
	}
	return filepath.Dir(mod), nil
}
